"""laf's plan: the zoos it can rank against labels (two or more models and a labelled set)."""

from __future__ import annotations

from labelfree.laf.plan import labelled_zoos


def test_labelled_zoos():
    keep, skip = labelled_zoos(["a", "b", "c", "d"], {"a": ["id"], "b": [], "c": ["x"], "d": ["id"]},
                               {"a": 3, "b": 3, "c": 2, "d": 1}, "laf")
    assert keep == ["a", "c"] and list(skip) == ["b", "d"]
    assert "no labelled test set" in skip["b"] and "has 1 model(s)" in skip["d"]
