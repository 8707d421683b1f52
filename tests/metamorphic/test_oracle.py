"""Oracles, voting and invariants: metamorphic.md section 8, checks 4-8 and 11."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.metamorphic import analysis as an
from labelfree.metamorphic import oracle as orc
from labelfree.numerics import softmax


def P(*rows):
    return np.asarray(rows, dtype=np.float64)


# ---- 8.4 single-label MR-1 ------------------------------------------------------------------


def test_single_mr1_cases():
    src = P([0.6, 0.3, 0.1])  # label 0, certainty 0.3
    fol = P([0.2, 0.7, 0.1], [0.5, 0.3, 0.2], [0.6, 0.3, 0.1], [0.8, 0.1, 0.1])[None]
    ok = orc.mr1_single_ok(src, fol)
    # label changed; lower certainty; equal certainty -> violated; higher certainty -> violated
    assert ok.tolist() == [[True, True, False, False]]
    loose = orc.mr1_single_ok(src, fol, equal_certainty="satisfied")
    assert loose.tolist() == [[True, True, True, False]]


def test_certainty_is_top1_minus_top2():
    assert orc.certainty_single(P([0.1, 0.6, 0.3])).tolist() == pytest.approx([0.3])


# ---- 8.5 multi-label MR-1 -----------------------------------------------------------------


def test_multi_mr1_cases():
    tau = 0.5
    src = P([0.9, 0.8, 0.1])  # L_s = {0, 1}
    fol = P(
        [0.9, 0.2, 0.1],  # different set -> satisfied
        [0.7, 0.6, 0.1],  # equal set, every label less certain -> satisfied
        [0.95, 0.6, 0.1],  # label 0 more certain -> violated
        [0.9, 0.6, 0.1],  # label 0 equally certain -> violated
    )[None]
    ok = orc.mr1_multi_ok(src, fol, tau)
    assert ok.tolist() == [[True, True, False, False]]
    # empty L_s: equal (empty) sets pass vacuously
    empty = orc.mr1_multi_ok(P([0.1, 0.2, 0.3]), P([0.2, 0.1, 0.4])[None], tau)
    assert empty.tolist() == [[True]]


def test_abs_2p_minus_1_agrees_with_raw_p_for_tau_at_least_half():
    r = np.random.default_rng(1)
    for tau in (0.5, 0.6, 0.7):
        src = r.random((400, 6))
        fol = r.random((400, 3, 6))
        a = orc.mr1_multi_ok(src, fol, tau, certainty="abs_2p_minus_1")
        b = orc.mr1_multi_ok(src, fol, tau, certainty="raw_p")
        assert np.array_equal(a, b)


# ---- 8.6 MR-2 set equality and the strict '>' ---------------------------------------------


def test_mr2_set_equality_and_threshold_comparison():
    ref = np.array([[True, False, False]])
    fol = P([0.9, 0.5, 0.2], [0.9, 0.6, 0.2])[None]
    assert orc.mr2_multi_ok(fol, ref, 0.5, ">").tolist() == [[True, False]]
    # p = tau joins the set under the paper's '>=': the first follow-up now differs
    assert orc.mr2_multi_ok(fol, ref, 0.5, ">=").tolist() == [[False, False]]
    assert orc.predicted_set(P([0.5]), 0.5, ">").tolist() == [[False]]
    # single-label MR-2: follow-up top-1 equals the reference
    assert orc.mr2_single_ok(P([0.2, 0.8], [0.9, 0.1])[None], np.array([1])).tolist() == [[True, False]]


# ---- 8.7 voting ------------------------------------------------------------------------------


def test_vote_two_of_three_and_eight_of_fifteen():
    ok3 = np.array([[True, True, True], [False, True, True], [False, False, True], [False] * 3])
    assert orc.vote(ok3).tolist() == [False, False, True, True]
    ok15 = np.ones((2, 15), dtype=bool)
    ok15[0, :7] = False
    ok15[1, :8] = False
    assert orc.vote(ok15).tolist() == [False, True]
    assert orc.vote_threshold(3) == 2 and orc.vote_threshold(15) == 8
    with pytest.raises(orc.OracleError, match="odd"):
        orc.vote(np.ones((1, 4), dtype=bool))


def test_bad_options_raise():
    with pytest.raises(orc.OracleError, match="ml_threshold_cmp"):
        orc.OracleOptions(ml_threshold_cmp="<")


# ---- 8.8 invariants and RQ5 references -----------------------------------------------------


def _random_verdicts(task, seed, n=500, k=5):
    r = np.random.default_rng(seed)
    logits = r.normal(0, 2, (n, 7, k))
    p = softmax(logits) if task == "single" else orc.sigmoid(logits)
    y = r.integers(0, k, n) if task == "single" else (r.random((n, k)) < 0.4).astype(np.int64)
    has = r.random(n) < 0.95
    return orc.evaluate(task, p[:, 0], p[:, 1:4], p[:, 4:7], y, has), p, y


@pytest.mark.parametrize("task", ["single", "multi"])
def test_invariants(task):
    v, _, _ = _random_verdicts(task, 3)
    row = an.summary_row(v)
    assert row["MR1&2_correct"] <= min(row["MR1_correct"], row["MR2_correct"]) <= row["acc_num"]
    for mr in an.MRS:
        assert row[mr] + row[f"non_{mr}"] == row["n"]  # Unreliable and Reliable partition
        w = row[mr] / row["n"]
        acc_u = row[f"{mr}_acc"] if row[mr] else 0.0
        assert row["acc"] == pytest.approx(w * acc_u + (1 - w) * row[f"non_{mr}_acc"])
    assert not (v.mr1 & ~v.has_region).any() and not (v.mr2 & ~v.has_region).any()


def test_incorrect_sources_use_gt_or_pred_for_single_mr2():
    src = P([0.7, 0.2, 0.1])  # predicts 0, GT is 1 (incorrect)
    bg = np.repeat(P([0.7, 0.2, 0.1])[None], 3, axis=1)  # follow-ups keep predicting 0
    obj = np.repeat(P([0.1, 0.8, 0.1])[None], 3, axis=1)
    gt = orc.evaluate("single", src, obj, bg, np.array([1]))
    pred = orc.evaluate("single", src, obj, bg, np.array([1]),
                        options=orc.OracleOptions(single_mr2_reference="pred"))
    assert gt.mr2.tolist() == [True] and pred.mr2.tolist() == [False]
    assert not gt.correct[0]


def test_split_followup_outputs_roundtrip():
    n, c, k = 4, 3, 5
    out = np.arange((1 + 2 * c) * n * k, dtype=float).reshape(-1, k)
    s, o, b = orc.split_followup_outputs(out, c, n)
    assert s.shape == (n, k) and o.shape == (n, c, k) and b.shape == (n, c, k)
    assert np.array_equal(o[2, 1], out[(1 + 1) * n + 2])
    assert np.array_equal(b[3, 2], out[(1 + c + 2) * n + 3])
    with pytest.raises(orc.OracleError, match="rows"):
        orc.split_followup_outputs(out[:-1], c, n)


# ---- 8.11 determinism ------------------------------------------------------------------------


def test_verdicts_are_deterministic():
    a, _, _ = _random_verdicts("single", 7)
    b, _, _ = _random_verdicts("single", 7)
    for f in ("mr1_ok", "mr2_ok", "mr1", "mr2", "mr12", "correct"):
        assert getattr(a, f).tobytes() == getattr(b, f).tobytes()
