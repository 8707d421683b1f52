"""Score every registered method on one zoo's arrays (docs/methods.md, reading R2).

:func:`score_zoo` takes, per test set, the stack of model probabilities, the labels and the kind
of shift; one set is the source (its labels may be read by ATC, DoC, COT(T), ALine; it is excluded
from every aggregate and reported as a sanity row). Target labels reach only the few-label
methods, which read them at the indices they query. Each method is reached through the registry.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from labelfree.joblog import progress
from labelfree.methods.arrays import accuracy, memo, stack
from labelfree.methods.registry import Method, call, methods, missing
from labelfree.scorecard import metrics as mt
from labelfree.stats import kendall_tau_b, spearman

SOURCE_KINDS = ("source", "clean", "none", "id")
#: The note of a method or metric a one-model zoo cannot have (reading R2: ranking,
#: regret and P(best) compare two or more models; GDE and ALine read agreement between models).
ONE_MODEL = "not applicable: one model"
#: Label-free estimators that need two or more models (R8: a partner; R9: model pairs).
NEEDS_TWO_MODELS = frozenset({"GDE", "ALine-S", "ALine-D"})
#: Few-label methods that only select a model (readings R11, R12: no accuracy estimate).
SELECTION_ONLY = frozenset({"ModelPicker", "CODA"})
#: Columns of the summary tables ('note': why a row has no value, empty otherwise).
SUMMARY_COLUMNS = {
    "estimation": ["method", "shift", "mae", "bias", "max_abs", "failures", "failed_cells",
                   "note"],
    "ranking": ["method", "shift", "spearman", "kendall", "regret", "undefined", "failed_cells",
                "note"],
    "fewlabel": ["method", "budget", "shift", "regret", "regret_se", "p_best", "spearman",
                 "kendall", "mae", "bias", "used", "runs", "note"],
}
#: Trivial baselines every method is judged against (docs/methods.md, "Trivial baselines"):
#: estimation, each model's source accuracy as its estimate on every set ("no shift");
#: ranking, the models ordered by source accuracy, and by size (parameter count).
NO_SHIFT = "no shift (baseline)"
SOURCE_RANKING = "source accuracy (baseline)"
SIZE_RANKING = "model size (baseline)"
BASELINES = frozenset({NO_SHIFT, SOURCE_RANKING, SIZE_RANKING})
DEFAULT_RUNS = {"ActiveTesting": 200, "ModelPicker": 200, "CODA": 5, "SRS+labels": 200,
                "PACE+labels": 3, "CES+labels": 20}


@dataclass
class Scorecard:
    """Long tables of one zoo's scorecard plus their aggregates (see :func:`score_zoo`)."""

    truth: pd.DataFrame  # set, shift, model, accuracy
    estimates: pd.DataFrame  # method, set, shift, model, estimate, accuracy
    ranking: pd.DataFrame  # method, set, shift, spearman, kendall, regret
    fewlabel: pd.DataFrame  # method, set, shift, budget, run, regret, p_best, spearman, ...
    failures: pd.DataFrame  # method, kind, set, error
    timings: pd.DataFrame  # method, kind, set, seconds
    not_applicable: pd.DataFrame = field(  # method, kind, reason: methods not run, and why
        default_factory=lambda: pd.DataFrame(columns=["method", "kind", "reason"]))
    summary: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: Why the zoo has no scorecard at all (e.g. multi-label labels only); empty when scored.
    unscored: str = ""
    #: Each label-free method's output as computed, (kind, method, set) -> (M,) float64: the
    #: estimates of every estimator run (NaN where it raised) and the scores of every ranker that
    #: is not an estimator; the answer reads them instead of recomputing
    #: (``labelfree.scorecard.artefacts.MethodOutputs``).
    outputs: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)
    #: The labelled source set in the estimators' context (None: none).
    source: str | None = None


def _source_name(shift_kind: Mapping[str, str], source: str | None) -> str | None:
    if source is not None:
        if source not in shift_kind:
            raise ValueError(f"source set {source!r} is not among the sets {sorted(shift_kind)}")
        return source
    cands = [s for s, k in shift_kind.items() if str(k).lower() in SOURCE_KINDS]
    return cands[0] if cands else None


