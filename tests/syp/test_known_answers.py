"""SYP known-answer tests: hand-computed cases for every indicator and baseline score, and values
recomputed from the paper's and the kit's tables (docs/syp.md, readings R1-R3, R9; paper Tables
1-5)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from labelfree.numerics import entropy
from labelfree.syp import baselines as bl
from labelfree.syp import indicators as ind
from labelfree.syp import oracle as orc
from labelfree.syp import report as rep
from labelfree.syp.aggregate import rmse, select_tau, set_accuracy
from labelfree.syp.normalise import fit_normaliser
from labelfree.syp.plan import COLUMNS, fig10_variants
from labelfree.syp.run import IndicatorTable

LN2, LN3, LN4 = math.log(2), math.log(3), math.log(4)

#: Five softmax rows (K = 4) whose entropies are known by hand: ln 4, ln 2, 0, ln 3, 1.5 ln 2
#: (H([.5, .25, .25, 0]) = .5 ln 2 + 2 (.25 ln 4) = 1.5 ln 2). Every argmax is class 0.
P5 = np.array(
    [
        [0.25, 0.25, 0.25, 0.25],
        [0.5, 0.5, 0.0, 0.0],
        [1.0, 0.0, 0.0, 0.0],
        [1 / 3, 1 / 3, 1 / 3, 0.0],
        [0.5, 0.25, 0.25, 0.0],
    ]
)
H5 = np.array([LN4, LN2, 0.0, LN3, 1.5 * LN2])
#: three correct (label 0), two wrong: clean accuracy a = 0.6
Y5 = np.array([0, 1, 0, 0, 1])


def test_entropy_hand_values():
    """Reading R1: natural-log entropy of the five rows above."""
    np.testing.assert_allclose(entropy(P5), H5, rtol=0, atol=1e-15)


def test_atc_threshold_hand_case():
    """Reading R2: t = sorted(H)[ceil(a N)]; a = 3/5, N = 5 -> index 3 of
    (0, ln 2, 1.5 ln 2, ln 3, ln 4), i.e. t = ln 3; exactly 3 of 5 entropies lie below it.
    A threshold shifted by one sample (index 2 or 4) gives 1.5 ln 2 or ln 4 and fails."""
    thr = ind.atc_threshold(P5, Y5)
    assert thr.accuracy == 0.6 and thr.n == 5
    assert thr.t == pytest.approx(LN3, abs=1e-15)
    assert np.mean(entropy(P5) < thr.t) == 0.6
    # the reference code's ATC column (reading R2): ResNet form t - H, RepVGG form H / t
    np.testing.assert_allclose(ind.atc_indicator(H5, thr.t, "difference"), LN3 - H5, atol=1e-15)
    np.testing.assert_allclose(ind.atc_indicator(H5, thr.t, "ratio"), H5 / LN3, atol=1e-15)
    np.testing.assert_array_equal(ind.atc_indicator(H5, thr.t, "binary"), [0, 1, 1, 0, 1])


def _probs_with_entropy_rank(n: int) -> np.ndarray:
    """(n, 2) softmax rows with strictly increasing entropy: p1 = 1 - 0.5 i / n."""
    p1 = 1.0 - 0.5 * np.arange(n) / n
    return np.stack([p1, 1 - p1], axis=1)


@pytest.mark.parametrize("k", [9437, 9439, 51])
def test_atc_threshold_index_spec_example(k):
    """Reading R2: a = 0.9437 at N = 10,000 selects element 9437 of the sorted entropies (and the
    RepVGG-A0's a = 0.9439 element 9439). k = 51: the float product (51/10000)*10000 rounds up to
    52.000...01, whose ceil would move the threshold one sample up; the index is the count."""
    n = 10_000
    p = _probs_with_entropy_rank(n)
    y = np.ones(n, dtype=np.int64)  # argmax is class 0 everywhere: all wrong ...
    y[np.random.default_rng(0).choice(n, k, replace=False)] = 0  # ... except k rows
    h = np.sort(entropy(p))
    thr = ind.atc_threshold(p, y)
    assert thr.t == h[k]
    assert np.sum(entropy(p) < thr.t) == k  # fraction below t equals a exactly
    # the kit's ATC baseline uses the same quantile on s = -H (reading R9)
    assert bl.atc_kit_threshold(p, y) == np.sort(-entropy(p))[k]


def test_baseline_scores_hand_case():
    """Reading R9, on the five rows above (a = 0.6) and a two-row target set [one-hot, uniform]:

    ConfScore = mean max p = (.25 + .5 + 1 + 1/3 + .5)/5 = 31/60; Entropy = mean H;
    kit ATC: s = -H sorted (-ln 4, -ln 3, -1.5 ln 2, -ln 2, 0), t_s = s[3] = -ln 2; the score is
    the share with s < t_s: 60 % on the clean set, 50 % on the target (s = 0, -ln 4);
    Garg ATC: t' = s[round(0.4 * 5)] = s[2] = -1.5 ln 2, estimate = share with s >= t': 60 %
    on the clean set (= its accuracy), 50 % on the target;
    DoC = 100 (a - (conf_id - conf_target)) = 100 (0.6 - (31/60 - 0.625)) = 70.8333...
    """
    target = np.array([[1.0, 0, 0, 0], [0.25, 0.25, 0.25, 0.25]])
    assert bl.conf_score(P5) == pytest.approx(31 / 60, abs=1e-15)
    assert bl.entropy_score(P5) == pytest.approx(H5.mean(), abs=1e-15)
    t_s = bl.atc_kit_threshold(P5, Y5)
    assert t_s == pytest.approx(-LN2, abs=1e-15)
    assert bl.atc_kit_score(P5, t_s) == pytest.approx(60.0)
    assert bl.atc_kit_score(target, t_s) == pytest.approx(50.0)
    t_g = bl.atc_garg_threshold(P5, Y5)
    assert t_g == pytest.approx(-1.5 * LN2, abs=1e-15)
    assert bl.atc_garg_estimate(P5, t_g) == pytest.approx(60.0)
    assert bl.atc_garg_estimate(target, t_g) == pytest.approx(50.0)
    assert bl.doc_estimate(target, P5, 0.6) == pytest.approx(100 * (0.6 - (31 / 60 - 0.625)))


@pytest.mark.filterwarnings("ignore:Matrix is singular")
def test_frechet_distance_hand_case():
    """Reading R3 (squared FD, unbiased covariance): 1-D samples (-1, 1) and (1, 5) have means 0
    and 3 and variances 2 and 8: FD = 3^2 + 2 + 8 - 2 sqrt(16) = 11. 2-D with the second
    coordinate constant: FD adds 0."""
    a = ind.feature_stats(np.array([[-1.0], [1.0]]))
    b = ind.feature_stats(np.array([[1.0], [5.0]]))
    assert ind.frechet_distance(a, b) == pytest.approx(11.0, rel=1e-12)
    a2 = ind.feature_stats(np.array([[-1.0, 7.0], [1.0, 7.0]]))
    b2 = ind.feature_stats(np.array([[1.0, 7.0], [5.0, 7.0]]))
    assert ind.frechet_distance(a2, b2) == pytest.approx(11.0, rel=1e-9)


def test_rotation_score_hand_case():
    """Reading R9, Rotation: a head trained on features that encode the angle scores 100 % on the
    training set; on a set whose 90-degree copies look like the upright ones, 3 of the 4 blocks
    are predicted right: 75 %."""
    n, g = 30, np.random.default_rng(0)
    angle_feats = np.repeat(np.eye(4) * 5, n, axis=0) + 0.1 * g.standard_normal((4 * n, 4))
    head = bl.fit_rotation_head(angle_feats)
    assert head.score(angle_feats) == 100.0
    blind = angle_feats.copy()
    blind[n : 2 * n] = angle_feats[:n]  # the 90-degree block looks upright
    assert head.score(blind) == pytest.approx(75.0)


def test_image_indicators_hand_case():
    """Reading R4, reference code: a 1x2x1x1... image with values 0 and 128: std = 64;
    IE = mean(-v ln(v + 1e-6)), v = (0, 0.5) -> -0.5 ln(0.500001)/2."""
    x = np.array([0, 128], dtype=np.uint8).reshape(1, 1, 2, 1)
    assert ind.pixel_std(x)[0] == 64.0
    assert ind.pixel_entropy_term(x)[0] == pytest.approx(-0.5 * math.log(0.5 + 1e-6) / 2, rel=1e-12)
    # paper reading: variance 4096, histogram entropy of two equally frequent values = ln 2
    assert ind.pixel_variance(x)[0] == 4096.0
    assert ind.pixel_histogram_entropy(x)[0] == pytest.approx(LN2, rel=1e-12)


def test_clean_blur_hand_case():
    """Reading R4, clean blur: a single bright pixel (255) at the centre of a 5x5 zero image has the
    Laplacian -1020 at the centre and 255 at its 4 neighbours; variance over 25 pixels =
    (1020^2 + 4 * 255^2)/25 - ((-1020 + 4 * 255)/25)^2 = 52020."""
    x = np.zeros((1, 5, 5, 1), np.uint8)
    x[0, 2, 2] = 255
    assert ind.blur_clean(x)[0] == pytest.approx((1020**2 + 4 * 255**2) / 25, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# values recomputed from the paper's and the kit's tables
# ---------------------------------------------------------------------------------------------

#: Kit README per-group RMSEs (CIFAR-10.1 / CIFAR-10.1-C / CIFAR-10-F / overall), paper Table 1.
KIT_GROUPS = {
    ("ResNet-56", "Rotation"): (7.285, 6.386, 7.763, 7.129),
    ("ResNet-56", "ConfScore"): (2.190, 9.743, 2.676, 6.985),
    ("ResNet-56", "Entropy"): (2.424, 10.300, 2.913, 7.402),
    ("ResNet-56", "ATC"): (11.428, 5.964, 8.960, 7.766),
    ("ResNet-56", "FD"): (7.517, 5.145, 4.662, 4.985),
    ("RepVGG-A0", "Rotation"): (16.726, 17.137, 8.105, 13.391),
    ("RepVGG-A0", "ConfScore"): (5.470, 12.004, 3.709, 8.722),
    ("RepVGG-A0", "Entropy"): (5.997, 12.645, 3.419, 9.093),
    ("RepVGG-A0", "ATC"): (15.168, 8.050, 7.694, 8.132),
    ("RepVGG-A0", "FD"): (10.718, 6.318, 5.245, 5.966),
}


def _results_with_group_errors(model, method, errs, q=None):
    """One classifier, 40 validation sets (1 clean, 19 corrupted, 20 natural, as the challenge's), whose
    baseline errors are constant per group."""
    sizes = {"clean": 1, "corrupted": 19, "natural": 20}
    names, groups, true, pred = [], {}, [], []
    for (g, m), e in zip(sizes.items(), errs, strict=True):
        for i in range(m):
            n = f"{g}-{i}"
            names.append(n)
            groups[n] = g
            true.append(70.0)
            pred.append(70.0 + (e if i % 2 else -e))
    k = len(names)
    table = IndicatorTable(
        x=np.zeros((k, 6)), correct=np.zeros(k), set_id=np.arange(k), sets=names,
        kinds=["val"] * k, acc=np.array(true), scores={},
    )
    one = [{n: np.full(1, 0.9) for n in names}]
    q = q or {v: one for v in ("ora_a", "ora_b", "ora_a_adj", "ora_b_adj")}
    return [rep.ModelResults(model, table, {method: np.array(pred)}, q)], groups


@pytest.mark.parametrize(("key", "groups"), list(KIT_GROUPS.items()))
def test_table1_overall_rmse_recomputes_the_kit(key, groups):
    """The kit's overall RMSE is the RMSE pooled over the 40 sets, not the mean of the group
    RMSEs: with the kit's group RMSEs (1, 19 and 20 sets) Table 1's overall column gives the kit's
    overall value within its rounding (3 decimals; measured |diff| <= 0.0007)."""
    model, method = key
    *grp, overall = groups
    results, g = _results_with_group_errors(model, method, grp)
    agg = {"mode": "threshold", "tau": "fixed", "tau_grid": [0.5], "fixed_tau": 0.5}
    t1 = rep.table1(results, agg, g)
    row = t1[t1["method"] == method].iloc[0]
    for col, v in zip(("rmse_clean", "rmse_corrupted", "rmse_natural"), grp, strict=True):
        assert row[col] == pytest.approx(v, abs=1e-9)
    assert row["rmse_overall"] == pytest.approx(overall, abs=1e-3)


def test_paper_table1_gaps_match_the_abstract():
    """The abstract's "RMSE lower by 1.83-3.97 (ResNet-56) and 2.32-9.74 (RepVGG-A0)"
    are ORA-A's gaps to FD and to Rotation in Table 1 as stored in experiment.PAPER_TABLE1."""
    t = rep.PAPER_TABLE1
    for i, (lo, hi) in enumerate(((1.83, 3.97), (2.32, 9.74))):
        ora = t["SYP (ORA-A)"][i]
        assert round(t["FD"][i] - ora, 2) == lo
        assert round(t["Rotation"][i] - ora, 2) == hi
    # and Table 3's last row, Table 4's r = 8 and Table 5's first row are Table 1's ORA-A
    assert rep.PAPER_TABLE3["all six"] == rep.PAPER_TABLE4[8] == t["SYP (ORA-A)"]
    assert rep.PAPER_TABLE5["with normalisation"] == t["SYP (ORA-A)"]


def test_ensemble_row_averages_the_two_loss_adjusted_oracles():
    """Reading R8 / Table 2 (cumulative): '+ ORA-B ensemble' thresholds the mean of the
    loss-adjusted ORA-A and ORA-B scores. Hand case, tau = 0.5: ora_a_adj q = (.8, .3),
    ora_b_adj q = (.4, .6) -> mean (.6, .45) -> 50 %; with the plain ORA-B (.1, .1) the mean
    would be (.45, .2) -> 0 %."""
    names = ["v0"]
    q = {
        "ora_a": [{"v0": np.array([0.9, 0.9])}],
        "ora_a_adj": [{"v0": np.array([0.8, 0.3])}],
        "ora_b": [{"v0": np.array([0.1, 0.1])}],
        "ora_b_adj": [{"v0": np.array([0.4, 0.6])}],
    }
    table = IndicatorTable(
        x=np.zeros((1, 6)), correct=np.zeros(1), set_id=np.arange(1), sets=names,
        kinds=["val"], acc=np.array([50.0]), scores={},
    )
    res = [rep.ModelResults("m", table, {}, q)]
    agg = {"mode": "threshold", "tau": "fixed", "tau_grid": [0.5], "fixed_tau": 0.5}
    t2 = rep.table2(res, agg)
    assert t2.set_index("configuration").loc["+ ORA-B ensemble", "rmse_val"] == 0.0
    assert t2.set_index("configuration").loc["+ Loss adjustment", "rmse_val"] == 0.0
    pred = rep.prediction_rows(res, agg, {"v0": "clean"})
    ens = pred[pred["method"] == "SYP (ORA-A+B ensemble)"]["pred_acc"].item()
    assert ens == 50.0
    assert rep.ENSEMBLE_MEMBERS == ("ora_a_adj", "ora_b_adj")


def test_fig10_variants_and_table():
    """Figure 10 (reading R13): one ORA-A variant per grid value other than the default; the table maps
    passes to iterations (passes x M) and reuses ora_a at the default point."""
    cfg = {
        "oracle": {"passes": 30, "lr": None, "expand": 8},
        "tables": {"fig10_passes": [5, 30, 50], "fig10_lr": [0.05, 0.1]},
    }
    v = fig10_variants(cfg)
    assert v == {"it5": ("passes", 5.0), "ora_a": ("passes", 30.0), "it50": ("passes", 50.0),
                 "lr0p05": ("lr", 0.05)}
    names = ["v0", "v1"]
    table = IndicatorTable(
        x=np.zeros((2, 6)), correct=np.zeros(2), set_id=np.arange(2), sets=names,
        kinds=["val", "val"], acc=np.array([50.0, 100.0]), scores={},
    )
    # set v0 scores (a, .1), v1 (b, .9), tau .5: predictions it5 (0, 50) %, ora_a (50, 100) %,
    # it50 (50, 100) %, lr0p05 (50, 50) % against the truth (50, 100) %
    mk = {"it5": (0.0, 0.0), "ora_a": (0.6, 0.9), "it50": (0.9, 0.9), "lr0p05": (0.6, 0.0)}
    q = {k: [{"v0": np.array([a, 0.1]), "v1": np.array([b, 0.9])}] for k, (a, b) in mk.items()}
    res = [rep.ModelResults("m", table, {}, q)]
    agg = {"mode": "threshold", "tau": "fixed", "tau_grid": [0.5], "fixed_tau": 0.5}
    f10 = rep.fig10_table(res, agg, cfg, n_meta=1000)
    it = f10[f10["parameter"] == "iterations"].set_index("value")
    assert list(it["iterations"]) == [5000, 30000, 50000]
    assert it.loc[30.0, "rmse"] == 0.0 and bool(it.loc[30.0, "is_default"])
    assert it.loc[5.0, "rmse"] == pytest.approx(rmse([50, 100], [0, 50]))
    assert it.loc[50.0, "rmse"] == 0.0
    lr = f10[f10["parameter"] == "lr"].set_index("value")
    assert lr.loc[0.1, "variant"] == "ora_a" and lr.loc[0.05, "rmse"] == pytest.approx(
        rmse([50, 100], [50, 50]))
    assert isinstance(f10, pd.DataFrame)


def test_checks_table_hand_case():
    """Checks table (reading R12): with ORA-A exact on two validation sets (true 50 % and 100 %) and
    ConfScore off by 10 points on each, 'ORA-A minus ConfScore' = 0 - 10 = -10 (holds); the
    un-normalised oracle predicting 100 % everywhere has RMSE = the constant-100 % RMSE = 35.36,
    ratio to ORA-A's 0 is infinite (holds), relative gap 0 (holds)."""
    names = ["v0", "v1", "m0", "m1", "m2", "m3"]
    kinds = ["val", "val", "meta", "meta", "meta", "meta"]
    acc = np.array([50.0, 100.0, 25.0, 50.0, 75.0, 100.0])
    table = IndicatorTable(
        x=np.zeros((6, 6)), correct=np.zeros(6), set_id=np.arange(6), sets=names, kinds=kinds,
        acc=acc, scores={},
    )
    # each set has 4 samples; scores above .5 on a share equal to its true accuracy
    exact = {n: (np.arange(4) < a / 25).astype(float) * 0.9 for n, a in zip(names, acc, strict=True)}
    allc = {n: np.full(4, 0.9) for n in names}
    q = {k: [exact, exact] for k in ("ora_a", "ind_h", "ind_ha", "ind_hafd")}
    q["no_norm"] = [allc, allc]
    res = [rep.ModelResults("m", table, {"ConfScore": acc + 10}, q)]
    cfg = {
        "oracle": {"expand": 8},
        "tables": {"indicator_ablation": [["H"], ["H", "A"], ["H", "A", "FD"], list(COLUMNS)],
                   "expand_grid": [8]},
    }
    agg = {"mode": "threshold", "tau": "fixed", "tau_grid": [0.5], "fixed_tau": 0.5}
    ck = rep.checks_table(res, agg, cfg, {"v0": "corrupted", "v1": "natural"}).set_index("check")
    assert list(ck.columns) == ["model", "value", "threshold", "holds", "required", "source"]
    row = ck.loc["SYP (ORA-A) RMSE minus ConfScore RMSE"]
    assert row["value"] == pytest.approx(-10.0) and row["holds"] and row["required"]
    gap = ck.loc["Table 5: |RMSE without normalisation - constant-100 % RMSE| / constant-100 % "
                 "RMSE"]
    assert gap["value"] == 0.0 and gap["holds"]
    corr = ck.loc["Figs. 4-5: corr(GT, ORA-A) on meta-training sets"]
    assert corr["value"] == pytest.approx(1.0) and corr["holds"]
    # ATC adds nothing here (identical scores): |H+A - H| = 0 holds
    assert ck.loc["Table 3: |RMSE(H+A) - RMSE(H)|", "value"] == 0.0


# ---------------------------------------------------------------------------------------------
# the accuracy predictor: normalisation -> oracle -> threshold -> tau selection (readings R5-R8)
# ---------------------------------------------------------------------------------------------


def _ora_a_params(f: int, r: int) -> int:
    """ORA-A parameters by hand (reading R6), m = F r: Linear(F, m) + 2 Linear(m, m)
    + Linear(m, m/2) + Linear(m/2, 1), weights and biases."""
    m = f * r
    return (f * m + m) + 2 * (m * m + m) + (m * (m // 2) + m // 2) + (m // 2 + 1)


def _ora_b_params(f: int, r: int) -> int:
    """ORA-B parameters by hand (reading R6): Linear(F, m), then per block qkv Linear(m, 3m),
    proj Linear(m, m) and the two MLP Linear(m, m); head Linear(m, 1)."""
    m = f * r
    block = (3 * m * m + 3 * m) + (m * m + m) + 2 * (m * m + m)
    return (f * m + m) + 2 * block + (m + 1)


@pytest.mark.parametrize("r", [2, 4, 6, 8, 10])
def test_oracle_parameter_counts_by_hand_table4_grid(r):
    """Reading R6 / Table 4 (r in {2, 4, 6, 8, 10}) and Table 3 (F in {1, 2, 3, 6} columns): the
    hand count above; F = 6, r = 8 gives 6,241 (ORA-A) and 28,609 (ORA-B)."""
    assert _ora_a_params(6, 8) == 6241 and _ora_b_params(6, 8) == 28609
    assert orc.count_parameters(orc.OracleA(6, r)) == _ora_a_params(6, r)
    assert orc.count_parameters(orc.OracleB(6, r)) == _ora_b_params(6, r)
    for f in (1, 2, 3):
        assert orc.count_parameters(orc.OracleA(f, r)) == _ora_a_params(f, r)


def _gelu(x: float) -> float:
    """Exact GELU, x Phi(x) (PyTorch's default, the reference code's nn.GELU)."""
    return x * 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def _chain_oracle(a: float, c: float) -> orc.OracleA:
    """ORA-A (F = 6, r = 8) whose only live path is input column 0 -> unit 0 of every layer:
    q = sigmoid(a GELU(GELU(GELU(GELU(x0)))) + c)."""
    m = orc.OracleA(6, 8)
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        linears = [mod for mod in m.net if isinstance(mod, torch.nn.Linear)]
        for lin in linears[:-1]:
            lin.weight[0, 0] = 1.0
        linears[-1].weight[0, 0] = a
        linears[-1].bias[0] = c
    return m


def test_oracle_a_forward_hand_case():
    """Reading R6: four GELUs between the five Linear layers, then a sigmoid. With the chain
    weights above, x0 = 1: GELU(1) = 0.84134, then 0.67301, 0.50444, 0.34959; a = -20, c = 5
    gives q = sigmoid(5 - 20 * 0.34959) = 0.12007. A missing GELU, a ReLU or a missing sigmoid
    changes q in the second decimal or more."""
    m = _chain_oracle(-20.0, 5.0)
    x = np.zeros((3, 6))
    x[:, 0] = [1.0, 0.0, 0.5]
    x[:, 1:] = 7.0  # dead columns: no effect
    q = orc.predict_scores(m, x)
    g4 = [_gelu(_gelu(_gelu(_gelu(v)))) for v in x[:, 0]]
    want = [1 / (1 + math.exp(-(5.0 - 20.0 * v))) for v in g4]
    assert g4[0] == pytest.approx(0.34959, abs=1e-5)
    np.testing.assert_allclose(q, want, rtol=1e-6)
    assert q[0] == pytest.approx(0.12007, abs=1e-5) and q[1] == pytest.approx(1 / (1 + math.exp(-5)))


def test_accuracy_predictor_hand_case():
    """Readings R5 + R8 end to end on hand numbers: an evaluation set with entropies
    (0, 0.5, 1.5, 2.0) is min-max normalised within the set to (0, .25, .75, 1); FD 9 with the
    meta-sets' FD range [1, 5] is clipped to 1. The chain oracle (a = -20, c = 5) scores
    sigmoid(5 - 20 GELU^4(h)): GELU^4 = (0, .02313, .16799, .34959) -> q = (.99331, .98941, .83757, .12007):
    3 of 4 above tau = 0.5 -> predicted accuracy 75 %; above tau = 0.9 only 2 -> 50 %."""
    meta = np.zeros((4, 6))
    meta[:, 0] = [0.0, 1.0, 2.0, 3.0]
    meta[:, 5] = [1.0, 1.0, 5.0, 5.0]
    norm = fit_normaliser(meta, COLUMNS, "pooled")
    ev = np.zeros((4, 6))
    ev[:, 0] = [0.0, 0.5, 1.5, 2.0]
    ev[:, 5] = 9.0
    xe = norm.transform_eval(ev)
    np.testing.assert_allclose(xe[:, 0], [0.0, 0.25, 0.75, 1.0], atol=1e-15)
    np.testing.assert_array_equal(xe[:, 5], 1.0)
    np.testing.assert_array_equal(xe[:, 1:5], 0.0)  # zero-range columns -> 0 (reading R5)
    q = orc.predict_scores(_chain_oracle(-20.0, 5.0), xe)
    np.testing.assert_allclose(q, [0.99331, 0.98941, 0.83757, 0.12007], atol=1e-5)
    assert set_accuracy(q, 0.5) == 75.0 and set_accuracy(q, 0.9) == 50.0
    # FD inside the meta-set range: (4 - 1) / (5 - 1) = 0.75, not clipped
    ev[:, 5] = 4.0
    np.testing.assert_array_equal(norm.transform_eval(ev)[:, 5], 0.75)


def test_select_tau_hand_case():
    """Reading R8: tau from {0.45, 0.5, 0.55} by the lowest validation RMSE, ties to the first.
    Two sets, true 50 % and 100 %. Set 1 q = (.4, .47, .52, .6): 75 / 50 / 25 % at the three tau;
    set 2 q = (.46, .51, .56, .9): 100 / 75 / 50 %. RMSE: tau .45 -> sqrt((25^2 + 0)/2) = 17.68,
    .5 -> sqrt((0 + 25^2)/2) = 17.68, .55 -> sqrt((25^2 + 50^2)/2) = 39.53: a tie, so 0.45."""
    s1, s2 = np.array([0.4, 0.47, 0.52, 0.6]), np.array([0.46, 0.51, 0.56, 0.9])
    tau, table = select_tau([s1, s2], np.array([50.0, 100.0]), [0.45, 0.5, 0.55])
    assert table[0.45] == pytest.approx(25 / math.sqrt(2)) == table[0.5]
    assert table[0.55] == pytest.approx(math.sqrt((25**2 + 50**2) / 2))
    assert tau == 0.45
    tau, _ = select_tau([s1, s2], np.array([50.0, 100.0]), [0.55, 0.5, 0.45])
    assert tau == 0.5  # the first of the tied values in grid order
    tau, _ = select_tau([s1, s2], np.array([25.0, 50.0]), [0.45, 0.5, 0.55])
    assert tau == 0.55  # exact there: RMSE 0


def test_table5_constant_predictor_hand_case():
    """Paper Table 5: the 'without normalisation' oracle saying 'correct' for every
    sample predicts 100 % on every set, so its RMSE is the constant-100 % RMSE. True (70, 64):
    sqrt((30^2 + 36^2) / 2) = sqrt(1098) = 33.136 (the paper's 32.99 / 33.96 are of this kind:
    they imply a mean validation accuracy of at least 100 - 32.99 = 67.01 %)."""
    names = ["v0", "v1"]
    table = IndicatorTable(
        x=np.zeros((2, 6)), correct=np.zeros(2), set_id=np.arange(2), sets=names,
        kinds=["val", "val"], acc=np.array([70.0, 64.0]), scores={},
    )
    exact = {"v0": np.array([0.9] * 7 + [0.1] * 3), "v1": np.array([0.9] * 16 + [0.1] * 9)}
    q = {"ora_a": [exact], "no_norm": [{n: np.full(10, 0.99) for n in names}]}
    agg = {"mode": "threshold", "tau": "fixed", "tau_grid": [0.5], "fixed_tau": 0.5}
    t5 = rep.table5([rep.ModelResults("m", table, {}, q)], agg).set_index("setting")
    assert t5.loc["with normalisation", "rmse"] == 0.0
    assert t5.loc["without normalisation", "rmse"] == pytest.approx(math.sqrt(1098.0))
    assert t5.loc["constant 100 % predictor", "rmse"] == pytest.approx(33.1361, abs=1e-4)
    assert t5.loc["without normalisation", "pred_spread"] == 0.0
    # the paper's bound: RMSE of (100 - a) >= 100 - mean(a), so mean(a) >= 100 - RMSE
    for paper in rep.PAPER_TABLE5["without normalisation"]:
        assert 100 - paper == pytest.approx(67.0, abs=1.1)
