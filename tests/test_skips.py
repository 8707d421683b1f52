"""Which studies run on the configured zoos (labelfree.skips over the studies' plans): a study
that cannot run says why in one line instead of stopping the run."""

from __future__ import annotations

import pytest
import yaml

from labelfree.config import validate_config
from labelfree.skips import fixed_zoo_skips


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