def _timed(fn, *a, **k):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(*a, **k)
    return out, time.perf_counter() - t0


def score_zoo(
    probs: Mapping[str, np.ndarray | Sequence[np.ndarray]],
    labels: Mapping[str, np.ndarray],
    shift_kind: Mapping[str, str],
    source: str | None = None,
    *,
    logits: Mapping[str, np.ndarray] | None = None,
    features: Mapping[str, Sequence[np.ndarray]] | None = None,
    model_names: Sequence[str] | None = None,
    budgets: Sequence[int] = (10, 20, 40, 80),
    n_runs: Mapping[str, int] | int | None = None,
    seed: int = 0,
    include: Mapping[str, Sequence[str]] | None = None,
    exclude: Sequence[str] = (),
    model_sizes: Sequence[float] | None = None,
    workers: int = 1,
) -> Scorecard:
    """Score every registered method on one zoo (docs/methods.md, reading R2).

    probs: set -> (M, N_s, K) (or list of M (N_s, K)); labels: set -> (N_s,); shift_kind: set ->
    kind string (the source set's kind is 'source' or 'clean' unless ``source`` names it).
    ``include``: kind -> method names to run (default: every registered method of the kind);
    ``exclude``: method names to skip. ``model_sizes``: each model's parameter count (the
    model-size ranking baseline; without it that baseline is "not available"). The trivial
    baselines (:data:`BASELINES`, :func:`_score_baselines`) are scored beside the methods.
    ``n_runs``: runs per few-label method (default
    :data:`DEFAULT_RUNS`, 20 for others). Budgets above a set's size are skipped for that set.

    A zoo of one model is scored on what one model has: the label-free estimators' MAE (less
    GDE and ALine, :data:`NEEDS_TWO_MODELS`) and the few-label estimators' accuracy error per
    budget; rankers, ModelPicker and CODA, and the regret, P(best) and correlations of the
    few-label estimators are "not applicable: one model" (:data:`ONE_MODEL`, in
    ``not_applicable`` and in the summary tables' ``note``), not run and not counted as failures.

    Steps: the zoo's arrays and truth (:func:`_zoo_arrays`), the methods to run
    (:func:`_methods_to_run`), then per set its context (:func:`_context`) and the estimators,
    rankers and few-label methods on it (:func:`_score_estimators`, :func:`_score_rankers`,
    :func:`_score_fewlabel`), collected in one :class:`_Rows` in set order. ``workers`` > 1 scores
    the sets on that many forked processes (:func:`_map_sets`; each with one BLAS thread and one
    worker per method, as a one-thread job): the same rows, in the same order, as one process.
    """
    src = _source_name(shift_kind, source)
    P, A, names = _zoo_arrays(probs, labels, model_names)
    M = len(names)
    to_run, na = _methods_to_run(M, include, exclude)
    na.update(_baselines_not_applicable(M, src, model_sizes))
    def one_set(s: str) -> _Rows:
        rows = _Rows()
        ctx = _context(s, src, P, labels, logits, features)
        est_cache = _score_estimators(rows, to_run["estimate"], s, shift_kind[s], P[s], A[s],
                                      names, ctx)
        _score_rankers(rows, to_run["rank"], s, shift_kind[s], P[s], A[s], ctx, est_cache)
        _score_baselines(rows, s, shift_kind[s], A[s], A[src] if src is not None else None,
                         model_sizes, names)
        if s != src:
            _score_fewlabel(rows, to_run["fewlabel"], s, shift_kind[s], P[s], labels[s], A[s],
                            ctx, budgets, n_runs, seed)
        return rows

    rows = _Rows()
    for r in progress(_map_sets(one_set, list(probs), workers), total=len(probs),
                      desc="scorecard", unit="set"):
        rows.extend(r)
    truth = pd.DataFrame([dict(set=s, shift=shift_kind[s], model=names[m], accuracy=A[s][m])
                          for s in P for m in range(M)])
    card = rows.scorecard(truth, na)
    card.source = src
    card.summary = summarise(card, src)
    return card


