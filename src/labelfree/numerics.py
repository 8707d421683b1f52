"""Numerics shared by every layer: softmax, entropy and ``sum p ln p``, implemented once.

Every study, method and the answer call these, so a change of convention (dtype, the maximum
subtracted before ``exp``, 0 ln 0 = 0) reaches all of them at once.
"""

from __future__ import annotations

import numpy as np

#: Rows per block of :func:`softmax32`: bounds the float64 temporaries of one model's softmax.
SOFTMAX_ROWS = 8192


def softmax(logits: np.ndarray, axis: int = -1, dtype: type = np.float64) -> np.ndarray:
    """Softmax along ``axis`` computed in ``dtype`` (float64 by default), with the maximum
    subtracted before ``exp`` so large logits cannot overflow."""
    z = np.asarray(logits, dtype=dtype)
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def softmax32(logits: np.ndarray, rows: int = SOFTMAX_ROWS) -> np.ndarray:
    """Row-wise float32 softmax of (N, K) logits, block by block: each row is independent, so
    the result equals ``softmax(logits).astype(float32)`` exactly, with O(rows x K) float64."""
    out = np.empty(logits.shape, dtype=np.float32)
    for s in range(0, logits.shape[0], rows):
        out[s : s + rows] = softmax(logits[s : s + rows])
    return out


#: Rows per block of :func:`plogp_rows`: its two float64 buffers stay in the L2 cache.
PLOGP_ROWS = 64


def plogp_rows(probs: np.ndarray, eps: float = 0.0, normalise: bool = False) -> np.ndarray:
    """``sum_k p_k ln(p_k + eps)`` of each row of (N, K) ``probs``, in float64 (0 ln 0 = 0 when
    ``eps`` is 0); with ``normalise`` each row is first divided by its sum.

    Blocks of :data:`PLOGP_ROWS` rows go through two preallocated float64 buffers (a fresh
    multi-megabyte temporary per block costs its page faults); a block without zeros takes ``log``
    without the ``where`` mask. Each row's arithmetic is the plain per-row form: ``p / p.sum()``,
    ``log``, the products, and numpy's pairwise sum along the row, so a row's value does not
    depend on the block it falls in, and :func:`entropy` is its negation bit for bit.
    """
    A = np.asarray(probs)
    n, K = A.shape
    out = np.empty(n)
    rows = min(PLOGP_ROWS, max(n, 1))
    buf, lgb = np.empty((rows, K)), np.empty((rows, K))
    for s in range(0, n, rows):
        e = min(n, s + rows)
        p, lg = buf[: e - s], lgb[: e - s]
        np.copyto(p, A[s:e], casting="unsafe")  # = astype(float64)
        if normalise:
            np.divide(p, p.sum(axis=1, keepdims=True), out=p)
        if eps:
            np.add(p, eps, out=lg)
            np.log(lg, out=lg)
        elif p.min() > 0:
            np.log(p, out=lg)
        else:
            lg[...] = 0.0
            np.log(p, out=lg, where=p > 0)
        np.multiply(p, lg, out=lg)
        lg.sum(axis=1, out=out[s:e])
    return out


def entropy(probs: np.ndarray) -> np.ndarray:
    """Shannon entropy ``-sum_k p_k ln p_k`` of each row of (N, K) probabilities, in float64:
    ``-plogp_rows(probs, normalise=True)``.

    Rows are normalised to sum 1 first and 0 ln 0 = 0, as ``scipy.stats.entropy`` on each row
    (a one-hot row gives +0.0).
    """
    p = np.asarray(probs)
    if p.ndim != 2:
        raise ValueError(f"entropy: probs must be (N, K), got shape {p.shape}")
    return 0.0 - plogp_rows(p, normalise=True)  # 0.0 - x: +0.0 for a one-hot row, not -0.0
