"""Arrays the registry's methods share per stack (``arrays.memo``): each method must still get
its own stack's and its own model's values, equal to the per-model functions it called before
the share, whatever the order of the calls."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from labelfree.laf.baselines import ces_select, crc_scores
from labelfree.methods import estimators as E
from labelfree.methods import fewlabel as F
from labelfree.methods.registry import _guide, call
from labelfree.numerics import plogp_rows, softmax


def _stack(seed, M=4, N=400, K=7, dtype=np.float64):
    r = np.random.default_rng(seed)
    y = r.integers(0, K, N)
    z = r.normal(size=(M, N, K)) * (1.0 + 0.3 * np.arange(M))[:, None, None]
    z += (0.5 + 0.5 * np.arange(M))[:, None, None] * np.eye(K)[y]
    # rows summing to 0.5..1: the normalised rows (ATC-SYP, Entropy) then differ from the
    # eps rows (ATC-NE), so a share keyed without (eps, normalise) is caught
    return (softmax(z) * r.uniform(0.5, 1.0, size=(M, N, 1))).astype(dtype), y


def _want(name, P, Ps, ys):
    """The per-model value each method computed before the share."""
    M, N = P.shape[:2]
    if name == "AC":
        return [E.average_confidence(P[m]) for m in range(M)]
    if name in ("ATC-MC", "ATC-NE"):
        with warnings.catch_warnings():  # model 0: no source error, threshold 0.0 (warned)
            warnings.simplefilter("ignore")
            return [E.atc(P[m], Ps[m], ys, score=name[-2:]) for m in range(M)]
    if name == "ATC-SYP":
        out = []
        for m in range(M):
            err = 1.0 - float(np.mean(Ps[m].argmax(1) == ys))
            k = min(int(round(err * Ps.shape[1])), Ps.shape[1] - 1)
            out.append(E.kth_and_count(Ps[m], k, P[m], normalise=True)[1] / N)
        return out
    if name == "Entropy":
        return [float(plogp_rows(P[m], normalise=True).mean()) for m in range(M)]
    return crc_scores(P.max(axis=2).T, "mean" if name == "CRC-mean" else "pairwise")


KINDS = {"AC": "estimate", "ATC-MC": "estimate", "ATC-NE": "estimate", "ATC-SYP": "estimate",
         "Entropy": "rank", "CRC-mean": "rank", "CRC-pairwise": "rank"}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_shared_maxima_and_entropy_rows_equal_per_model_calls(dtype):
    # two targets against one source, the methods called in an interleaved order, so that a
    # share keyed too loosely (by shape, without eps/normalise, or without the model index)
    # hands a method another stack's or another model's rows; model 0 makes no source error
    # (ATC's threshold 0.0 branch), the others some
    Ps, _ = _stack(0, dtype=dtype)
    ys = Ps[0].argmax(axis=1)
    T = [_stack(s, dtype=dtype)[0] for s in (1, 2)]
    order = [("ATC-SYP", 0), ("Entropy", 1), ("ATC-NE", 1), ("Entropy", 0), ("ATC-SYP", 1),
             ("ATC-MC", 0), ("AC", 1), ("CRC-mean", 0), ("ATC-NE", 0), ("AC", 0),
             ("CRC-pairwise", 1), ("ATC-MC", 1), ("CRC-pairwise", 0), ("CRC-mean", 1)]
    for name, t in order:
        P = T[t]
        got = call(KINDS[name], name, P, source_probs=Ps, source_labels=ys)
        np.testing.assert_array_equal(got, np.asarray(_want(name, P, Ps, ys), dtype=np.float64),
                                      err_msg=f"{name} on target {t}")
    # other source labels on the same stacks: thresholds are not kept across labels
    ys2 = np.roll(ys, 5)
    for name in ("ATC-MC", "ATC-NE", "ATC-SYP"):
        got = call("estimate", name, T[0], source_probs=Ps, source_labels=ys2)
        np.testing.assert_array_equal(got, _want(name, T[0], Ps, ys2), err_msg=name)


def test_ces_labels_equal_one_select_call_per_run_and_budget():
    # CES+labels computes the zoo's guide once for every (run, budget): the accuracies on the
    # picks must equal those of call("select", "CES", ...) per pair, with and without features
    P, y = _stack(3, M=3, N=300)
    feats = [np.random.default_rng(m).normal(size=(300, 5)) for m in range(3)]
    budgets, runs, seed = [10, 20], 2, 4
    for ctx in ({}, {"features": feats}):
        got = call("fewlabel", "CES+labels", P, y, budgets, seed, runs, **ctx)
        for r in range(runs):
            for j, b in enumerate(budgets):
                idx = call("select", "CES", P, b, seed + 1000 * r + j, **ctx)
                np.testing.assert_array_equal(
                    got.accuracy[r, j], F.labelled_accuracy(P.argmax(2), idx, y[idx]))
                np.testing.assert_array_equal(
                    idx, ces_select(_guide(P, ctx), b, np.random.default_rng(seed + 1000 * r + j)))