@dataclass
class _Rows:
    """The long tables' rows as :func:`score_zoo` collects them, set by set."""

    est: list[dict] = field(default_factory=list)
    rank: list[dict] = field(default_factory=list)
    few: list[dict] = field(default_factory=list)
    fails: list[dict] = field(default_factory=list)
    times: list[dict] = field(default_factory=list)
    outputs: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)

    def extend(self, other: _Rows) -> None:
        """Append ``other``'s rows and outputs after these (the next set's)."""
        self.est += other.est
        self.rank += other.rank
        self.few += other.few
        self.fails += other.fails
        self.times += other.times
        self.outputs.update(other.outputs)

    def scorecard(self, truth: pd.DataFrame, na: dict[tuple[str, str], str]) -> Scorecard:
        """The :class:`Scorecard` of these rows (its ``summary`` still empty)."""
        return Scorecard(
            truth=truth,
            estimates=pd.DataFrame(self.est, columns=["method", "set", "shift", "model",
                                                      "estimate", "accuracy"]),
            ranking=pd.DataFrame(self.rank, columns=["method", "set", "shift", "spearman",
                                                     "kendall", "regret"]),
            fewlabel=pd.DataFrame(self.few, columns=["method", "set", "shift", "budget", "run",
                                                     "regret", "p_best", "spearman", "kendall",
                                                     "mae", "bias", "used"]),
            failures=pd.DataFrame(self.fails, columns=["method", "kind", "set", "error"]),
            timings=pd.DataFrame(self.times, columns=["method", "kind", "set", "seconds"]),
            not_applicable=pd.DataFrame([dict(method=m, kind=k, reason=r)
                                         for (m, k), r in na.items()],
                                        columns=["method", "kind", "reason"]),
            outputs=self.outputs,
        )


#: The function :func:`_map_sets` maps in its forked workers (inherited by the fork, so that
#: the zoo's arrays reach them without a copy or a pickle).
_SET_FN: Callable[[str], _Rows] | None = None
#: A set worker's BLAS limit (:func:`_set_worker_init`), kept for the worker's life.
_LIMITS: Any = None


def _set_worker_init() -> None:
    """A set worker computes as a one-thread job does: BLAS on one thread (threadpoolctl) and
    ``n_workers()`` = 1 (``OMP_NUM_THREADS``), so its rows equal the sequential run's bit for
    bit (a BLAS reduction split over threads rounds differently)."""
    global _LIMITS
    os.environ["OMP_NUM_THREADS"] = "1"
    _LIMITS = threadpool_limits(1)


def _set_rows(s: str) -> _Rows:
    assert _SET_FN is not None
    return _SET_FN(s)


def _map_sets(fn: Callable[[str], _Rows], sets: list[str], workers: int) -> Iterator[_Rows]:
    """``fn(s)`` for every set, in set order: in this process when ``workers`` <= 1, else on
    ``workers`` forked processes (one set per task: a worker takes the next set when it is
    free). The sets are independent: each set's rows depend only on its arrays, the
    source set's and the seed, never on the sets scored before it."""
    global _SET_FN
    w = min(workers, len(sets))
    if w <= 1:
        yield from (fn(s) for s in sets)
        return
    _SET_FN = fn
    try:  # an executor, not mp.Pool: a worker that dies (e.g. out of memory) fails the job
        with ProcessPoolExecutor(w, mp_context=mp.get_context("fork"),
                                 initializer=_set_worker_init) as pool:
            yield from pool.map(_set_rows, sets)
    finally:
        _SET_FN = None


def _zoo_arrays(probs: Mapping[str, np.ndarray | Sequence[np.ndarray]],
                labels: Mapping[str, np.ndarray], model_names: Sequence[str] | None
                ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], list[str]]:
    """Per set the (M, N_s, K) stack and the true accuracy of every model (M,), and the model
    names (``m0``, ``m1``, ... by default); the sets must agree on M and K."""
    P = {s: stack(probs[s], f"probs[{s}]") for s in probs}
    M = {P[s].shape[0] for s in P}
    K = {P[s].shape[2] for s in P}
    if len(M) != 1 or len(K) != 1:
        raise ValueError(f"sets disagree on models or classes: M {sorted(M)}, K {sorted(K)}")
    m = M.pop()
    names = list(model_names) if model_names is not None else [f"m{i}" for i in range(m)]
    return P, {s: accuracy(P[s], labels[s]) for s in P}, names


