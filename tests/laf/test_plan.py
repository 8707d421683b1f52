"""labelfree.laf.plan: what the workflow analyses for a `laf` config, decided at parse time."""

from __future__ import annotations

import pytest

from labelfree.config import ConfigError
from labelfree.laf.plan import plan

ZOOS = ["tight", "spread", "one", "unlabelled"]
LABELLED = {"tight": ["id"], "spread": ["id"], "one": ["id"], "unlabelled": []}
N_MODELS = {"tight": 20, "spread": 20, "one": 1, "unlabelled": 5}


def _laf(zoos=(), clones=()):
    return {"zoos": list(zoos), "clones": list(clones)}


def _clone(name="clone", base="tight", source="spread"):
    return {"name": name, "base": base, "source": source, "accuracy": 0.6, "copies": 4,
            "base_models": 3}


def test_zoos_without_labels_or_with_one_model_are_left_out_saying_why():
    p = plan(_laf(clones=[_clone()]), ZOOS, LABELLED, N_MODELS)
    assert p.zoos == ["tight", "spread"]
    assert p.analysed == ["tight", "spread", "clone"]
    assert set(p.skips) == {"one", "unlabelled"}
    assert "has 1 model(s)" in p.skips["one"] and "no labelled test set" in p.skips["unlabelled"]
    assert p.skip is None
    assert p.notes() == [f"labelfree: laf skips {z}: {p.skips[z]}" for z in ("one", "unlabelled")]


def test_a_clone_control_built_from_a_skipped_zoo_is_skipped_too():
    p = plan(_laf(zoos=["tight", "one"], clones=[_clone(source="one")]), ZOOS, LABELLED, N_MODELS)
    assert p.zoos == ["tight"] and p.clones == {}
    assert p.skips["clone"] == "clone control 'clone' is built from ['one']"


def test_nothing_left_skips_the_study_without_notes():
    p = plan(_laf(zoos=["one", "unlabelled"]), ZOOS, LABELLED, N_MODELS)
    assert p.zoos == [] and p.skip == "; ".join(p.skips.values())
    assert p.notes() == []


@pytest.mark.parametrize(
    ("laf", "message"),
    [
        (_laf(zoos=["tihgt"]), "laf.zoos lists 'tihgt', not a configured zoo"),
        (_laf(clones=[_clone(base="nope")]), "laf.clones[clone].base = 'nope' is not a configured"),
        (_laf(clones=[_clone(name="tight")]), "laf.clones name 'tight' is already a zoo"),
    ],
)
def test_names_that_are_not_zoos_are_config_errors(laf, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        plan(laf, ZOOS, LABELLED, N_MODELS)
