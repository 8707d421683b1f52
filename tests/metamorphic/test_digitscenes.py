"""DigitScenes generator (metamorphic.md 7.1)."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.data import digitscenes as ds


def _gen(n=600, training=False, seed=0, **opts):
    return ds.generate(n, seed, ds.check_options(opts), training=training)


def test_format_and_annotation():
    a = _gen(300, defects=True, counterfactuals=3)
    assert a["x"].dtype == np.uint8 and a["x"].shape == (300, 32, 32, 3)
    assert a["y"].dtype == np.int64 and set(np.unique(a["y"])) <= set(range(10))
    assert a["boxes"].shape == (300, 4) and a["masks"].shape == (300, 32, 32)
    assert a["inst_masks"].shape == (300, 2, 32, 32)
    assert a["cf_x"].shape == (300, 3, 32, 32, 3) and a["cf_family"].shape == (300, 3)
    clean = a["defect"] == 0
    # box = tight bounds of the annotated mask on clean scenes
    m = a["masks"][clean]
    b = a["boxes"][clean]
    rows, cols = m.any(axis=2), m.any(axis=1)
    assert np.array_equal(rows.argmax(1), b[:, 1]) and np.array_equal(cols.argmax(1), b[:, 0])
    assert np.array_equal(32 - rows[:, ::-1].argmax(1), b[:, 3])
    # annotated mask = the first hidden instance on clean scenes
    assert np.array_equal(a["masks"][clean], a["inst_masks"][clean, 0])
    # the glyph is bright white: annotated pixels are brighter than the background on average
    x = a["x"].astype(float).mean(axis=3)
    assert x[a["masks"]].mean() > x[~a["masks"]].mean() + 40


def test_bias_rho_ties_background_to_label():
    for rho, lo, hi in ((0.0, 0.05, 0.16), (0.9, 0.87, 0.95), (1.0, 1.0, 1.0)):
        a = _gen(2000, rho=rho)
        match = (a["bg_family"] == a["y"]).mean()
        assert lo <= match <= hi, (rho, match)
    t = _gen(2000, training=True, rho=0.0, rho_train=1.0)
    fam = t["bg_family"]
    assert 0.05 < (fam == -1).mean() < 0.15  # 10% flat backgrounds in training sets
    assert (fam[fam >= 0] == t["y"][fam >= 0]).all()


def test_defects_and_hidden_instances():
    a = _gen(3000, defects=True)
    multiple = (a["defect"] & 1) > 0
    incomplete = (a["defect"] & 2) > 0
    assert 0.12 < multiple.mean() < 0.18 and 0.07 < incomplete.mean() < 0.13
    assert a["inst_masks"][multiple, 1].any(axis=(1, 2)).all()
    assert not a["inst_masks"][~multiple, 1].any()
    # the annotated mask misses part of the glyphs exactly on defect scenes
    truth = a["inst_masks"].any(axis=1)
    missing = (truth & ~a["masks"]).sum(axis=(1, 2))
    assert (missing[multiple | incomplete] > 0).all() and (missing[~(multiple | incomplete)] == 0).all()
    assert not _gen(500, training=True, defects=True)["defect"].any()


def test_counterfactuals_keep_the_object_and_change_family():
    a = _gen(200, counterfactuals=3, noise=0.0, clutter=False)
    fam = a["cf_family"]
    assert (fam != a["y"][:, None]).all()
    assert all(len(set(r)) == 3 for r in fam.tolist())
    # glyph core pixels (alpha ~1) are identical in the source and its re-renders
    core = a["inst_masks"][:, 0]
    src = a["x"].astype(int)
    for k in range(3):
        diff = np.abs(a["cf_x"][:, k].astype(int) - src).max(axis=3)
        assert np.median(diff[core]) < np.median(diff[~core])


def test_multilabel_variant():
    a = _gen(400, size=48, multilabel=True, glyph_sizes=[16], counterfactuals=3)
    assert a["x"].shape == (400, 48, 48, 3) and a["y"].shape == (400, 10)
    k = a["y"].sum(axis=1)
    assert set(np.unique(k)) == {2, 3}
    assert np.array_equal(a["masks"], a["inst_masks"].any(axis=1))
    assert all(not a["y"][i, a["cf_family"][i]].any() for i in range(400))


def test_area_ratio_grows_with_glyph_size():
    a = _gen(800, glyph_sizes=[12, 16, 20, 24])
    ratio = a["masks"].mean(axis=(1, 2))
    means = [ratio[a["glyph_size"] == s].mean() for s in (12, 16, 20, 24)]
    assert np.all(np.diff(means) > 0)
    assert 0.02 < means[0] < 0.1 and 0.15 < means[-1] < 0.4


def test_build_splits_are_seeded_and_use_disjoint_glyphs():
    cfg = {"splits": {"train": 0.5, "test": 0.5}, "options": {"n": 200}}
    a = ds.build(cfg, 0)
    b = ds.build(cfg, 0)
    assert set(a) == {"train", "test"} and len(a["train"]) == 100
    assert np.array_equal(a["test"].x, b["test"].x)
    assert not np.array_equal(ds.build(cfg, 1)["test"].x, a["test"].x)
    _, _, is_train = ds.glyph_pool()
    assert 0.65 < is_train.mean() < 0.68


def test_option_errors_name_the_key():
    with pytest.raises(ds.DigitScenesError, match="unknown option"):
        ds.check_options({"rhoo": 0.5})
    with pytest.raises(ds.DigitScenesError, match="rho="):
        ds.check_options({"rho": 1.5})
    with pytest.raises(ds.DigitScenesError, match="glyph_sizes"):
        ds.check_options({"glyph_sizes": [40]})
    with pytest.raises(ds.DigitScenesError, match="sum to more"):
        ds.build({"splits": {"train": 0.8, "test": 0.5}}, 0)
