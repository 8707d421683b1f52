"""The scorecard's plan: which zoos it scores, and one coverage row per zoo."""

from __future__ import annotations

from labelfree.scorecard.plan import ONE_MODEL_PARTS, scorecard_coverage, scorecard_zoos


def test_scorecard_zoos_score_every_zoo_with_a_labelled_set_and_every_zoo_gets_a_row():
    """The scorecard for every zoo: every zoo with a model and a labelled scored set is scored
    (a source-only zoo too: its sanity rows; a one-model zoo on estimation only, so a one-model
    zoo skipped again fails here); the coverage table lists every zoo with its reason."""
    scored = {"a": ["id", "natural-thick"], "b": ["id"], "c": [], "d": ["id", "x"], "e": ["x"],
              "f": ["id"]}
    n = {"a": 3, "b": 3, "c": 2, "d": 1, "e": 2, "f": 0}
    keep, skip = scorecard_zoos(list(scored), scored, n, "id")
    assert keep == ["a", "b", "d", "e"] and sorted(skip) == ["c", "f"]
    assert "no labelled test set" in skip["c"] and "no model" in skip["f"]
    rows = scorecard_coverage(list(scored), scored, n, skip)
    assert [r["zoo"] for r in rows] == list(scored)
    assert [r["scorecard"] for r in rows] == ["yes", "yes", "no", "estimation only", "yes", "no"]
    assert all(bool(r["reason"]) == (r["scorecard"] != "yes") for r in rows)
    assert rows[3]["reason"] == ONE_MODEL_PARTS and "not applicable" in ONE_MODEL_PARTS
    assert rows[0]["scored_testsets"] == 2 and rows[3]["scored_testsets"] == 2
    assert rows[2]["scored_testsets"] == 0 and rows[3]["models"] == 1
