"""Array conventions shared by every method (docs/methods.md, reading R1).

A zoo's outputs on one set are a stack ``probs`` (M, N, K): M models, N inputs (same order for every
model), K classes. Lists of (N, K) arrays are accepted and stacked. Probabilities are float64 when a
method computes with them; storage may stay float32 (converted one model at a time).
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np


class MethodInputError(ValueError):
    """An array given to a method has the wrong shape, values or companion arrays."""


def stack(probs: np.ndarray | Sequence[np.ndarray], name: str = "probs") -> np.ndarray:
    """(M, N, K) view or stack of per-model (N, K) arrays; dtype kept (float32 stays float32)."""
    if isinstance(probs, np.ndarray):
        P = probs
    else:
        arrs = [np.asarray(p) for p in probs]
        if not arrs:
            raise MethodInputError(f"{name}: no model given")
        shapes = {a.shape for a in arrs}
        if len(shapes) != 1:
            raise MethodInputError(f"{name}: models differ in shape {sorted(shapes)}")
        P = np.stack(arrs)
    if P.ndim == 2:
        P = P[None]
    if P.ndim != 3:
        raise MethodInputError(f"{name}: expected (M, N, K) or a list of (N, K), got shape {P.shape}")
    if P.shape[1] < 1 or P.shape[2] < 2:
        raise MethodInputError(f"{name}: need N >= 1 inputs and K >= 2 classes, got {P.shape[1:]}")
    if not np.issubdtype(P.dtype, np.floating):
        P = P.astype(np.float64)
    return P


_MEMO: dict[int, dict[Hashable, Any]] = {}
_MEMO_LOCK = threading.Lock()


def memo(arr: np.ndarray, key: Hashable, fn: Callable[[], Any]) -> Any:
    """``fn()``, computed once per (array object, key) while the array lives: the methods of a
    scorecard share what they derive from one set's stack (its argmax, the models' pairwise
    agreement, COT's transports) and, through the source set's stack, what they derive from the
    source once per zoo. Entries are dropped when the array is garbage collected; an array
    changed in place after a call would get stale values (the scorecard never changes them).
    Results are returned as stored: callers must not modify them."""
    if not isinstance(arr, np.ndarray):
        return fn()
    i = id(arr)
    with _MEMO_LOCK:
        box = _MEMO.get(i)
        if box is None:
            box = _MEMO[i] = {}
            weakref.finalize(arr, _MEMO.pop, i, None)
        if key in box:
            return box[key]
    val = fn()
    with _MEMO_LOCK:
        if _MEMO.get(i) is box:
            box.setdefault(key, val)
    return val


def predictions(P: np.ndarray) -> np.ndarray:
    """Argmax predictions (M, N) int64, ties to the lowest index (reading R1); one argmax per
    array object (:func:`memo`), read-only."""
    def f() -> np.ndarray:
        Y = np.asarray(P).argmax(axis=-1).astype(np.int64)
        Y.flags.writeable = False
        return Y

    return memo(P, "predictions", f)


def accuracy(P: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """True accuracy of every model, ``mean(argmax P[m] == y)`` (reading R2): (M, N, K) -> (M,)."""
    y = np.asarray(labels)
    return (predictions(stack(P)) == y[None, :]).mean(axis=1)


def check_labels(labels: np.ndarray, n: int, K: int, name: str = "labels") -> np.ndarray:
    """Labels (n,) int64 in 0..K-1."""
    y = np.asarray(labels)
    if y.ndim != 1 or len(y) != n:
        raise MethodInputError(f"{name}: expected ({n},) class ids, got shape {y.shape}")
    if (y.size and not np.issubdtype(y.dtype, np.integer)
            and (not np.all(np.isfinite(y)) or np.any(np.round(y) != y))):
        raise MethodInputError(f"{name}: labels must be integer class ids")
    y = y.astype(np.int64)
    if y.size and (y.min() < 0 or y.max() >= K):
        raise MethodInputError(f"{name}: labels outside 0..{K - 1} (min {y.min()}, max {y.max()})")
    return y


def n_workers() -> int:
    """Threads a method may use over models: the CPUs this process may run on, capped by
    ``OMP_NUM_THREADS`` when it is set (as BLAS is)."""
    n = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.isdigit() and int(env) > 0:
        n = min(n, int(env))
    return max(1, n)
