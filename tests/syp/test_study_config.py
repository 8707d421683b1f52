"""Source, holdout and train splits must not overlap; the paper config carves its holdout out of
the CIFAR-10 test split instead of reusing it (docs/syp.md, reading R11: the holdout is never used
for meta-training)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from labelfree.syp import plan
from labelfree.syp.run import carve_holdout, source_rows, write_testsets

ROOT = Path(__file__).resolve().parents[2]


def _cfg(**splits):
    return {
        "zoo": "syp",
        "splits": {"train": "train", "source": "source", "holdout": "holdout", **splits},
        "meta_sets": {"count": 2},
        "validation": {"corruptions": ["fog"], "severity": 3, "natural": 1},
        "rotation": False,
    }


def _names(cfg):
    n = plan.testset_names(cfg)
    return ["id", *n["syp_ref"], *n["syp_meta"], *n["syp_val"], *n["syp_rot"]]


ZOOS = {"syp": {"dataset": "d", "features": ["penultimate"]}}


@pytest.mark.parametrize(
    ("splits", "pair"),
    [
        ({"holdout": "source"}, ("source", "holdout")),
        ({"train": "source"}, ("train", "source")),
        ({"holdout": "train"}, ("train", "holdout")),
    ],
)
def test_overlapping_splits_are_refused_naming_both(splits, pair):
    cfg = _cfg(**splits)
    with pytest.raises(plan.StudyConfigError) as err:
        plan.check_config(cfg, ZOOS, {"d": {"test_split": cfg["splits"]["source"]}}, _names(cfg))
    msg = str(err.value)
    a, b = pair
    assert f"{a} and {b} are both split" in msg and "dataset 'd'" in msg


def test_holdout_and_share_are_exclusive():
    cfg = _cfg(holdout_share=0.2)
    with pytest.raises(plan.StudyConfigError, match="either holdout"):
        plan.check_config(cfg, ZOOS, {"d": {"test_split": "source"}}, _names(cfg))
    cfg = _cfg(holdout=None)
    with pytest.raises(plan.StudyConfigError, match="holdout_share is not set"):
        plan.check_config(cfg, ZOOS, {"d": {"test_split": "source"}}, _names(cfg))
    cfg = _cfg(holdout=None, holdout_share=0.25)
    plan.check_config(cfg, ZOOS, {"d": {"test_split": "source"}}, _names(cfg))


def test_carved_holdout_is_disjoint_stratified_and_seeded():
    y = np.repeat(np.arange(10), 1000)  # CIFAR-10 test: 1,000 images per class
    keep, held = carve_holdout(y, 0.2, seed=0)
    assert len(held) == 2000 and len(keep) == 8000
    assert not np.intersect1d(keep, held).size
    np.testing.assert_array_equal(np.sort(np.concatenate([keep, held])), np.arange(10_000))
    np.testing.assert_array_equal(np.bincount(y[held]), np.full(10, 200))  # stratified
    again, _ = carve_holdout(y, 0.2, seed=0)
    other, _ = carve_holdout(y, 0.2, seed=1)
    np.testing.assert_array_equal(keep, again)
    assert not np.array_equal(keep, other)
    # the ATC-threshold rows of `id` are exactly the meta-set source rows
    cfg = _cfg(holdout=None, holdout_share=0.2)
    np.testing.assert_array_equal(source_rows(cfg, y, 0), keep)
    np.testing.assert_array_equal(source_rows(_cfg(holdout_share=None), y, 0), np.arange(10_000))


def test_paper_config_has_disjoint_splits():
    """config/paper/syp-cifar10.yaml validates and passes check_config; its old
    form (source = holdout = test) is refused."""
    from labelfree.config import validate_config

    base = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    paper = yaml.safe_load((ROOT / "config/paper/syp-cifar10.yaml").read_text())
    merged = {**base, **paper}
    cfg = validate_config(merged, ROOT / "config/schema.yaml")
    syp = cfg["syp"]
    assert syp["splits"]["holdout"] is None and 0 < syp["splits"]["holdout_share"] < 1
    zoo = syp["zoo"]
    plan.check_config(syp, cfg["zoos"], cfg["datasets"], _names(syp))
    old = {**syp, "splits": {**syp["splits"], "holdout": "test", "holdout_share": None}}
    with pytest.raises(plan.StudyConfigError, match="source and holdout are both split 'test'"):
        plan.check_config(old, cfg["zoos"], cfg["datasets"], _names(old))
    assert cfg["zoos"][zoo]["dataset"] in cfg["datasets"]


def test_write_testsets_carves_the_holdout(tmp_path):
    """With holdout: null the clean validation set is exactly the carved rows and no meta-set is
    built from them (the meta-sets have the source's size minus the holdout)."""
    from labelfree import store

    g = np.random.default_rng(0)
    y = np.repeat(np.arange(4), 10)
    x = g.integers(0, 256, size=(40, 8, 8, 1)).astype(np.uint8)
    store.write_image_set(tmp_path / "train.npz", x[:8], y[:8])
    store.write_image_set(tmp_path / "source.npz", x, y)
    cfg = {
        **_cfg(holdout=None, holdout_share=0.25),
        "meta_sets": {"count": 2, "ops": ["brightness"], "n_ops": 1, "strength": [0.0, 1.0]},
        "validation": {"corruptions": ["fog"], "severity": 3, "natural": 0},
    }
    out = tmp_path / "sets"
    write_testsets(
        str(tmp_path / "train.npz"), str(tmp_path / "source.npz"), None, str(out),
        str(tmp_path / "info.json"), cfg, seed=3,
    )
    keep, held = carve_holdout(y, 0.25, 3)
    clean = store.read_image_set(out / "syp-val-clean.npz")
    np.testing.assert_array_equal(clean.x, x[held])
    meta = store.read_image_set(out / "syp-meta-000.npz")
    assert len(meta.y) == len(keep) == 30
    np.testing.assert_array_equal(meta.y, y[keep])
    info = store.load_json(tmp_path / "info.json")
    assert (info["n_source"], info["n_holdout"]) == (30, 10)


def test_workflow_plan_registers_groups_checks_and_names_outputs():
    """The rule file's one call: groups registered even when the study is disabled, the config
    checked only when it is enabled, outputs named by the one naming rule."""
    cfg = {
        **_cfg(),
        "tables": {"indicator_ablation": [["H"]], "expand_grid": [8]},
        "oracle": {"expand": 8, "passes": 30, "lr": None},
        "norm_train_scope": "pooled",
        "atc_form": "difference", "blur_form": "clean", "image_form": "code", "aggregate": {},
    }
    datasets = {"d": {"test_split": "source"}}
    groups: dict[str, list[str]] = {}
    p = plan.workflow_plan(cfg, ZOOS, datasets, groups, lambda zoo: ["id"], enabled=False)
    assert groups == p.groups and groups["syp_meta"] == ["syp-meta-000", "syp-meta-001"]
    assert list(p.kinds) == [*groups["syp_meta"], *groups["syp_val"]]
    assert p.infer_sets == ["syp-train", *p.kinds]
    assert p.tables["table1"] == "results/syp/tables/table1-syp.csv"
    assert set(p.variants) >= {"ora_a", "ora_b", "ind_h", "no_norm"}
    assert p.targets() == [*p.tables.values(), *p.figures.values()]
    with pytest.raises(plan.StudyConfigError, match="testsets must list"):
        plan.workflow_plan(cfg, ZOOS, datasets, {}, lambda zoo: ["id"], enabled=True)
    plan.workflow_plan(cfg, ZOOS, datasets, {}, lambda zoo: _names(cfg), enabled=True)