def _context(s: str, src: str | None, P: Mapping[str, np.ndarray],
             labels: Mapping[str, np.ndarray], logits: Mapping[str, np.ndarray] | None,
             features: Mapping[str, Sequence[np.ndarray]] | None) -> dict[str, Any]:
    """The registry context of set ``s``: its logits and features where given, and the source
    set's probabilities, labels and features (the only labels a label-free method may read,
    docs/methods.md, reading R1)."""
    c: dict[str, Any] = {}
    if logits is not None and s in logits:
        c["logits"] = logits[s]
    if features is not None and s in features:
        c["features"] = features[s]
    if src is not None:
        c["source_probs"] = P[src]
        c["source_labels"] = labels[src]
        if features is not None and src in features:
            c["source_features"] = features[src]
    return c


def _methods_to_run(M: int, include: Mapping[str, Sequence[str]] | None, exclude: Sequence[str]
                    ) -> tuple[dict[str, list[Method]], dict[tuple[str, str], str]]:
    """The methods run per kind, and (a zoo of one model) those not applicable with their
    reason, keyed by (method, kind)."""
    na: dict[tuple[str, str], str] = {}
    to_run: dict[str, list[Method]] = {}
    for kind in ("estimate", "rank", "fewlabel"):
        ms = [m for m in methods(kind) if m.name not in exclude]
        if include is not None and kind in include:
            ms = [m for m in ms if m.name in include[kind]]
        to_run[kind] = []
        for m in ms:
            why = _one_model_reason(kind, m.name) if M < 2 else ""
            if why:
                na[(m.name, kind)] = why
            else:
                to_run[kind].append(m)
    return to_run, na


def _score_estimators(rows: _Rows, ms: Sequence[Method], s: str, kind: str, P: np.ndarray,
                      A: np.ndarray, names: Sequence[str], ctx: dict[str, Any]
                      ) -> dict[str, np.ndarray]:
    """Every estimator whose needs ``ctx`` meets, on set ``s``: one row per model; a failing
    method (an exception, or a non-finite estimate) is a counted failure. Returns the estimates
    by method name (an estimator ranks by its estimate)."""
    M = len(names)
    est_cache: dict[str, np.ndarray] = {}
    for m in ms:
        if missing(m, ctx):
            continue
        try:
            e, dt = _timed(call, "estimate", m.name, P, **ctx)
            rows.times.append(dict(method=m.name, kind="estimate", set=s, seconds=dt))
        except Exception as exc:  # a failing method is a counted failure (reading R2)
            rows.fails.append(dict(method=m.name, kind="estimate", set=s, error=repr(exc)[:200]))
            e = np.full(M, np.nan)
        est_cache[m.name] = e
        rows.outputs[("estimate", m.name, s)] = np.asarray(e, dtype=float)
        for i in range(M):
            rows.est.append(dict(method=m.name, set=s, shift=kind, model=names[i],
                                 estimate=float(e[i]), accuracy=float(A[i])))
        last = rows.fails[-1] if rows.fails else None
        if not np.all(np.isfinite(e)) and (last is None or last["method"] != m.name
                                           or last["set"] != s):
            rows.fails.append(dict(method=m.name, kind="estimate", set=s, error="non-finite"))
    return est_cache


