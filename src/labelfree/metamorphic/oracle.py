"""Oracles, voting and verdicts of MR-1 / MR-2 (the paper's Sections 3 and 4.4;
docs/metamorphic.md, readings R6-R8).

Probabilities are arrays: source ``p_s`` (N, K); follow-ups ``p_o`` / ``p_b`` (N, n_colours, K).
Single-label: softmax, certainty ``C(p) = p_(1) - p_(2)``. Multi-label: per-class sigmoid,
predicted set ``{k : p_k > tau}`` (``>=`` as the paper's switch), certainty ``|2p - 1|``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class OracleError(ValueError):
    """Invalid oracle options or mismatched probability arrays."""


@dataclass(frozen=True)
class OracleOptions:
    """Options of the oracle (docs/metamorphic.md, reading R6; defaults = the authors' code).

    - ``mr1_equal_certainty``: ``violation`` (strict decrease required, code) or ``satisfied``.
    - ``single_mr2_reference``: ``gt`` (code) or ``pred``; equal on correct sources.
    - ``ml_threshold``: tau of the multi-label model; ``ml_threshold_cmp`` ``>`` (code) or ``>=``.
    - ``ml_certainty``: ``abs_2p_minus_1`` (paper) or ``raw_p`` (code; equal for tau >= 0.5).
    - ``vote_k``: colours that must fail; ``None`` = floor(n/2) + 1.
    """

    mr1_equal_certainty: str = "violation"
    single_mr2_reference: str = "gt"
    ml_threshold: float = 0.5
    ml_threshold_cmp: str = ">"
    ml_certainty: str = "abs_2p_minus_1"
    vote_k: int | None = None

    def __post_init__(self) -> None:
        checks = {
            "mr1_equal_certainty": (self.mr1_equal_certainty, ("violation", "satisfied")),
            "single_mr2_reference": (self.single_mr2_reference, ("gt", "pred")),
            "ml_threshold_cmp": (self.ml_threshold_cmp, (">", ">=")),
            "ml_certainty": (self.ml_certainty, ("abs_2p_minus_1", "raw_p")),
        }
        for key, (value, allowed) in checks.items():
            if value not in allowed:
                raise OracleError(f"metamorphic.{key}: {value!r} is not one of {list(allowed)}")
        if not 0.0 <= self.ml_threshold <= 1.0:
            raise OracleError(f"metamorphic.ml_threshold: {self.ml_threshold} not in [0, 1]")


def sigmoid(logits: np.ndarray) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    return 0.5 * (1.0 + np.tanh(0.5 * z))


# --------------------------------------------------------------------------------------------
# single-label (the paper's Section 4.4)
# --------------------------------------------------------------------------------------------


def certainty_single(p: np.ndarray) -> np.ndarray:
    """``C(p) = p_(1) - p_(2)`` along the last axis (the paper's Section 4.4.1)."""
    top2 = np.partition(np.asarray(p), -2, axis=-1)[..., -2:]
    return top2[..., 1] - top2[..., 0]


def mr1_single_ok(p_s: np.ndarray, p_o: np.ndarray, equal_certainty: str = "violation") -> np.ndarray:
    """MR-1 satisfied per colour (N, n): label changed, or certainty strictly decreased.

    ``equal_certainty='satisfied'`` accepts ``C(p_s) >= C(p_o)`` (the paper's looser reading).
    """
    lab = p_s.argmax(axis=-1)[:, None]
    changed = p_o.argmax(axis=-1) != lab
    cs, co = certainty_single(p_s)[:, None], certainty_single(p_o)
    less = cs > co if equal_certainty == "violation" else cs >= co
    return changed | less


def mr2_single_ok(p_b: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """MR-2 satisfied per colour (N, n): follow-up top-1 equals the reference label."""
    return p_b.argmax(axis=-1) == np.asarray(reference)[:, None]


# --------------------------------------------------------------------------------------------
# multi-label (the paper's Section 4.4)
# --------------------------------------------------------------------------------------------


def predicted_set(p: np.ndarray, tau: float, cmp: str = ">") -> np.ndarray:
    """Multi-hot predicted set ``p > tau`` (code) or ``p >= tau`` (paper)."""
    return p > tau if cmp == ">" else p >= tau


def certainty_multi(p: np.ndarray, kind: str = "abs_2p_minus_1") -> np.ndarray:
    """Per-label certainty ``|2p - 1|`` (paper) or raw ``p`` (code)."""
    return np.abs(2.0 * p - 1.0) if kind == "abs_2p_minus_1" else np.asarray(p, dtype=np.float64)


def mr1_multi_ok(
    p_s: np.ndarray,
    p_o: np.ndarray,
    tau: float,
    cmp: str = ">",
    certainty: str = "abs_2p_minus_1",
    equal_certainty: str = "violation",
) -> np.ndarray:
    """MR-1 satisfied per colour (N, n): sets differ, or equal sets and every label of L_s less
    certain; an empty L_s passes vacuously (the code's ``.all()`` on an empty array)."""
    ls = predicted_set(p_s, tau, cmp)[:, None, :]
    lo = predicted_set(p_o, tau, cmp)
    differ = (ls != lo).any(axis=-1)
    cs = certainty_multi(p_s, certainty)[:, None, :]
    co = certainty_multi(p_o, certainty)
    less = cs > co if equal_certainty == "violation" else cs >= co
    all_less = (less | ~ls).all(axis=-1)
    return differ | all_less


def mr2_multi_ok(p_b: np.ndarray, reference_set: np.ndarray, tau: float, cmp: str = ">") -> np.ndarray:
    """MR-2 satisfied per colour (N, n): the follow-up's predicted set equals the reference set."""
    lb = predicted_set(p_b, tau, cmp)
    return (lb == np.asarray(reference_set, dtype=bool)[:, None, :]).all(axis=-1)


# --------------------------------------------------------------------------------------------
# voting and verdicts (reading R7)
# --------------------------------------------------------------------------------------------


def vote_threshold(n_colours: int, vote_k: int | None = None) -> int:
    """Colours that must fail for a violation: floor(n/2) + 1 (2 of 3, 8 of 15); even n refused."""
    if n_colours < 1 or n_colours % 2 == 0:
        raise OracleError(f"majority vote needs an odd number of colours, got {n_colours}")
    k = n_colours // 2 + 1 if vote_k is None else int(vote_k)
    if not 1 <= k <= n_colours:
        raise OracleError(f"vote_k={k} not in [1, {n_colours}]")
    return k


def vote(ok: np.ndarray, vote_k: int | None = None) -> np.ndarray:
    """Violated iff the check fails for at least ``vote_k`` colours; ``ok`` is (N, n)."""
    ok = np.asarray(ok, dtype=bool)
    k = vote_threshold(ok.shape[1], vote_k)
    return (~ok).sum(axis=1) >= k


@dataclass(frozen=True)
class Verdicts:
    """Per-image verdicts of one model on one source set (the per-image verdict table).

    ``mr1``/``mr2``/``mr12`` are flags over *all* images (RQ5); the published counts are the
    flags AND ``correct`` (RQ1-RQ4, RQ6).
    """

    pred: np.ndarray  # (N,) label or (N, K) bool set
    correct: np.ndarray  # (N,) bool
    certainty: np.ndarray  # (N,) source certainty (single) or min |2p-1| over L_s (multi)
    mr1_ok: np.ndarray  # (N, n) per-colour satisfaction bits
    mr2_ok: np.ndarray
    mr1: np.ndarray  # (N,) violated
    mr2: np.ndarray
    mr12: np.ndarray
    has_region: np.ndarray

    def __len__(self) -> int:
        return len(self.correct)


def evaluate(
    task: str,
    p_s: np.ndarray,
    p_o: np.ndarray,
    p_b: np.ndarray,
    y: np.ndarray,
    has_region: np.ndarray | None = None,
    options: OracleOptions | None = None,
) -> Verdicts:
    """Verdicts for every image (the paper's Section 4.4), vectorised over images and colours.

    ``task`` ``single`` (probabilities = softmax) or ``multi`` (sigmoids); ``y`` GT labels (N,)
    or multi-hot (N, K). Images without a region are never flagged but stay in every count.
    """
    opt = options or OracleOptions()
    p_s, p_o, p_b = (np.asarray(a, dtype=np.float64) for a in (p_s, p_o, p_b))
    n = len(p_s)
    if p_o.shape != p_b.shape or p_o.shape[0] != n or p_o.shape[2] != p_s.shape[1]:
        raise OracleError(f"shapes differ: source {p_s.shape}, obj {p_o.shape}, bg {p_b.shape}")
    has = np.ones(n, dtype=bool) if has_region is None else np.asarray(has_region, dtype=bool)
    if task == "single":
        pred = p_s.argmax(axis=1)
        y = np.asarray(y)
        if y.ndim != 1:
            raise OracleError(f"single-label task needs y of shape (N,), got {y.shape}")
        correct = pred == y
        cert = certainty_single(p_s)
        mr1_ok = mr1_single_ok(p_s, p_o, opt.mr1_equal_certainty)
        ref = y if opt.single_mr2_reference == "gt" else pred
        mr2_ok = mr2_single_ok(p_b, ref)
    elif task == "multi":
        tau, cmp = opt.ml_threshold, opt.ml_threshold_cmp
        pred = predicted_set(p_s, tau, cmp)
        y = np.asarray(y).astype(bool)
        if y.shape != pred.shape:
            raise OracleError(f"multi-label y {y.shape} does not match outputs {pred.shape}")
        correct = (pred == y).all(axis=1)
        c = certainty_multi(p_s, opt.ml_certainty)
        cert = np.where(pred, c, np.inf).min(axis=1)
        cert = np.where(np.isinf(cert), np.nan, cert)
        mr1_ok = mr1_multi_ok(p_s, p_o, tau, cmp, opt.ml_certainty, opt.mr1_equal_certainty)
        mr2_ok = mr2_multi_ok(p_b, pred, tau, cmp)
    else:
        raise OracleError(f"task {task!r} is not 'single' or 'multi'")
    mr1 = vote(mr1_ok, opt.vote_k) & has
    mr2 = vote(mr2_ok, opt.vote_k) & has
    return Verdicts(pred, correct, cert, mr1_ok, mr2_ok, mr1, mr2, mr1 & mr2, has)


def split_followup_outputs(
    out: np.ndarray, n_colours: int, n_sources: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Variant-major outputs (V*N, K) of a follow-up set -> source (N, K), obj and bg (N, n, K)."""
    v = 1 + 2 * n_colours
    if out.shape[0] != v * n_sources:
        raise OracleError(
            f"follow-up outputs have {out.shape[0]} rows, expected {v} variants x {n_sources}"
        )
    blocks = out.reshape(v, n_sources, -1)
    src = blocks[0]
    obj = np.transpose(blocks[1 : 1 + n_colours], (1, 0, 2))
    bg = np.transpose(blocks[1 + n_colours :], (1, 0, 2))
    return src, obj, bg
