"""Numerics shared by every layer: softmax and entropy, implemented once.

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


def entropy(probs: np.ndarray) -> np.ndarray:
    """Shannon entropy ``-sum_k p_k ln p_k`` of each row of (N, K) probabilities, in float64.

    Rows are normalised to sum 1 first and 0 ln 0 = 0, as ``scipy.stats.entropy`` on each row.
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"entropy: probs must be (N, K), got shape {p.shape}")
    p = p / p.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log(p), 0.0)
    return terms.sum(axis=1)