def _score_rankers(rows: _Rows, ms: Sequence[Method], s: str, kind: str, P: np.ndarray,
                   A: np.ndarray, ctx: dict[str, Any], est_cache: Mapping[str, np.ndarray]
                   ) -> None:
    """Every ranker whose needs ``ctx`` meets, on set ``s``: Spearman, Kendall tau-b and top-1
    regret of its scores against the true accuracies (an estimator's scores are its estimates,
    not recomputed); a failing ranker is a counted failure with NaN metrics."""
    for m in ms:
        if missing(m, ctx):
            continue
        if m.name in est_cache:
            sc = est_cache[m.name]
        else:
            try:
                sc, dt = _timed(call, "rank", m.name, P, **ctx)
                rows.times.append(dict(method=m.name, kind="rank", set=s, seconds=dt))
            except Exception as exc:
                rows.fails.append(dict(method=m.name, kind="rank", set=s,
                                       error=repr(exc)[:200]))
                rows.rank.append(dict(method=m.name, set=s, shift=kind, spearman=np.nan,
                                      kendall=np.nan, regret=np.nan))
                continue
            rows.outputs[("rank", m.name, s)] = np.asarray(sc, dtype=float)
        rho, tau = _rank_corr(sc, A)
        rows.rank.append(dict(method=m.name, set=s, shift=kind, spearman=rho, kendall=tau,
                              regret=mt.top1_regret(sc, A)))


def _rank_corr(scores: np.ndarray, A: np.ndarray) -> tuple[float, float]:
    """Spearman and Kendall tau-b of ``scores`` against one set's true accuracies ``A``, once
    per distinct score vector of the set (``arrays.memo`` on ``A``, keyed by the scores' float64
    bytes): a few-label method's runs often return the same scores (CODA's runs without a random
    tie-break are one run; equal accuracies on the picks), and each scipy call costs more than
    the comparison of M values."""
    sc = np.ascontiguousarray(scores, dtype=np.float64)
    return memo(A, ("rank_corr", sc.shape, sc.tobytes()),
                lambda: (spearman(sc, A), kendall_tau_b(sc, A)))


def _score_fewlabel(rows: _Rows, ms: Sequence[Method], s: str, kind: str, P: np.ndarray,
                    y: np.ndarray, A: np.ndarray, ctx: dict[str, Any], budgets: Sequence[int],
                    n_runs: Mapping[str, int] | int | None, seed: int) -> None:
    """Every few-label method on target set ``s`` with its labels ``y`` as the oracle, at the
    budgets that fit the set: one row per budget and run (regret, P(best) and correlations
    where the zoo has two or more models; MAE and bias where the method estimates accuracy)."""
    N, M = P.shape[1], P.shape[0]
    bs = [b for b in budgets if b <= N]
    if not bs:
        return
    sel = M >= 2  # regret, P(best), correlations compare models (reading R2)
    for m in ms:
        if missing(m, ctx):
            continue
        R = (n_runs if isinstance(n_runs, int) else
             (n_runs or DEFAULT_RUNS).get(m.name, DEFAULT_RUNS.get(m.name, 20)))
        try:
            r, dt = _timed(call, "fewlabel", m.name, P, y, bs, seed, R, **ctx)
            rows.times.append(dict(method=m.name, kind="fewlabel", set=s, seconds=dt))
        except Exception as exc:
            rows.fails.append(dict(method=m.name, kind="fewlabel", set=s, error=repr(exc)[:200]))
            continue
        for j, b in enumerate(r.budgets):
            for run in range(r.best.shape[0]):
                acc_hat = r.accuracy[run, j]
                est = np.isfinite(acc_hat).all()
                rho, tau = _rank_corr(r.scores[run, j], A) if sel else (np.nan, np.nan)
                rows.few.append(dict(
                    method=m.name, set=s, shift=kind, budget=b, run=run,
                    regret=float(A.max() - A[r.best[run, j]]) if sel else np.nan,
                    p_best=float(A[r.best[run, j]] >= A.max()) if sel else np.nan,
                    spearman=rho, kendall=tau,
                    mae=mt.mae(acc_hat, A) if est else np.nan,
                    bias=mt.bias(acc_hat, A) if est else np.nan,
                    used=int(r.used[run, j])))


