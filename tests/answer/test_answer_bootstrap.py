"""The answer's bootstrap (sampling spread): every resample at once, equal bit for bit to the
per-resample computation it replaced (a registry call on each resampled stack; the input-major
mean of ``bootstrap_interval``)."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree import answer as A
from labelfree.numerics import softmax


def _case(m: int, n: int, k: int, seed: int = 1):
    """A zoo's target and source stacks where the fast path could differ from the slow one:
    rounded logits (tied scores and probabilities), a source model without an error (ATC's
    threshold 0.0), enough inputs for numpy's pairwise sum to differ from a running sum."""
    gen = np.random.default_rng(seed)
    lg = gen.normal(size=(m, n, k)) * 2
    lg[:, : n // 10] = np.round(lg[:, : n // 10])
    ys = gen.integers(0, k, 150)
    ps = softmax(gen.normal(size=(m, 150, k)) * 2)
    ps[0, np.arange(150), ys] = 0.99
    ps[0] /= ps[0].sum(axis=1, keepdims=True)
    idx = gen.integers(0, n, size=(40, n))
    return softmax(lg), {"source_probs": ps, "source_labels": ys}, idx


def _by_calls(name: str, probs: np.ndarray, ctx: dict, idx: np.ndarray) -> np.ndarray:
    """The replaced path: the registry's estimate on every resampled stack."""
    return np.stack([A._estimate(name, probs[:, i], ctx) for i in idx])


@pytest.mark.parametrize("name", sorted(A.SPREAD_ESTIMATORS))
@pytest.mark.parametrize("shape", [(7, 300, 10), (20, 257, 5), (2, 40, 3)])
def test_resampled_estimates_equal_the_registry_on_each_resample(name, shape, monkeypatch):
    # a small gather block: several blocks of resamples per call
    monkeypatch.setattr(A, "GATHER_CHUNK", 3 * shape[0] * shape[1])
    probs, ctx, idx = _case(*shape)
    np.testing.assert_array_equal(A.resampled_estimates(name, probs, ctx, idx),
                                  _by_calls(name, probs, ctx, idx))


@pytest.mark.parametrize("name", ["DoC", "ATC-MC", "GDE"])
def test_resampled_estimates_are_nan_where_the_registry_gives_none(name):
    probs, ctx, idx = _case(1, 50, 3)
    got = A.resampled_estimates(name, probs, {} if name != "GDE" else ctx, idx)
    assert got.shape == (40, 1) and np.isnan(got).all()
    np.testing.assert_array_equal(got, _by_calls(name, probs, {} if name != "GDE" else ctx, idx))
    wrong = {**ctx, "source_labels": ctx["source_labels"][:-1]}  # refused by the registry
    if name != "GDE":
        assert np.isnan(A.resampled_estimates(name, *_case(3, 50, 3)[:1], wrong, idx)).all()


def test_bootstrap_interval_equals_the_per_resample_means(monkeypatch):
    monkeypatch.setattr(A, "GATHER_CHUNK", 5 * 7 * 1078)
    x = softmax(np.random.default_rng(2).normal(size=(7, 1078, 10))).max(axis=2)
    idx = np.random.default_rng(3).integers(0, 1078, size=(200, 1078))
    ref = np.quantile(np.stack([x[:, i].mean(axis=1) for i in idx]), [0.025, 0.975], axis=0)
    lo, hi = A.bootstrap_interval(x, 200, 3)
    np.testing.assert_array_equal(lo, ref[0])
    np.testing.assert_array_equal(hi, ref[1])


def test_resampled_means_are_the_pairwise_row_means():
    x = np.random.default_rng(4).random((3, 5000))
    idx = np.random.default_rng(5).integers(0, 5000, size=(6, 5000))
    ref = np.array([[x[j][i].mean() for j in range(3)] for i in idx])
    np.testing.assert_array_equal(A.resampled_means(x, idx), ref)
