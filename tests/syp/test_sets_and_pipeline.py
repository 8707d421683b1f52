"""Meta-set and validation-set builders (docs/syp.md, reading R11), baselines (R9), the
per-classifier pipeline and the experiment tables on a tiny synthetic problem."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.stats

from labelfree.numerics import softmax
from labelfree.seeds import rng as seeded_rng
from labelfree.syp import baselines as bl
from labelfree.syp import metasets as ms
from labelfree.syp import plan
from labelfree.syp import report as rep
from labelfree.syp.aggregate import rmse
from labelfree.syp.indicators import image_indicators
from labelfree.syp.plan import COLUMNS, OracleConfig
from labelfree.syp.run import (
    SetInputs,
    Variant,
    baseline_predictions,
    build_indicator_table,
    build_variant,
    run_variant,
    run_variants,
)


def _images(n=24, seed=0, c=1):
    g = np.random.default_rng(seed)
    x = np.zeros((n, 16, 16, c), np.uint8)
    x[:, 4:12, 6:10] = 255  # a bar "digit"
    return np.clip(x + g.integers(0, 20, x.shape), 0, 255).astype(np.uint8)


def test_meta_set_deterministic_and_checksummed():
    """Check 22: deterministic from (seed, set index, image index); checksum recorded."""
    x = _images()
    a, sa = ms.build_meta_set(x, 3, seed=11)
    b, sb = ms.build_meta_set(x, 3, seed=11)
    c, sc = ms.build_meta_set(x, 4, seed=11)
    np.testing.assert_array_equal(a, b)
    assert sa == sb and sa.checksum == ms.checksum(a) and len(sa.ops) == 3
    assert len(set(sa.ops)) == 3 and set(sa.ops) <= set(ms.META_OPS)
    assert sc.checksum != sa.checksum
    # the record describes the image: replaying its ops in its order at its strength, with the
    # set's generator (seed, "syp-meta", index), rebuilds the set bit for bit; the ops change it
    g = seeded_rng(11, "syp-meta", 3)
    g.permutation(len(ms.META_OPS)), g.uniform(0.0, 1.0)  # the draws of the ops and of s
    out = x.astype(np.float64)
    for op in sa.ops:
        out = ms.META_OPS[op](out, g, sa.strength)
    np.testing.assert_array_equal(a, np.round(np.clip(out, 0, 255)).astype(np.uint8))
    assert not np.array_equal(a, x) and not np.array_equal(a, c)
    # the set-level draws (ops, order, strength) depend only on (seed, set index), not on the
    # images: another source gives the same recipe, another seed a different one
    _, s_other = ms.build_meta_set(_images(seed=5), 3, seed=11)
    assert (s_other.ops, s_other.strength) == (sa.ops, sa.strength)
    recipes = {ms.build_meta_set(x, 3, seed=s)[1].ops for s in range(6)}
    assert len(recipes) > 1
    with pytest.raises(ValueError, match="unknown op"):
        ms.build_meta_set(x, 0, 0, ops=("nope",))


@pytest.mark.parametrize("op", sorted(ms.META_OPS))
def test_every_meta_op_keeps_shape_and_range(op):
    x = _images(c=3).astype(np.float64)
    out = ms.META_OPS[op](x, np.random.default_rng(0), 1.0)
    assert out.shape == x.shape and out.min() >= 0 and out.max() <= 255
    ident = ms.META_OPS[op](x, np.random.default_rng(0), 0.0)
    if op not in ("solarize", "cutout", "noise"):
        np.testing.assert_allclose(ident, x, atol=1e-9)  # strength 0 is the identity


def test_validation_sets_plan_and_corruptions():
    x = _images(40)
    y = np.repeat(np.arange(4), 10)
    vplan = ms.ValidationPlan(tuple(ms.CORRUPTIONS), 3, 4)
    sets = ms.build_validation_sets(x, y, vplan, seed=0)
    assert list(sets) == vplan.names() and len(sets) == 1 + 19 + 4
    groups = [info["group"] for _, _, info in sets.values()]
    assert (groups.count("clean"), groups.count("corrupted"), groups.count("natural")) == (1, 19, 4)
    # each corruption name gives its own images (a name -> function mix-up would repeat one);
    # on full-range random pixels, since posterize and saturate agree on the near-binary bars
    xr = np.random.default_rng(1).integers(0, 256, x.shape).astype(np.uint8)
    corrupted = [
        xs.tobytes()
        for xs, _, info in ms.build_validation_sets(xr, y, vplan, 0).values()
        if info["group"] == "corrupted"
    ]
    assert len(set(corrupted)) == 19
    for name, (xs, ys, info) in sets.items():
        assert xs.dtype == np.uint8 and xs.shape == x.shape and len(ys) == len(xs)
        if info["group"] == "corrupted":
            assert not np.array_equal(xs, x), name
    np.testing.assert_array_equal(sets["syp-val-clean"][0], x)
    np.testing.assert_array_equal(sets["syp-val-clean"][1], y)
    # corrupted sets keep the holdout's labels; natural sets resample class priors (reading R11)
    assert all(np.array_equal(v[1], y) for v in sets.values() if v[2]["group"] == "corrupted")
    nat = [v[1] for v in sets.values() if v[2]["group"] == "natural"]
    assert len(nat) == 4 and any(
        not np.array_equal(np.bincount(n, minlength=4), [10] * 4) for n in nat
    )
    # blur severity is monotone in the clean Laplacian variance
    blur = [
        ind
        for ind in (
            image_indicators(ms.corrupt(x, "gaussian_blur", s, 0), "clean")[:, 2].mean()
            for s in (1, 3, 5)
        )
    ]
    assert blur[0] > blur[1] > blur[2]


def test_rotations_blocks():
    """Reading R9, Rotation: blocks [90, 180, 270] degrees counter-clockwise, in that order, image
    order kept within a block. Hand case: [[1, 2], [3, 4]] turned 90 degrees counter-clockwise is
    [[2, 4], [1, 3]], 180 is [[4, 3], [2, 1]], 270 is [[3, 1], [4, 2]]."""
    x = np.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], dtype=np.uint8)[..., None]
    r = ms.rotations(x)[..., 0]
    np.testing.assert_array_equal(r[0], [[2, 4], [1, 3]])
    np.testing.assert_array_equal(r[2], [[4, 3], [2, 1]])
    np.testing.assert_array_equal(r[4], [[3, 1], [4, 2]])
    np.testing.assert_array_equal(
        r[[1, 3, 5]], [[[6, 8], [5, 7]], [[8, 7], [6, 5]], [[7, 5], [8, 6]]]
    )
    big = _images(3)
    np.testing.assert_array_equal(ms.rotations(big)[3:6], big[:, ::-1, ::-1])
    with pytest.raises(ValueError, match="square"):
        ms.rotations(np.zeros((1, 4, 5, 1), np.uint8))


def test_baseline_scores():
    p = np.array([[0.9, 0.1], [0.6, 0.4]])
    assert bl.conf_score(p) == pytest.approx(0.75)
    y = np.array([0, 0])
    t = bl.atc_kit_threshold(p, y)  # a = 1 -> index clipped to N - 1: t = max(-H) = -H(.9, .1)
    assert t == pytest.approx(-scipy.stats.entropy([0.9, 0.1]))
    assert bl.atc_kit_score(p, t) == 50.0  # only the (.6, .4) row has -H below it
    assert bl.doc_estimate(p, p, 0.8) == pytest.approx(80.0)
    # Garg et al.: on the clean set itself the estimate equals the clean accuracy (within 1/N)
    g = np.random.default_rng(0)
    probs = softmax(g.normal(size=(500, 10)) * 3)
    labels = np.where(g.random(500) < 0.7, probs.argmax(1), g.integers(0, 10, 500))
    acc = 100 * np.mean(probs.argmax(1) == labels)
    t = bl.atc_garg_threshold(probs, labels)
    assert abs(bl.atc_garg_estimate(probs, t) - acc) <= 100 / 500 + 1e-9
    fit = bl.fit_linear(np.array([0.0, 1.0, 2.0]), np.array([10.0, 20.0, 30.0]))
    assert fit.slope == pytest.approx(10) and fit.r2 == pytest.approx(1.0)
    np.testing.assert_allclose(fit.predict(np.array([3.0])), [40.0])


def _synthetic_table(n_meta=8, n_val=4, n=60, seed=0):
    """Sets whose classifier accuracy falls with a shift level that also moves the features."""
    g = np.random.default_rng(seed)
    k, d = 5, 6
    train_feats = g.normal(size=(200, d))
    sets = {}

    def make(level, name, kind):
        y = g.integers(0, k, n)
        logits = g.normal(size=(n, k)) * (1 + level)
        logits[np.arange(n), y] += 4.0 * (1 - level)
        x = _images(n, seed=int(level * 100))
        sets[name] = (
            kind,
            SetInputs(
                softmax(logits),
                g.normal(loc=level * 2, size=(n, d)),
                y,
                image_indicators(x, "clean"),
                g.normal(size=(3 * n, d)),
            ),
        )

    for i, lv in enumerate(np.linspace(0, 0.9, n_meta)):
        make(lv, f"m{i}", "meta")
    for i, lv in enumerate(np.linspace(0.1, 0.8, n_val)):
        make(lv, f"v{i}", "val")
    y_id = g.integers(0, k, n)
    lid = g.normal(size=(n, k))
    lid[np.arange(n), y_id] += 4
    return build_indicator_table(
        train_feats, softmax(lid), y_id, sets, "difference", g.normal(size=(600, d))
    )


def test_indicator_table_and_variants():
    table = _synthetic_table()
    assert table.x.shape[1] == len(COLUMNS)
    for k in range(len(table.sets)):
        fd = table.x[table.rows(k), 5]
        assert np.all(fd == fd[0])  # check 5: FD constant within a set
    assert set(table.scores) == {"ConfScore", "Entropy", "ATC", "FD", "DoC", "ATC-Garg", "Rotation"}
    # check 21: the oracle is trained on meta rows only - scrambling validation labels changes
    # nothing in the scores it produces
    v = Variant("a", oracle=OracleConfig(passes=2))
    r1 = run_variant(table, v, [0], threads=1)
    val_rows = np.concatenate(
        [np.arange(len(table.x))[table.rows(k)] for k, kd in enumerate(table.kinds) if kd == "val"]
    )
    table.correct[val_rows] = 1 - table.correct[val_rows]
    r2 = run_variant(table, v, [0], threads=1)
    for name in table.sets:
        np.testing.assert_array_equal(r1.q[0][name], r2.q[0][name])
    assert r1.params == 6241


def test_variants_trained_together_equal_variants_trained_apart():
    """run_variants stacks the runs of several variants (here: normalised and not, loss-adjusted
    and not, two seeds) and scores every set once: each variant's scores equal its own
    run_variant's. A loss adjustment that never fires reuses the unadjusted runs (same_as) and
    gives identical scores; once one meta-set falls below 30 % accuracy it trains its own runs."""
    from labelfree.syp.oracle import low_accuracy_batches

    table = _synthetic_table()
    base = OracleConfig(passes=2)
    vs = [
        Variant("a", oracle=base),
        Variant("a_adj", oracle=replace(base, loss_adjust=True)),
        Variant("raw", normalise=False, oracle=base),
    ]
    n_meta = table.kinds.count("meta")
    meta_rows = slice(0, table.rows(n_meta - 1).stop)
    for k in np.flatnonzero(
        low_accuracy_batches(table.correct[meta_rows], table.set_id[meta_rows], 0.3)
    ):
        table.correct[table.rows(int(k))] = (
            1.0  # no meta-set below 30 %: the adjustment never fires
        )
    assert not low_accuracy_batches(table.correct[meta_rows], table.set_id[meta_rows], 0.3).any()
    together = run_variants(table, vs, [0, 1], threads=1)
    assert together["a_adj"].same_as == ["a"] and together["a"].same_as == []
    for v in vs:
        apart = run_variant(table, v, [0, 1], threads=1)
        for s in range(2):
            for name in table.sets:
                np.testing.assert_allclose(
                    together[v.name].q[s][name], apart.q[s][name], rtol=0, atol=1e-5
                )
    for s in range(2):
        for name in table.sets:
            np.testing.assert_array_equal(together["a"].q[s][name], together["a_adj"].q[s][name])
    r0 = table.rows(0)  # meta-set 0 at 20 % accuracy: the adjustment fires there
    table.correct[r0] = (np.arange(r0.stop - r0.start) % 5 == 0).astype(table.correct.dtype)
    fired = run_variants(table, vs[:2], [0], threads=1)
    assert fired["a_adj"].same_as == []
    diff = np.abs(fired["a"].q[0][table.sets[0]] - fired["a_adj"].q[0][table.sets[0]])
    assert diff.max() > 1e-3


def test_tables_on_synthetic_results():
    """Tables 1-5 and check 16 (constant-100 % predictor row = RMSE of 100 - true accuracy)."""
    table = _synthetic_table()
    cfg = {
        "oracle": {
            "arch": "A",
            "expand": 8,
            "dropout": None,
            "passes": 1,
            "lr": None,
            "momentum": 0.9,
            "weight_decay": 5e-4,
            "decay_bias": True,
            "poly_power": 0.9,
            "loss_adjust": False,
            "low_acc_threshold": 0.3,
            "pos_weight": 3.0,
        },
        "tables": {"indicator_ablation": [["H"], list(COLUMNS)], "expand_grid": [4, 8]},
        "norm_train_scope": "pooled",
    }
    agg = {"mode": "threshold", "tau": "select", "tau_grid": [0.45, 0.5, 0.55], "fixed_tau": 0.5}
    variants = plan.variant_overrides(cfg)
    assert set(variants) == {"ora_a", "ora_b", "ora_a_adj", "ora_b_adj", "ind_h", "r4", "no_norm"}
    q = {}
    for name in variants:
        res = run_variant(table, build_variant(cfg, name), [0, 1], threads=1)
        q[name] = res.q

    base = {m: p for m, (p, _) in baseline_predictions(table).items()}
    results = [rep.ModelResults("clf_a", table, base, q)]
    groups = {n: ("clean" if i == 0 else "corrupted") for i, n in enumerate(results[0].val_sets())}
    t1 = rep.table1(results, agg, groups)
    assert {"SYP (ORA-A)", "SYP (ORA-B)", "FD", "ConfScore"} <= set(t1["method"])
    assert t1.loc[t1["method"] == "SYP (ORA-A)", "uses_val_labels"].item()
    t5 = rep.table5(results, agg)
    true = results[0].true_acc(results[0].val_sets())
    const = t5.loc[t5["setting"] == "constant 100 % predictor", "rmse"].item()
    assert const == pytest.approx(rmse(true, np.full(len(true), 100.0)))
    # the paper's cross-table identity (Tables 3-5): Table 3's last row, Table 4's r = 8, Table 5's
    # "with normalisation" and Table 2's first row are Table 1's ORA-A; the other rows come from
    # their own variant's scores (recomputed here through tau selection on the validation sets)
    ora_a = t1.loc[t1["method"] == "SYP (ORA-A)", "rmse_overall"].item()
    t3 = rep.table3(results, agg, cfg["tables"]["indicator_ablation"], groups).set_index(
        "indicators"
    )
    t4 = rep.table4(results, agg, [4, 8], 8, {}).set_index("r")
    t2 = rep.table2(results, agg).set_index("configuration")
    assert list(t3.index) == ["H", "all six"] and list(t4.index) == [4, 8]
    with_norm = t5.loc[t5["setting"] == "with normalisation", "rmse"].item()
    for v in (
        t3.loc["all six", "rmse"],
        t4.loc[8, "rmse"],
        with_norm,
        t2.loc["Six indicators + ORA-A", "rmse_val"],
    ):
        assert v == pytest.approx(ora_a, rel=1e-12)
    val = results[0].val_sets()

    def own(key):
        per_seed = rep.oracle_predictions(q[key], val, true, agg)
        return np.mean([rmse(true, p) for _, p in per_seed])

    assert t3.loc["H", "rmse"] == pytest.approx(own("ind_h"), rel=1e-12)
    assert t4.loc[4, "rmse"] == pytest.approx(own("r4"), rel=1e-12)
    assert t2.loc["+ Loss adjustment", "rmse_val"] == pytest.approx(own("ora_a_adj"), rel=1e-12)
    assert t5.loc[t5["setting"] == "without normalisation", "rmse"].item() == pytest.approx(
        own("no_norm"), rel=1e-12
    )


def test_check_config_names_the_key_at_fault():
    cfg = {
        "zoo": "syp",
        "splits": {"train": "train", "source": "source", "holdout": "holdout"},
        "meta_sets": {"count": 2},
        "validation": {"corruptions": ["fog"], "severity": 3, "natural": 1},
        "rotation": False,
    }
    zoos = {"syp": {"dataset": "d", "features": ["penultimate"]}}
    datasets = {"d": {"test_split": "source"}}
    names = plan.testset_names(cfg)
    assert names["syp_meta"] == ["syp-meta-000", "syp-meta-001"] and names["syp_rot"] == []
    ok = ["id", *names["syp_ref"], *names["syp_meta"], *names["syp_val"]]
    plan.check_config(cfg, zoos, datasets, ok)
    with pytest.raises(plan.StudyConfigError, match="syp.zoo"):
        plan.check_config({**cfg, "zoo": "nope"}, zoos, datasets, ok)
    with pytest.raises(plan.StudyConfigError, match="test_split"):
        plan.check_config(cfg, zoos, {"d": {"test_split": "test"}}, ok)
    with pytest.raises(plan.StudyConfigError, match="syp_val"):
        plan.check_config(cfg, zoos, datasets, ok[:-1])
    with pytest.raises(plan.StudyConfigError, match="penultimate"):
        plan.check_config(cfg, {"syp": {"dataset": "d", "features": []}}, datasets, ok)


def _hand_results(q_by_variant):
    """Two validation sets of 10 inputs (true accuracy 60 % and 90 %) and one meta-set; the
    oracle scores per variant are given per seed as one array over the 20 validation inputs."""
    from labelfree.syp.run import IndicatorTable

    correct = np.r_[np.ones(10), np.ones(6), np.zeros(4), np.ones(9), np.zeros(1)]
    table = IndicatorTable(
        x=np.zeros((30, len(COLUMNS))),
        correct=correct,
        set_id=np.repeat([0, 1, 2], 10),
        sets=["m0", "v0", "v1"],
        kinds=["meta", "val", "val"],
        acc=np.array([100.0, 60.0, 90.0]),
        scores={},
    )
    q = {
        v: [{"m0": np.full(10, 0.9), "v0": s[:10], "v1": s[10:]} for s in seeds]
        for v, seeds in q_by_variant.items()
    }
    return rep.ModelResults("clf", table, {}, q)


def test_collapse_check_fails_on_a_collapsed_oracle():
    """Reading R15: the checks table's two collapse rows fail when an oracle's scores are constant
    (the base-rate output, predicting 100 % everywhere: RMSE equal to the constant-100 %
    predictor's) and hold for an oracle that separates right from wrong inputs; the variant without
    normalisation is exempt (Table 5 expects it at the constant predictor)."""
    agg = {"mode": "threshold", "tau": "select", "tau_grid": [0.45, 0.5, 0.55], "fixed_tau": 0.5}
    right = np.r_[np.full(6, 0.9), np.full(4, 0.1), np.full(9, 0.8), np.full(1, 0.2)]
    constant = np.full(20, 0.76)
    working = _hand_results({"ora_a": [right, right * 0.99], "no_norm": [constant, constant]})
    collapsed = _hand_results({"ora_a": [right, right], "ind_h": [right, constant]})
    rows_ok = rep._collapse_checks(working, agg)
    rows_bad = rep._collapse_checks(collapsed, agg)
    assert len(rows_ok) == len(rows_bad) == 2
    assert all(r["holds"] for r in rows_ok)
    assert not any(r["holds"] for r in rows_bad)
    spread, gap = rows_bad
    assert spread["value"] == 0.0 and "ind_h, seed 1" in spread["threshold"]
    assert gap["value"] == pytest.approx(0.0, abs=1e-12) and "ind_h, seed 1" in gap["threshold"]
    (s_ok, g_ok), *_ = rep.collapse_stats(
        working.q["ora_a"], ["v0", "v1"], np.array([60.0, 90.0]), agg
    )
    assert s_ok == pytest.approx(right.std()) and g_ok == pytest.approx(1.0)
