"""One registry of label-free and few-label methods, each with a uniform signature per kind.

Kinds and signatures (``probs`` is (M, N, K) or a list of M arrays (N, K); ``ctx`` holds the
optional companions ``logits`` (M, N, K), ``features`` (list of M (N, D_m)), ``source_probs``
(M, N_s, K), ``source_labels`` (N_s,), ``source_features`` (list of M (N_s, D_m))):

- ``rank``:     fn(probs, **ctx) -> (M,) scores, higher = predicted better;
- ``estimate``: fn(probs, **ctx) -> (M,) accuracy fractions; every estimator is also a ranker
  (registered as ``rank`` under the same name);
- ``select``:   fn(probs, budget, seed, **ctx) -> (budget,) indices of inputs to label;
- ``fewlabel``: fn(probs, labels, budgets, seed, n_runs, **ctx) -> :class:`FewLabelRuns` -- labels
  are read only at the indices the method queries.

A method declares what it needs (``needs``); :func:`call` checks it and names what is missing. The
five study packages never import this module; their methods are registered here.
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from labelfree.laf.baselines import ces_select, crc_scores, sds_pool, sds_sample
from labelfree.laf.core import rank as laf_rank
from labelfree.methods import cot as _cot
from labelfree.methods import estimators as E
from labelfree.methods import fewlabel as F
from labelfree.methods.arrays import MethodInputError, memo, n_workers, predictions, stack
from labelfree.numerics import plogp_rows
from labelfree.pace.core import PaceConfig
from labelfree.pace.core import fit as pace_fit
from labelfree.syp.baselines import doc_estimate

KINDS = ("rank", "estimate", "select", "fewlabel")
CTX_KEYS = ("logits", "features", "source_probs", "source_labels", "source_features")


@dataclass(frozen=True)
class Method:
    """A registered method: name, kind, function, what it needs, where it comes from."""

    name: str
    kind: str
    fn: Callable[..., Any]
    needs: frozenset[str] = frozenset()
    study: str = "methods"
    cite: str = ""
    note: str = ""


@dataclass(frozen=True)
class FewLabelRuns:
    """Outcome of a few-label method over R runs and the requested budgets (sorted ascending).

    accuracy: (R, B, M) estimated accuracy (NaN where the method estimates nothing);
    scores: (R, B, M) ranking scores; best: (R, B) returned model; used: (R, B) labels used.
    """

    budgets: tuple[int, ...]
    accuracy: np.ndarray
    scores: np.ndarray
    best: np.ndarray
    used: np.ndarray
    extra: dict[str, Any] = field(default_factory=dict)


REGISTRY: dict[tuple[str, str], Method] = {}


def register(name: str, kind: str, needs: Sequence[str] = (), study: str = "methods",
             cite: str = "", note: str = "") -> Callable[[Callable], Callable]:
    """Decorator adding ``fn`` to the registry under (kind, name)."""
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r} is not one of {KINDS}")

    def deco(fn: Callable) -> Callable:
        REGISTRY[(kind, name)] = Method(name, kind, fn, frozenset(needs), study, cite, note)
        if kind == "estimate":
            REGISTRY[("rank", name)] = Method(name, "rank", fn, frozenset(needs), study, cite,
                                              "ranks by its accuracy estimate")
        return fn

    return deco


def methods(kind: str | None = None) -> list[Method]:
    """Registered methods of one kind (all kinds if None), in registration order."""
    return [m for (k, _), m in REGISTRY.items() if kind is None or k == kind]


def get(kind: str, name: str) -> Method:
    try:
        return REGISTRY[(kind, name)]
    except KeyError:
        names = ", ".join(m.name for m in methods(kind))
        raise MethodInputError(f"no {kind} method {name!r}; known: {names}") from None


def missing(method: Method, ctx: dict[str, Any]) -> list[str]:
    """Companion arrays ``method`` needs that ``ctx`` lacks."""
    return sorted(k for k in method.needs if ctx.get(k) is None)


def call(kind: str, name: str, probs: Any, *args: Any, **ctx: Any) -> Any:
    """Run one registered method after checking its needs (uniform signature of its kind)."""
    m = get(kind, name)
    unknown = set(ctx) - set(CTX_KEYS)
    if unknown:
        raise MethodInputError(f"unknown context key(s) {sorted(unknown)}; known: {CTX_KEYS}")
    lack = missing(m, ctx)
    if lack:
        raise MethodInputError(f"{kind} {name!r} needs {', '.join(lack)}")
    return m.fn(stack(probs), *args, **ctx)


# ----------------------------------------------------------------------------------- helpers


def _each_threaded(P: np.ndarray, f: Callable[[int], float]) -> np.ndarray:
    """``f(m)`` for every model m on ``n_workers()`` threads, each with single-threaded BLAS (for
    work that releases the GIL: POT's ``ot.emd``, LAPACK, large NumPy kernels)."""
    return np.array(_map_threaded(P, f), dtype=np.float64)


def _map_threaded(P: np.ndarray, f: Callable[[int], Any]) -> list[Any]:
    """``[f(m) for m in range(M)]`` on ``n_workers()`` threads as :func:`_each_threaded`, any
    result type."""
    M = P.shape[0]
    w = min(M, n_workers())
    if w <= 1:
        return [f(m) for m in range(M)]
    with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(max_workers=w) as pool:
        return list(pool.map(f, range(M)))


def _src(ctx: dict[str, Any], P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    Ps = stack(ctx["source_probs"], "source_probs")
    ys = np.asarray(ctx["source_labels"])
    if Ps.shape[0] != P.shape[0] or Ps.shape[2] != P.shape[2]:
        raise MethodInputError(f"source_probs {Ps.shape} does not match probs {P.shape} (M, K)")
    if len(ys) != Ps.shape[1]:
        raise MethodInputError(f"source_labels has {len(ys)} entries for {Ps.shape[1]} inputs")
    return Ps, ys


def _logits_of(P: np.ndarray, m: int, ctx: dict[str, Any]) -> np.ndarray:
    """Model m's logits; fallback (flagged, docs/methods.md, reading R3): row-centred log-probabilities, the shift-free
    representative of the logits (MaNo's Taylor branch is not shift invariant, so this is not
    the model's own logits)."""
    if ctx.get("logits") is not None:
        return np.asarray(stack(ctx["logits"], "logits")[m], dtype=np.float64)
    return E.centred_log_probs(P[m])


def _maxprob(P: np.ndarray) -> np.ndarray:
    """(M, N) max-softmax probability of every model on every input, once per stack
    (``arrays.memo``): AC, ATC-MC and the CRC rankers read the same maxima; read-only."""
    def f() -> np.ndarray:
        mx = P.max(axis=2)
        mx.flags.writeable = False
        return mx

    return memo(P, "maxprob", f)


def _plogp(P: np.ndarray, eps: float = 0.0, normalise: bool = False) -> np.ndarray:
    """(M, N) ``plogp_rows(P[m], eps, normalise)`` of every model, once per stack
    (``arrays.memo``): the Entropy ranker and ATC-SYP read the same target rows (the negated
    entropy, ``normalise=True``), and the source rows serve every target set; read-only."""
    def f() -> np.ndarray:
        H = np.stack(_map_threaded(P, lambda m: plogp_rows(P[m], eps=eps, normalise=normalise)))
        H.flags.writeable = False
        return H

    return memo(P, ("plogp_rows", eps, normalise), f)


def _plogp_sorted(Ps: np.ndarray, eps: float = 0.0, normalise: bool = False) -> np.ndarray:
    """:func:`_plogp` of a source stack, each model's row sorted: ATC's threshold is one entry
    of it (``E.kth_and_count``), so the source is sorted once per zoo; read-only."""
    def f() -> np.ndarray:
        S = np.sort(_plogp(Ps, eps, normalise), axis=1)
        S.flags.writeable = False
        return S

    return memo(Ps, ("plogp_rows_sorted", eps, normalise), f)


def _kth_and_count(Ps: np.ndarray, m: int, k: int, P: np.ndarray, eps: float = 0.0,
                   normalise: bool = False) -> int:
    """``E.kth_and_count(Ps[m], k, P[m], eps, normalise)[1]``: on float32 stacks that function
    itself (its float32 screen computes few rows in float64); otherwise from the shared float64
    rows (:func:`_plogp`, :func:`_plogp_sorted`), which are the values its fallback computes:
    ``t = sort(plogp_rows(src))[k]``, then the target rows ``>= t`` counted."""
    if Ps.dtype == np.float32 and P.dtype == np.float32:
        return E.kth_and_count(Ps[m], k, P[m], eps=eps, normalise=normalise)[1]
    t = float(_plogp_sorted(Ps, eps, normalise)[m, k])
    return int(np.count_nonzero(_plogp(P, eps, normalise)[m] >= t))


# ------------------------------------------------------------------------ label-free estimators


@register("AC", "estimate", cite="Hendrycks & Gimpel, ICLR 2017 (average max-softmax confidence)")
def _ac(P: np.ndarray, **ctx: Any) -> np.ndarray:
    # E.average_confidence of each model: the mean of its maxima in float64
    mx = _maxprob(P)
    return np.array([mx[m].mean(dtype=np.float64) for m in range(P.shape[0])])


@register("DoC", "estimate", ["source_probs", "source_labels"], study="syp",
          cite="Guillory et al., ICCV 2021; syp.baselines.doc_estimate")
def _doc(P: np.ndarray, **ctx: Any) -> np.ndarray:
    Ps, ys = _src(ctx, P)
    return np.array([doc_estimate(P[m], Ps[m], float(np.mean(Ps[m].argmax(1) == ys))) / 100.0
                     for m in range(P.shape[0])])


@register("ATC-SYP", "estimate", ["source_probs", "source_labels"], study="syp",
          cite="Garg et al., ICLR 2022 as in syp.baselines.atc_garg_* (negative entropy)")
def _atc_syp(P: np.ndarray, **ctx: Any) -> np.ndarray:
    # syp.baselines.atc_garg_threshold/estimate with syp's entropy: numerics.plogp_rows
    # (normalise=True), whose negation is numerics.entropy bit for bit
    Ps, ys = _src(ctx, P)

    # (sorted source scores indexed at round(err n), target rows >= it: E.kth_and_count, or
    # the source and target rows shared with the other entropy readers, _kth_and_count)
    Ys = predictions(Ps)

    def one(m: int) -> float:
        err = 1.0 - float(np.mean(Ys[m] == ys))
        k = min(int(round(err * Ps.shape[1])), Ps.shape[1] - 1)
        return _kth_and_count(Ps, m, k, P, normalise=True) / P.shape[1]

    return np.array([one(m) for m in range(P.shape[0])])


def _atc(score: str) -> Callable[..., np.ndarray]:
    def fn(P: np.ndarray, **ctx: Any) -> np.ndarray:
        # E.atc(P[m], Ps[m], ys, score) of every model ('code' rule: threshold = sorted source
        # scores at n_inc - 1) on the shared maxima and entropy rows; E.atc itself where the
        # source has no error (threshold 0.0, its warning)
        Ps, ys = _src(ctx, P)
        n_inc = Ps.shape[1] - (predictions(Ps) == ys[None]).sum(axis=1)

        def one(m: int) -> float:
            k = int(n_inc[m]) - 1
            if k < 0:
                return E.atc(P[m], Ps[m], ys, score=score)
            if score == "NE":
                return _kth_and_count(Ps, m, k, P, eps=1e-20) / P.shape[1]
            t = float(np.sort(_maxprob(Ps)[m].astype(np.float64))[k])
            return float(np.mean(_maxprob(P)[m].astype(np.float64) >= t))

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.array([one(m) for m in range(P.shape[0])])

    return fn


register("ATC-MC", "estimate", ["source_probs", "source_labels"],
         cite="Garg et al., ICLR 2022; ATC_code@6f1e336 find_ATC_threshold")(
    _atc("MC"))
register("ATC-NE", "estimate", ["source_probs", "source_labels"],
         cite="Garg et al., ICLR 2022; ATC_code@6f1e336 find_ATC_threshold")(
    _atc("NE"))


def _digest(y: np.ndarray) -> tuple[str, tuple[int, ...], str]:
    """A key for labels' content (memo keys: the same stack may be scored against other labels)."""
    y = np.ascontiguousarray(y)
    return y.dtype.str, y.shape, hashlib.blake2b(y.tobytes(), digest_size=16).hexdigest()


def _cot_target(P: np.ndarray, ys: np.ndarray) -> list[list[np.ndarray]]:
    """Per model COT's target transports (``cot.target_costs``), once per stack and labels: COT
    and COTT solve the same ones (reading R5)."""
    return memo(P, ("cot.target_costs", _digest(ys)),
                lambda: _map_threaded(P, lambda m: _cot.target_costs(P[m], ys)))


@register("COT", "estimate", ["source_labels"],
          cite="Lu et al., NeurIPS 2023; luyuzhe111/COT@392c0ff run_estimation.py",
          note="exact n x K transport (certified cycle cancelling, equal to POT ot.emd); "
          "models on n_workers() threads; the target transports are shared with COTT")
def _cot_est(P: np.ndarray, **ctx: Any) -> np.ndarray:
    ys = np.asarray(ctx["source_labels"])
    return np.array([_cot.cot_from_costs(c).accuracy for c in _cot_target(P, ys)])


@register("COTT", "estimate", ["source_probs", "source_labels"],
          cite="Lu et al., NeurIPS 2023; luyuzhe111/COT@392c0ff utils.py::compute_cott",
          note="exact n x K transport (certified cycle cancelling, equal to POT ot.emd); "
          "models on n_workers() threads; the target transports are COT's, the source "
          "thresholds computed once per source stack")
def _cott_est(P: np.ndarray, **ctx: Any) -> np.ndarray:
    Ps, ys = _src(ctx, P)
    K = P.shape[2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = memo(Ps, ("cot.cott_threshold", _digest(ys), K),
                 lambda: _map_threaded(Ps, lambda m: _cot.cott_threshold(Ps[m], ys, K)))
        costs = _cot_target(P, ys)
    return np.array([_cot.cott_from_costs(c, tm).accuracy for c, tm in zip(costs, t, strict=True)])


@register("GDE", "estimate", cite="Jiang et al., ICLR 2022 (partner = mean over others; docs/methods.md, R8)")
def _gde(P: np.ndarray, **ctx: Any) -> np.ndarray:
    return E.gde(predictions(P))


def _aline(which: str) -> Callable[..., np.ndarray]:
    def fn(P: np.ndarray, **ctx: Any) -> np.ndarray:
        Ps, ys = _src(ctx, P)
        Ys = predictions(Ps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = E.aline(Ys, (Ys == ys[None]).mean(axis=1), predictions(P))
        return r.aline_s if which == "S" else r.aline_d

    return fn


register("ALine-S", "estimate", ["source_probs", "source_labels"],
         cite="Baek et al., NeurIPS 2022; kebaek/Agreement-on-the-line@99cb46e aline")(
    _aline("S"))
register("ALine-D", "estimate", ["source_probs", "source_labels"],
         cite="Baek et al., NeurIPS 2022; kebaek/Agreement-on-the-line@99cb46e aline")(
    _aline("D"))


# ------------------------------------------------------------------------------------ rankers


@register("LaF", "rank", study="laf", cite="Hu et al., TOSEM 2023, LaF (labelfree.laf.core.rank)")
def _laf(P: np.ndarray, **ctx: Any) -> np.ndarray:
    # BLAS on one thread: the M-step's CG takes dot products of the (inputs + models) parameter
    # vector, which OpenBLAS splits over threads above 10,000 entries; the hand-off cost ~10x the
    # work (docs/methods.md, "Speed"). Scores move by rounding only (summation order).
    with warnings.catch_warnings(), threadpool_limits(1, user_api="blas"):
        warnings.simplefilter("ignore")
        return laf_rank(predictions(P).T, P.shape[2]).score


@register("CRC-mean", "rank", study="laf", cite="LaF baseline CRC (labelfree.laf.baselines)")
def _crc_mean(P: np.ndarray, **ctx: Any) -> np.ndarray:
    return crc_scores(_maxprob(P).T, "mean")


@register("CRC-pairwise", "rank", study="laf", cite="LaF baseline CRC (labelfree.laf.baselines)")
def _crc_pair(P: np.ndarray, **ctx: Any) -> np.ndarray:
    return crc_scores(_maxprob(P).T, "pairwise")


@register("Entropy", "rank", study="syp", cite="syp.baselines.entropy_score, negated "
          "(labelfree.numerics.plogp_rows, the negated numerics.entropy)")
def _entropy(P: np.ndarray, **ctx: Any) -> np.ndarray:
    H = _plogp(P, normalise=True)  # each model's mean of its own row, as before the share
    return np.array([H[m].mean() for m in range(P.shape[0])])


@register("FD", "rank", ["features", "source_features"], study="syp",
          cite="Deng & Zheng, CVPR 2021; syp.indicators.frechet_distance (negated; computed by "
          "E.frechet_distance, equal to it in tests)")
def _fd(P: np.ndarray, **ctx: Any) -> np.ndarray:
    # E.frechet_distance equals syp.indicators.frechet_distance(feature_stats(.), ...) (tests)
    f, fs = ctx["features"], ctx["source_features"]
    return -_each_threaded(P, lambda m: E.frechet_distance(fs[m], f[m]))


@register("MaNo", "rank", cite="Xie et al., NeurIPS 2024; Renchunzi-Xie/MaNo@b9c0262",
          note="uses logits; with probabilities only, row-centred log-probabilities (flagged fallback)")
def _mano(P: np.ndarray, **ctx: Any) -> np.ndarray:
    if ctx.get("logits") is None:
        return _each_threaded(P, lambda m: E.mano_score_from_probs(P[m]))
    return np.array([E.mano(_logits_of(P, m, ctx)).score for m in range(P.shape[0])])


@register("NuclearNorm", "rank", cite="Deng et al., ICML 2023 (docs/methods.md, R4: UNVERIFIED definition, "
          "third-party normalisation)")
def _nuc(P: np.ndarray, **ctx: Any) -> np.ndarray:
    return _each_threaded(P, lambda m: E.nuclear_norm(P[m]))


@register("Dispersion", "rank", ["features"],
          cite="Xie et al., 2023; Renchunzi-Xie/Dispersion@ef5e00f")
def _disp(P: np.ndarray, **ctx: Any) -> np.ndarray:
    f = ctx["features"]
    Y = predictions(P)
    return np.array([E.dispersion(f[m], Y[m]) for m in range(P.shape[0])])


@register("EnsembleAgreement", "rank", cite="agreement with the zoo's mean-probability argmax")
def _ens(P: np.ndarray, **ctx: Any) -> np.ndarray:
    return E.ensemble_agreement(P)


# ------------------------------------------------------------------------------------ selectors


def _guide(P: np.ndarray, ctx: dict[str, Any]) -> np.ndarray:
    """Features guiding a zoo-level selection: the zoo's mean probabilities (N, K), or the mean of
    the given per-model features when they share a width."""
    f = ctx.get("features")
    if f is not None and len({np.shape(x) for x in f}) == 1:
        acc = np.zeros(np.shape(f[0]))
        for x in f:  # accumulate in float64 without a stacked (M, N, D) float64 copy
            acc += x
        return acc / len(f)
    return P.mean(axis=0, dtype=np.float64)


@register("SRS", "select", study="pace", cite="simple random sampling without replacement")
def _srs(P: np.ndarray, budget: int, seed: int, **ctx: Any) -> np.ndarray:
    if not 1 <= budget <= P.shape[1]:
        raise MethodInputError(f"SRS: budget {budget} not in 1..{P.shape[1]}")
    return np.random.default_rng(seed).choice(P.shape[1], size=budget, replace=False)


@register("PACE", "select", study="pace", cite="Chen et al., PACE (labelfree.pace.core.select) "
          "on the zoo's mean probabilities (or mean features)")
def _pace(P: np.ndarray, budget: int, seed: int, **ctx: Any) -> np.ndarray:
    # orders of pace.core.select's length (its default n_max, or the budget above it)
    return _pace_fit(_guide(P, ctx), seed, max(PaceConfig().n_max, budget)).select(budget).indices


def _pace_fit(X: np.ndarray, seed: int, n_max: int, reduce: str = "auto") -> Any:
    """PACE's clustering and cached orders (``labelfree.pace.core.fit``) on the guide ``X``, as
    ``pace.core.select`` fits them, with orders of ``n_max`` picks: the greedy MMD-critic and
    ART orders are built one pick at a time, each pick reading only the picks before it (paper
    section 3.3, Algorithm 1; docs/pace.md, readings R6, R7), so the first ``n`` picks of a
    longer order are the order of ``n`` and a fit serves every budget up to ``n_max``.
    ``reduce='always'`` skips the quality rule's clustering of the unreduced guide: for a guide
    the rule already reduced (the rule does not read the seed) it is the same fit."""
    mcs = max(2, min(80, X.shape[0] // 10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pace_fit(X, seed=seed, min_cluster_size=mcs, n_max=n_max, reduce=reduce)


def _pace_picker(P: np.ndarray, ctx: dict[str, Any], n_max: int) -> Callable[[int, int], np.ndarray]:
    """PACE picks for (budget, seed) pairs of one zoo: one fit serves every pair when it did not
    reduce the features (the seed reaches PACE only through the reducer; orders of the largest
    budget's length, whose prefixes are the smaller budgets' orders), else one fit per seed, each without the rule's clustering of
    the unreduced guide after the first (``_pace_fit``, ``reduce='always'``). Same picks as
    ``call("select", "PACE", ...)`` per pair (tested)."""
    X = _guide(P, ctx)
    fits: dict[int | None, Any] = {}

    def pick(budget: int, seed: int) -> np.ndarray:
        f = fits.get(None) or fits.get(seed)
        if f is None:  # fits so far, if any, were reduced by the rule: it is seed-free
            f = _pace_fit(X, seed, n_max, "always" if fits else "auto")
            fits[seed if f.reduced else None] = f
        return f.select(budget).indices

    return pick


@register("CES", "select", study="laf", cite="Li et al., CES as adapted by LaF "
          "(labelfree.laf.baselines.ces_select) on the zoo's mean probabilities")
def _ces(P: np.ndarray, budget: int, seed: int, **ctx: Any) -> np.ndarray:
    return ces_select(_guide(P, ctx), budget, np.random.default_rng(seed))


@register("SDS", "select", study="laf", cite="LaF baseline SDS (labelfree.laf.baselines)")
def _sds(P: np.ndarray, budget: int, seed: int, **ctx: Any) -> np.ndarray:
    return sds_sample(sds_pool(predictions(P).T), budget, np.random.default_rng(seed))


# ---------------------------------------------------------------------------------- few-label


def _budgets(budgets: Sequence[int], N: int) -> tuple[int, ...]:
    b = tuple(sorted({int(x) for x in budgets}))
    if not b or b[0] < 1 or b[-1] > N:
        raise MethodInputError(f"budgets {list(budgets)} must lie in 1..{N}")
    return b


@register("ActiveTesting", "fewlabel",
          cite="Kossen et al., ICML 2021; jlko/active-testing@82512ac, b labels per model")
def _at(P: np.ndarray, labels: np.ndarray, budgets: Sequence[int], seed: int, n_runs: int = 1,
        **ctx: Any) -> FewLabelRuns:
    M, N, _ = P.shape
    b = _budgets(budgets, N)
    acc = np.empty((n_runs, len(b), M))
    for m in range(M):
        r = F.active_testing(P[m], labels, b[-1], seed + 7919 * m, n_runs)
        acc[:, :, m] = r.accuracy[:, np.asarray(b) - 1]
    best = acc.argmax(axis=2)
    used = np.broadcast_to(np.asarray(b) * M, (n_runs, len(b))).copy()
    return FewLabelRuns(b, acc, acc.copy(), best, used, {"labels_per_model": b})


@register("ModelPicker", "fewlabel",
          cite="Karimi et al., AISTATS 2021; DS3Lab/online-active-model-selection@b56c738",
          note="tuning_par tuned per budget on a 40 x 8 grid (authors: 250 x 100)")
def _mp(P: np.ndarray, labels: np.ndarray, budgets: Sequence[int], seed: int, n_runs: int = 1,
        **ctx: Any) -> FewLabelRuns:
    M, N, _ = P.shape
    b = _budgets(budgets, N)
    Y = predictions(P)
    tune = F.tune_model_picker(Y, labels, list(b), seed + 1)
    best = np.empty((n_runs, len(b)), dtype=np.int64)
    scores = np.empty((n_runs, len(b), M))
    used = np.empty((n_runs, len(b)), dtype=np.int64)
    for j, bj in enumerate(b):
        r = F.model_picker(Y, labels, [bj], tune[bj], seed + j, n_runs)
        best[:, j], scores[:, j], used[:, j] = r.best[:, 0], r.scores[:, 0], r.used[:, 0]
    return FewLabelRuns(b, np.full((n_runs, len(b), M), np.nan), scores, best, used,
                        {"tuning_par": tune})


@register("CODA", "fewlabel", cite="Kay et al., ICCV 2025; justinkay/coda@f240a4c",
          note="set-up: M dense (N x K) @ (K x K) products; per label O(N M^2) with cached "
          "quadratures")
def _coda(P: np.ndarray, labels: np.ndarray, budgets: Sequence[int], seed: int, n_runs: int = 1,
          **ctx: Any) -> FewLabelRuns:
    M, N, _ = P.shape
    b = _budgets(budgets, N)
    bi = np.asarray(b)
    best = np.empty((n_runs, len(b)), dtype=np.int64)
    scores = np.empty((n_runs, len(b), M))
    first = None
    for r in range(n_runs):
        res = first if first is not None else F.coda(P, labels, b[-1], seed + r)
        if not res.stochastic:  # a run without random tie-breaks is the same for all seeds (R12)
            first = res
        k = np.minimum(bi, len(res.indices))
        best[r], scores[r] = res.best[k], res.pbest[k]
    used = np.broadcast_to(np.minimum(bi, N), (n_runs, len(b))).copy()
    return FewLabelRuns(b, np.full((n_runs, len(b), M), np.nan), scores, best, used)


def _from_selector(sel: str) -> Callable[..., FewLabelRuns]:
    def fn(P: np.ndarray, labels: np.ndarray, budgets: Sequence[int], seed: int,
           n_runs: int = 1, **ctx: Any) -> FewLabelRuns:
        M, N, _ = P.shape
        b = _budgets(budgets, N)
        Y = predictions(P)
        y = np.asarray(labels)
        acc = np.empty((n_runs, len(b), M))
        rng = np.random.default_rng(seed)
        if sel == "PACE":
            pick = _pace_picker(P, ctx, max(b))
        elif sel == "CES":  # _ces with the guide computed once for every (budget, seed)
            X = _guide(P, ctx)

            def pick(bj: int, s: int) -> np.ndarray:
                return ces_select(X, bj, np.random.default_rng(s))
        else:
            def pick(bj: int, s: int) -> np.ndarray:
                return call("select", sel, P, bj, s, **ctx)
        for r in range(n_runs):
            for j, bj in enumerate(b):
                idx = pick(bj, seed + 1000 * r + j)
                acc[r, j] = F.labelled_accuracy(Y, idx, y[idx])
        key = np.where(acc >= acc.max(axis=2, keepdims=True), rng.random(acc.shape), -1.0)
        used = np.broadcast_to(np.asarray(b), (n_runs, len(b))).copy()
        return FewLabelRuns(b, acc, acc.copy(), key.argmax(axis=2), used)

    return fn


for _sel in ("SRS", "PACE", "CES"):
    register(f"{_sel}+labels", "fewlabel", study=get("select", _sel).study,
             cite=f"{_sel} picks, then accuracy on the labelled picks (ties at random)")(
        _from_selector(_sel))


def accuracy_from_labels(probs: Any, idx: np.ndarray, y_idx: np.ndarray) -> np.ndarray:
    """Accuracy of every model on labelled picks (``labelfree estimate --labels``): (M,)."""
    return F.labelled_accuracy(predictions(stack(probs)), np.asarray(idx), np.asarray(y_idx))