def _baselines_not_applicable(M: int, src: str | None, sizes: Sequence[float] | None
                              ) -> dict[tuple[str, str], str]:
    """The trivial baselines a zoo cannot have, keyed by (name, kind), with the reason."""
    na: dict[tuple[str, str], str] = {}
    if src is None:
        na[(NO_SHIFT, "estimate")] = "not available: no labelled source set"
    if M < 2:
        na[(SOURCE_RANKING, "rank")] = na[(SIZE_RANKING, "rank")] = (
            f"{ONE_MODEL} (ranking orders two or more, docs/methods.md R2)")
        return na
    if src is None:
        na[(SOURCE_RANKING, "rank")] = "not available: no labelled source set"
    if sizes is None:
        na[(SIZE_RANKING, "rank")] = "not available: the zoo's meta gives no parameter count"
    return na


def _score_baselines(rows: _Rows, s: str, kind: str, A: np.ndarray, A_src: np.ndarray | None,
                     sizes: Sequence[float] | None, names: Sequence[str]) -> None:
    """The trivial baselines on set ``s``: "no shift" estimates each model's accuracy by its
    source accuracy ``A_src``; the rankings order the models by ``A_src`` and by ``sizes``
    (larger first), scored as the rankers are (Spearman, Kendall tau-b, top-1 regret)."""
    if A_src is not None:
        for i, name in enumerate(names):
            rows.est.append(dict(method=NO_SHIFT, set=s, shift=kind, model=name,
                                 estimate=float(A_src[i]), accuracy=float(A[i])))
    if len(names) < 2:
        return
    for method, sc in ((SOURCE_RANKING, A_src), (SIZE_RANKING, sizes)):
        if sc is None:
            continue
        sc = np.asarray(sc, dtype=np.float64)
        rho, tau = _rank_corr(sc, A)
        rows.rank.append(dict(method=method, set=s, shift=kind, spearman=rho, kendall=tau,
                              regret=mt.top1_regret(sc, A)))


def _one_model_reason(kind: str, name: str) -> str:
    """Why method ``name`` of ``kind`` cannot run on a zoo of one model ("" if it can)."""
    if kind == "rank":
        return f"{ONE_MODEL} (ranking orders two or more, docs/methods.md R2)"
    if kind == "estimate" and name in NEEDS_TWO_MODELS:
        return f"{ONE_MODEL} (it reads agreement between models, docs/methods.md R8-R9)"
    if kind == "fewlabel" and name in SELECTION_ONLY:
        return f"{ONE_MODEL} (it selects a model, docs/methods.md R11-R12)"
    return ""


def unscored(reason: str) -> Scorecard:
    """The scorecard of a zoo that cannot be scored at all (e.g. only multi-label test sets:
    readings R1 and R2 define accuracy as ``argmax == y`` on labels of shape (N,), so no metric is
    invented for them): empty long tables; each summary table one row per registered method of
    its kind, shift ``all``, with ``reason`` as its note."""
    def empty(cols: list[str]) -> pd.DataFrame:
        return pd.DataFrame(columns=cols)

    card = Scorecard(
        truth=empty(["set", "shift", "model", "accuracy"]),
        estimates=empty(["method", "set", "shift", "model", "estimate", "accuracy"]),
        ranking=empty(["method", "set", "shift", "spearman", "kendall", "regret"]),
        fewlabel=empty(["method", "set", "shift", "budget", "run", "regret", "p_best", "spearman",
                        "kendall", "mae", "bias", "used"]),
        failures=empty(["method", "kind", "set", "error"]),
        timings=empty(["method", "kind", "set", "seconds"]),
        not_applicable=pd.DataFrame(
            [dict(method=m.name, kind=k, reason=reason) for k in ("estimate", "rank", "fewlabel")
             for m in methods(k)], columns=["method", "kind", "reason"]),
        unscored=reason,
    )
    card.summary = summarise(card, None)
    return card


