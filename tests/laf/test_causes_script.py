"""docs/paper-vs-ours/laf-causes.py: the decorrelation that its part ``decorrelate`` rests on
(docs/laf.md, experiment 5) keeps what it claims to keep and moves what it claims to move."""

import importlib.util
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "paper-vs-ours" / "laf-causes.py"


def _script():
    spec = importlib.util.spec_from_file_location("laf_causes", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _zoo(n=3000, m=8, K=10, seed=0):
    """Models that err together: every model is wrong on the same hard inputs (plus a few of
    its own), always with the label 0 or 1 (a shared confusion)."""
    g = np.random.default_rng(seed)
    y = g.integers(2, K, n)
    hard = g.random(n) < 0.3
    yhat = np.repeat(y[:, None], m, axis=1)
    own = g.random((n, m)) < np.linspace(0.0, 0.2, m)
    wrong = hard[:, None] | own
    yhat[wrong] = g.integers(0, 2, wrong.sum())
    return yhat, y


def test_decorrelation_keeps_accuracy_per_class_and_confusions_and_moves_errors():
    mod = _script()
    yhat, y = _zoo()
    out = mod.decorrelated(yhat, y, 1.0, np.random.default_rng(1))
    for k in np.unique(y):
        rows = y == k
        # each model's predictions on class k are a permutation of its own: accuracy and
        # confusions per class unchanged
        assert np.array_equal(np.sort(out[rows], axis=0), np.sort(yhat[rows], axis=0))
    err0, err1 = yhat != y[:, None], out != y[:, None]
    both = lambda e: (e[:, 0] & e[:, 1]).mean()  # noqa: E731
    # errors no longer fall on the same inputs: the joint error rate of two models drops to
    # about the product of their rates
    assert both(err0) > 0.25
    assert abs(both(err1) - err1[:, 0].mean() * err1[:, 1].mean()) < 0.02
    # share 0 is the identity
    assert np.array_equal(mod.decorrelated(yhat, y, 0.0, np.random.default_rng(1)), yhat)
