"""Which studies run on the configured zoos (issue 14 item 4; labelfree.studyplan): a study
that cannot run says why in one line instead of stopping the run."""

from __future__ import annotations

import pytest
import yaml

from labelfree.config import validate_config
from labelfree.studyplan import (
    ONE_MODEL_PARTS,
    fixed_zoo_skips,
    labelled_zoos,
    scorecard_coverage,
    scorecard_zoos,
)


def _cfg(repo_root, user):
    return validate_config(user, repo_root / "config" / "schema.yaml")


ONE_ZOO = {"datasets": {"digits": {"source": "digits"}},
           "zoos": {"mine": {"dataset": "digits", "testsets": ["id"],
                             "grid": [{"arch": "mlp"}]}}}


@pytest.mark.parametrize(
    "name", ["config/config.yaml", ".test/config/config.yaml", "config/small-scale.yaml"]
)
def test_shipped_configs_skip_nothing(repo_root, name):
    user = yaml.safe_load((repo_root / name).read_text())
    assert fixed_zoo_skips(_cfg(repo_root, user), user, set()) == {}


def test_a_clean_only_zoo_with_study_keys_omitted(repo_root):
    """The studies' defaults name zoos the user does not have: each says so, none errs."""
    skips = fixed_zoo_skips(_cfg(repo_root, ONE_ZOO), ONE_ZOO, set())
    assert set(skips) == {"pace", "syp", "alphatrim", "metamorphic"}
    assert "its zoo 'pace_digits' (the default of pace.zoo) is not configured" in skips["pace"]
    assert "its zoo 'syp' (the default of syp.zoo)" in skips["syp"]
    assert "no experiments" in skips["alphatrim"] and "no zoos" in skips["metamorphic"]
    assert all("\n" not in r for r in skips.values())


def test_a_study_pointed_at_a_clean_only_zoo_names_what_it_lacks(repo_root):
    user = {**ONE_ZOO, "pace": {"zoo": "mine"}, "syp": {"zoo": "mine"}}
    skips = fixed_zoo_skips(_cfg(repo_root, user), user, set())
    assert "test sets ['pace_mutated', 'pace_generated']" in skips["pace"]
    assert "features ['first', 'penultimate']" in skips["pace"]
    assert "test sets ['syp_ref', 'syp_meta', 'syp_val', 'syp_rot']" in skips["syp"]
    # with everything PACE needs listed, PACE runs
    user["zoos"] = {"mine": {**ONE_ZOO["zoos"]["mine"], "features": ["first", "penultimate"],
                             "testsets": ["id", "pace_mutated", "pace_generated"]}}
    assert "pace" not in fixed_zoo_skips(_cfg(repo_root, user), user, set())


def test_an_explicit_zoo_that_does_not_exist_is_left_to_the_study_error(repo_root):
    user = {**ONE_ZOO, "pace": {"zoo": "mien"}}  # a typo: pace.smk raises its own error
    assert "pace" not in fixed_zoo_skips(_cfg(repo_root, user), user, set())


def test_prediction_zoos_skip_the_studies_that_need_weights(repo_root):
    user = {"zoos": {"p": {"predictions": "folder"}}, "pace": {"zoo": "p"},
            "syp": {"zoo": "p"}, "metamorphic": {"zoos": {"p": {"role": "unbiased",
                                                                "main": "rho09"}}},
            "alphatrim": {"experiments": {"e": {"data": {"source": "backbone", "zoo": "p",
                                                         "model": "m"}}}}}
    skips = fixed_zoo_skips(_cfg(repo_root, user), user, {"p"})
    assert set(skips) == {"pace", "syp", "alphatrim", "metamorphic"}
    assert all("prediction zoo" in r for r in skips.values()), skips


def test_disabled_studies_are_not_reported(repo_root):
    user = {**ONE_ZOO, **{s: {"enabled": False} for s in ("pace", "syp", "alphatrim",
                                                           "metamorphic")}}
    assert fixed_zoo_skips(_cfg(repo_root, user), user, set()) == {}


def test_labelled_zoos():
    keep, skip = labelled_zoos(["a", "b", "c", "d"], {"a": ["id"], "b": [], "c": ["x"], "d": ["id"]},
                               {"a": 3, "b": 3, "c": 2, "d": 1}, "laf")
    assert keep == ["a", "c"] and list(skip) == ["b", "d"]
    assert "no labelled test set" in skip["b"] and "has 1 model(s)" in skip["d"]


def test_scorecard_zoos_score_every_zoo_with_a_labelled_set_and_every_zoo_gets_a_row():
    """Issue 18 ("the scorecard for every zoo"): every zoo with a model and a labelled scored set
    is scored (a source-only zoo too: its sanity rows; a one-model zoo on estimation only, so a
    one-model zoo skipped again fails here); the coverage table lists every zoo with its reason."""
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
