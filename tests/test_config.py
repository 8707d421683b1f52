"""Configuration validation: defaults filled, one-line errors naming key and value."""

from __future__ import annotations

import pytest
import yaml

from labelfree.config import ConfigError, check_zoos, validate_config


def _schema(repo_root):
    return repo_root / "config" / "schema.yaml"


@pytest.mark.parametrize("name", ["config/config.yaml", ".test/config/config.yaml"])
def test_shipped_configs_validate(repo_root, name):
    cfg = yaml.safe_load((repo_root / name).read_text())
    out = validate_config(cfg, _schema(repo_root))
    assert out["inference"]["batch_size"] >= 1
    assert set(out["shifts"]["severities"]) <= {1, 2, 3, 4, 5}


def test_defaults_filled_without_mutating_input(repo_root):
    cfg = {"seed": 3}
    out = validate_config(cfg, _schema(repo_root))
    assert cfg == {"seed": 3}
    assert out["seed"] == 3
    assert "datasets" in out and "zoos" in out


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ({"sed": 1}, "unknown config key(s) ['sed']"),
        ({"seed": -1}, "'seed': value -1 must be >= 0"),
        ({"inference": {"batch_size": "x"}}, "'inference.batch_size': value 'x' has type str"),
        ({"inference": {"device": "tpu"}}, "'inference.device': value 'tpu' is not one of"),
        ({"datasets": {"d": {"source": "imagenet21k"}}}, "'datasets.d.source'"),
        ({"shifts": {"severities": [0]}}, "'shifts.severities.0': value 0 must be >= 1"),
    ],
)
def test_bad_values_give_one_line(repo_root, bad, fragment):
    with pytest.raises(ConfigError) as info:
        validate_config(bad, _schema(repo_root))
    msg = str(info.value)
    assert fragment in msg
    assert "\n" not in msg


def test_every_problem_is_named_in_one_message(repo_root):
    """Issue 14: all bad keys at once, not one per run."""
    bad = {"seed": -1, "inference": {"device": "tpu", "batch_size": "x"}, "sed": 1}
    with pytest.raises(ConfigError) as info:
        validate_config(bad, _schema(repo_root))
    msg = str(info.value)
    assert msg.startswith("4 problems:") and "\n" not in msg
    for fragment in ("['sed']", "'seed': value -1", "'inference.device'", "'inference.batch_size'"):
        assert fragment in msg


def test_zoos_are_model_zoos_or_prediction_zoos(repo_root):
    """A zoo needs `dataset` (a configured one) unless it is a prediction zoo, which must not
    also give `dataset`, `sheet` or `grid`; every bad zoo named at once."""
    cfg = validate_config({"datasets": {"digits": {"source": "digits"}}, "zoos": {
        "ok": {"dataset": "digits", "grid": [{"arch": "mlp"}]},
        "preds": {"predictions": "folder"},
        "both": {"predictions": "folder", "dataset": "digits", "sheet": "s.tsv"},
        "none": {"grid": [{"arch": "mlp"}]},
        "typo": {"dataset": "digit", "grid": [{"arch": "mlp"}]},
    }}, _schema(repo_root))
    with pytest.raises(ConfigError) as info:
        check_zoos(cfg)
    msg = str(info.value)
    assert msg.startswith("3 problems:")
    assert "'zoos.both': a prediction zoo" in msg and "remove ['dataset', 'sheet']" in msg
    assert "'zoos.none.dataset' is required (or give `predictions`" in msg
    assert "'zoos.typo.dataset': value 'digit' is not a configured dataset" in msg
    assert "'preds'" not in msg and "zoos.ok" not in msg
    del cfg["zoos"]["both"], cfg["zoos"]["none"], cfg["zoos"]["typo"]
    check_zoos(cfg)