def _by_kind(df: pd.DataFrame, per_set: pd.DataFrame, keys: list[str], cols: list[str],
             src: str | None) -> pd.DataFrame:
    """Aggregate per-set values per shift kind (mean over sets), overall (mean over target sets)
    and macro (mean over kinds); the source set as its own 'source' row (reading R2)."""
    tgt = per_set[per_set["set"] != src] if src is not None else per_set
    out = []
    if len(tgt):
        kind = tgt.groupby(keys + ["shift"], as_index=False)[cols].mean()
        out.append(kind)
        overall = tgt.groupby(keys, as_index=False)[cols].mean().assign(shift="overall")
        macro = kind.groupby(keys, as_index=False)[cols].mean().assign(shift="macro")
        out += [overall, macro]
    if src is not None and (per_set["set"] == src).any():
        s = per_set[per_set["set"] == src].groupby(keys, as_index=False)[cols].mean()
        out.append(s.assign(shift="source (sanity)"))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=keys + ["shift"] + cols)


def _with_notes(df: pd.DataFrame, card: Scorecard, kind: str, table: str,
                note: str = "") -> pd.DataFrame:
    """``df`` with its ``note`` column (``note`` on every computed row) and one row per method
    of ``kind`` that was not applicable (shift ``all``, no values, its reason as note)."""
    df = df.assign(note=note) if len(df) else df.reindex(columns=[*df.columns, "note"])
    na = card.not_applicable[card.not_applicable["kind"] == kind]
    rows = pd.DataFrame({"method": na["method"].to_numpy(), "shift": "all",
                         "note": na["reason"].to_numpy()})
    if table == "estimation" or table == "ranking":
        rows = rows.assign(failed_cells=0)
    out = pd.concat([x for x in (df, rows) if len(x)], ignore_index=True) if len(rows) else df
    return out.reindex(columns=SUMMARY_COLUMNS[table])


def summarise(card: Scorecard, src: str | None) -> dict[str, pd.DataFrame]:
    """Aggregated tables: 'estimation', 'ranking', 'fewlabel' (reading R2); a method that
    was not applicable (one model, :func:`unscored`) is a row with shift ``all`` and its note."""
    e = card.estimates.assign(abs_err=lambda d: (d.estimate - d.accuracy).abs(),
                              err=lambda d: d.estimate - d.accuracy)
    per_set = e.groupby(["method", "set", "shift"], as_index=False).agg(
        mae=("abs_err", "mean"), bias=("err", "mean"), max_abs=("abs_err", "max"),
        failures=("estimate", lambda x: int((~np.isfinite(x)).sum())))
    est = _by_kind(e, per_set, ["method"], ["mae", "bias", "max_abs", "failures"], src)
    fail_counts = card.failures.groupby(["method", "kind"]).size().to_dict()
    est["failed_cells"] = [fail_counts.get((m, "estimate"), 0) for m in est["method"]]
    rk = card.ranking.assign(undefined=lambda d: d.spearman.isna().astype(int))
    rank = _by_kind(rk, rk, ["method"], ["spearman", "kendall", "regret", "undefined"], src)
    rank["failed_cells"] = [fail_counts.get((m, "rank"), 0) + fail_counts.get((m, "estimate"), 0)
                            for m in rank["method"]]
    f = card.fewlabel
    if len(f):
        per = f.groupby(["method", "set", "shift", "budget"], as_index=False).agg(
            regret=("regret", "mean"), regret_se=("regret", lambda x: mt.mean_se(x)[1]),
            p_best=("p_best", "mean"), spearman=("spearman", "mean"),
            kendall=("kendall", "mean"), mae=("mae", "mean"), bias=("bias", "mean"),
            used=("used", "mean"), runs=("run", "nunique"))
        few = _by_kind(per, per, ["method", "budget"],
                       ["regret", "regret_se", "p_best", "spearman", "kendall", "mae", "bias",
                        "used", "runs"], None)
    else:
        few = pd.DataFrame(columns=SUMMARY_COLUMNS["fewlabel"][:-1])
    one = card.truth["model"].nunique() == 1
    few = _with_notes(few, card, "fewlabel", "fewlabel",
                      f"regret, P(best) and correlations {ONE_MODEL} (accuracy error scored)"
                      if one else "")
    if len(few):
        few["budget"] = few["budget"].astype("Int64")
    return {"estimation": _with_notes(est, card, "estimate", "estimation"),
            "ranking": _with_notes(rank, card, "rank", "ranking"), "fewlabel": few}
