"""One answer per zoo (docs/methods.md, "The answer"): which model is best, how
accurate each is likely to be, and which inputs to label, from the zoo's inference artefacts.

For every test set of the zoo:

- LaF ranks the models without labels (methods registry ``rank/LaF``, Hu et al., TOSEM 2023);
- each model's accuracy is estimated without labels by the registry estimator with the lowest
  mean absolute error on the zoo's other labelled shifted sets (same kind of shift where there
  are any; the set itself and the source set left out, so a set's own labels never choose its
  estimator); without such evidence the stated default, ATC-MC (Garg et al., ICLR 2022) with a
  labelled source set, else average confidence (AC);
- the headline interval is a split-conformal prediction interval for the true accuracy at a
  stated level (Vovk et al., Algorithmic Learning in a Random World, 2005; Lei et al., JASA
  2018) from the chosen estimator's absolute errors on those held-out sets, with the set as the
  exchangeable unit (a shift moves every model's error on it together; the pooled-CDF rule of
  Dunn, Wasserman and Ramdas, JASA 2023, for a new group); the percentile bootstrap over the
  test set's inputs stays as a second column, the sampling spread;
- the true accuracy is shown where the test set has labels, and the coverage of the intervals is
  measured on the labelled shifted sets, each left out of its own calibration;
- when no estimator is trustworthy (no evidence, too few held-out sets for the level, or a
  held-out MAE above the threshold) the answer says so first and recommends labelling PACE's picks.

PACE (Chen et al., TOSEM 2020; registry ``select/PACE``), run on the top-ranked model's output
probabilities, then picks the ``budget`` inputs of the headline test set (the first one unless
``headline`` names another) that a person should label to measure that model's accuracy.

:func:`answer` is the one entry point: the workflow's answer job and ``labelfree answer``
(docs/cli.md) both call it, so the same arrays give the same page and table.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from labelfree import store  # noqa: E402
from labelfree.methods import estimators, registry  # noqa: E402
from labelfree.numerics import softmax  # noqa: E402
from labelfree.scorecard.artefacts import MethodOutputs  # noqa: E402
from labelfree.scorecard.core import ONE_MODEL  # noqa: E402


@dataclass(frozen=True)
class TestSet:
    """One test set of a zoo: per-model probabilities (M, N, K) and labels (N,) or None."""

    name: str
    probs: np.ndarray
    labels: np.ndarray | None
    logits: np.ndarray | None = None


def bootstrap_interval(correct_proxy: np.ndarray, n_boot: int, seed: int,
                       level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of per-model means of a per-input quantity (M, N) over resampled
    inputs: one index matrix (B, N) shared by every model. Each resample's inputs are gathered
    input-major, (N, M), and summed input after input, the order of ``x[:, i].mean(axis=1)``
    (numpy lays that gather out input-major), in blocks of resamples."""
    m, n = correct_proxy.shape
    if n == 0:
        nan = np.full(m, np.nan)
        return nan, nan
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    xt = correct_proxy.T
    means = np.concatenate([xt[i].mean(axis=1) for i in _blocks(idx, m)])  # (B, M)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return lo, hi


#: Elements gathered at once by the bootstrap (64 MB of float64).
GATHER_CHUNK = 1 << 23


def _blocks(idx: np.ndarray, m: int) -> list[np.ndarray]:
    """``idx`` (B, N) in blocks of resamples whose gather of ``m`` rows stays within
    :data:`GATHER_CHUNK` elements."""
    step = max(1, GATHER_CHUNK // max(1, m * idx.shape[1]))
    return [idx[s : s + step] for s in range(0, len(idx), step)]


def resampled_means(x: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """(B, M) mean of each row of ``x`` (M, N) over each resample ``idx[b]`` (B, N), equal bit
    for bit to the 1-D ``x[j][idx[b]].mean()``: every resampled row gathered contiguous, so its
    mean is numpy's pairwise sum along it."""
    return np.concatenate([np.take(x, i, axis=1).mean(axis=2).T
                           for i in _blocks(idx, x.shape[0])])


def resample_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """(N, B) how often each input is drawn by each resample ``idx[b]`` (B, N)."""
    b = idx.shape[0]
    flat = (idx + n * np.arange(b)[:, None]).ravel()
    return np.bincount(flat, minlength=b * n).reshape(b, n).T.astype(np.float64)


def resampled_shares(ind: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """(B, R) share of each resample's inputs where the row of ``ind`` (R, N) holds: the count
    as an exact float64 integer product with :func:`resample_counts`, then divided by N, which
    is ``np.mean`` of the resampled boolean row bit for bit."""
    return (ind.astype(np.float64) @ counts).T / ind.shape[1]


def atc_threshold(source_probs: np.ndarray, source_labels: np.ndarray) -> np.ndarray:
    """Per-model ATC-MC threshold t on the max-confidence of the labelled source set, the
    registry's ATC-MC rule (:func:`labelfree.methods.estimators.atc_threshold`; Garg et al., ICLR
    2022, as saurabhgarg1996/ATC_code@6f1e336 ``ATC_helper.py::find_ATC_threshold`` computes it):
    ``t = sort(conf)[n_inc - 1]`` with ``n_inc`` the source errors, 0.0 for a model without a
    source error; an input counts as correct when its confidence is ``>= t``."""
    conf = source_probs.max(axis=2)  # (M, Ns)
    correct = source_probs.argmax(axis=2) == source_labels[None]
    with warnings.catch_warnings():  # a perfect source model: t = 0.0, as ATC-MC in the scorecard
        warnings.simplefilter("ignore")
        return np.array([estimators.atc_threshold(conf[j], correct[j])
                         for j in range(len(conf))])


#: Estimators whose sampling spread is bootstrapped (one registry call per resample is cheap);
#: the others (COT, COTT, ALine: transport or pair fits per call) get no spread column.
SPREAD_ESTIMATORS = frozenset({"AC", "ATC-MC", "ATC-NE", "DoC", "GDE"})
#: The stated default with no labelled evidence (docs/methods.md, "The answer").
DEFAULT_WITH_SOURCE, DEFAULT_WITHOUT_SOURCE = "ATC-MC", "AC"
NO_EVIDENCE = "default: no other labelled shifted set to judge estimators on"
#: Basis of evidence from other kinds of shift only: they may choose the estimator, but their
#: errors give no interval for this kind (:func:`evidence_sets`).
CROSS_KIND = "other kinds of shift only"
#: The answer's settings as config/schema/answer.yaml defaults them (and the base ``seed`` of
#: config/schema.yaml); ``labelfree answer`` starts from the same values.
DEFAULTS: dict = {"budget": 50, "bootstrap": 200, "level": 0.9, "max_mae": 0.10, "source": "id",
                  "seed": 0}
#: In a prediction zoo, the test set of this name is the source kind of shift and every other set
#: one kind, ``shifted`` (as the workflow's scorecard groups them).
PREDICTION_SOURCE = "id"


def prediction_zoo_kinds(testsets: Sequence[str]) -> dict[str, str]:
    """Kind of shift of each test set of a prediction zoo: ``source`` for
    :data:`PREDICTION_SOURCE`, ``shifted`` for every other set."""
    return {t: ("source" if t == PREDICTION_SOURCE else "shifted") for t in testsets}


def headline_first(testsets: Sequence[str], headline: str | None) -> list[str]:
    """The test sets with the headline set first (the rest in their order); ``headline`` empty
    or None: the order as given, so the first set heads the answer. A name that is not one of
    ``testsets`` is refused, naming them."""
    sets = list(testsets)
    if not headline:
        return sets
    if headline not in sets:
        raise ValueError(f"headline test set {headline!r} is not one of the zoo's test sets "
                         f"{sets}")
    return [headline] + [t for t in sets if t != headline]


@dataclass(frozen=True)
class Choice:
    """The estimator chosen for one test set and the evidence behind it: the other labelled
    shifted sets it was judged on (``sets``), how they were picked (``basis``), its absolute errors
    there (one array of per-model errors per set, ``by_set``), all of them (``errors``) and their
    mean (``mae``; NaN without evidence)."""

    method: str
    basis: str
    sets: tuple[str, ...]
    by_set: tuple[np.ndarray, ...]
    mae: float
    calibrates: bool = True  # whether ``by_set`` calibrates the set's interval (same kind)

    @property
    def errors(self) -> np.ndarray:
        """Every (set, model) absolute error of the evidence, set by set."""
        return np.concatenate(self.by_set) if self.by_set else np.empty(0)


def label_free_estimates(sets: Sequence[TestSet], source: str | None,
                         names: Sequence[str] | None = None, *,
                         known: MethodOutputs | None = None,
                         models: Sequence[str] = ()) -> dict[str, dict[str, np.ndarray]]:
    """Every registered label-free estimator (or those in ``names``) on every set: method -> set
    -> (M,) estimates; NaN where it fails or lacks an input (a labelled source set for ATC, DoC,
    COT(T), ALine; two models for GDE, ALine). Only the source set's labels are read. ``known``:
    the same estimators' outputs on some of the sets for the same ``models`` and source set
    (the zoo's scorecard computed them on the same arrays), read instead of recomputed."""
    src = next((s for s in sets if s.name == source and s.labels is not None), None)
    out: dict[str, dict[str, np.ndarray]] = {}
    for m in registry.methods("estimate"):
        if names and m.name not in names:
            continue
        out[m.name] = {}
        for s in sets:
            e = (known.get("estimate", m.name, s.name, models,
                           src.name if src is not None else None)
                 if known is not None else None)
            out[m.name][s.name] = (_shaped(e, s.probs.shape[0]) if e is not None
                                   else _estimate(m.name, s.probs, _ctx(s, src)))
    return out


def _ctx(s: TestSet, src: TestSet | None) -> dict:
    ctx = {} if s.logits is None else {"logits": s.logits}
    if src is not None:
        ctx.update(source_probs=src.probs, source_labels=src.labels)
    return ctx


def _estimate(name: str, probs: np.ndarray, ctx: dict) -> np.ndarray:
    m = probs.shape[0]
    if registry.missing(registry.get("estimate", name), ctx):
        return np.full(m, np.nan)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            e = np.asarray(registry.call("estimate", name, probs, **ctx), dtype=float)
    except Exception:  # a failing estimator is not a candidate (as the scorecard counts it)
        return np.full(m, np.nan)
    return _shaped(e, m)


def _shaped(e: np.ndarray, m: int) -> np.ndarray:
    """``e`` when it has one value per model, else NaN for each (not a candidate)."""
    return e if e.shape == (m,) else np.full(m, np.nan)


def evidence_sets(target: str, labelled: Sequence[str], kinds: Mapping[str, str] | None,
                  source: str | None, min_sets: int = 1) -> tuple[tuple[str, ...], str, bool]:
    """The sets that may judge estimators for ``target``: the zoo's labelled sets less ``target``
    itself (its own labels never choose) and less the source set (estimators are fitted on it);
    those of ``target``'s kind of shift where there are at least ``min_sets`` of them (enough
    sets for a finite interval), else all. Returns the sets, how they were picked, and whether
    their errors calibrate ``target``'s interval: not when ``target`` has a kind of shift with
    fewer than ``min_sets`` other labelled sets, because sets of one kind are exchangeable with
    each other, not with another kind's (an interval from other kinds under-covers a new kind:
    docs/methods.md, "The answer"). The source set itself keeps every other set."""
    other = [t for t in labelled if t != target and t != source]
    if kinds and target in kinds and target != source:
        same = [t for t in other if kinds.get(t) == kinds[target]]
        if len(same) >= min_sets:
            return tuple(same), f"same kind of shift (`{kinds[target]}`)", True
        return tuple(other), (f"{CROSS_KIND} ({len(same)} other labelled set(s) of kind "
                              f"`{kinds[target]}`, {min_sets} needed for its interval)"), False
    return tuple(other), "all other labelled shifted sets", True


def min_cases(level: float) -> int:
    """The fewest held-out sets ``n`` with a finite split-conformal quantile at ``level``:
    ``ceil((n + 1) * level) <= n`` (9 at 0.9)."""
    n = 1
    while np.ceil((n + 1) * level) > n:
        n += 1
    return n


def choose_estimator(target: str, estimates: Mapping[str, Mapping[str, np.ndarray]],
                     truth: Mapping[str, np.ndarray], kinds: Mapping[str, str] | None,
                     source: str | None, has_source: bool, level: float = 0.9) -> Choice:
    """The estimator for ``target``: among those with a finite estimate for every model on it,
    the one with the lowest mean absolute error over the models of :func:`evidence_sets`
    (``truth``: labelled set -> true accuracies); ties go to the registry's order. A method
    that fails on an evidence set is not a candidate. Sets of the same kind are preferred when
    there are enough of them for a finite interval at ``level`` (:func:`min_cases`). Without
    evidence, the stated default: ATC-MC when a labelled source set calibrates it
    (``has_source``), else AC."""
    sets, basis, calibrates = evidence_sets(target, list(truth), kinds, source,
                                            min_sets=min_cases(level))
    best: Choice | None = None
    for name, by_set in estimates.items():
        if not np.all(np.isfinite(by_set[target])) or not sets:
            continue
        errs = tuple(np.abs(by_set[t] - truth[t]) for t in sets)
        err = np.concatenate(errs)
        if not np.all(np.isfinite(err)):
            continue
        if best is None or err.mean() < best.mae:
            best = Choice(name, basis, sets, errs, float(err.mean()), calibrates)
    if best is not None:
        return best
    name = (DEFAULT_WITH_SOURCE if has_source and target != source
            and np.all(np.isfinite(estimates.get(DEFAULT_WITH_SOURCE, {}).get(target, np.nan)))
            else DEFAULT_WITHOUT_SOURCE)
    return Choice(name, NO_EVIDENCE, (), (), float("nan"))


def conformal_quantile(by_set: Sequence[np.ndarray], level: float) -> float:
    """Split-conformal quantile of absolute errors with the test set as the exchangeable unit
    (Vovk et al., Algorithmic Learning in a Random World, 2005; Lei et al., JASA 2018, section
    2.2; for grouped cases the pooled-CDF rule of Dunn, Wasserman and Ramdas, JASA 2023): with
    ``F_j`` the share of set ``j``'s models whose error is at most ``t``, the smallest ``t`` with
    ``sum_j F_j(t) >= level * (n + 1)`` over the ``n`` held-out sets; infinite when ``n <
    level * (n + 1)`` (too few sets for the level, :func:`min_cases`). For a new set
    exchangeable with the held-out ones, a model drawn from it is then covered with probability
    at least ``level``. One set of one error each reduces to the textbook
    ``ceil((n + 1) * level)``-th smallest score.

    Why sets and not (set, model) cases: a shift moves every model's error on that set together,
    so the cases of one set are not exchangeable draws; counting them as such under-covered on
    the default run's pace_digits zoo (80 % at a stated 90 %, docs/methods.md, "The answer")."""
    groups = [np.asarray(g, dtype=float).ravel() for g in by_set if len(g)]
    n = len(groups)
    need = level * (n + 1)
    if n == 0 or n < need - 1e-9:
        return float("inf")
    vals = np.concatenate(groups)
    weight = np.concatenate([np.full(len(g), 1.0 / len(g)) for g in groups])
    order = np.argsort(vals, kind="stable")
    k = int(np.searchsorted(np.cumsum(weight[order]), need - 1e-9))
    return float(vals[order][min(k, len(vals) - 1)])


def sampling_spread(name: str, probs: np.ndarray, ctx: dict, n_boot: int, seed: int,
                    level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of the estimator over inputs resampled with replacement (B index
    vectors shared by every model; the source set is not resampled): the estimate's sampling
    spread, not its bias. NaN for the costly estimators (not in :data:`SPREAD_ESTIMATORS`).
    All B resamples at once (:func:`resampled_estimates`), each equal to the registry's estimate
    on the resampled stack."""
    m, n = probs.shape[:2]
    if name not in SPREAD_ESTIMATORS or n == 0:
        nan = np.full(m, np.nan)
        return nan, nan
    if name == "AC":  # the mean of a per-input quantity
        return bootstrap_interval(probs.max(axis=2), n_boot, seed, level)
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    draws = resampled_estimates(name, probs, ctx, idx)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lo, hi = np.nanquantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return lo, hi


def resampled_estimates(name: str, probs: np.ndarray, ctx: dict, idx: np.ndarray) -> np.ndarray:
    """(B, M) estimates of ``name`` (one of :data:`SPREAD_ESTIMATORS`) on the stacks
    ``probs[:, idx[b]]``, equal bit for bit to the registry's estimate on each (``_estimate``:
    NaN where it lacks an input or fails), without building them: each of these estimators is
    a share or a mean of per-input quantities of the target set, with the rest from the source
    set, so only those quantities are resampled.

    - AC, DoC (registry ``_ac``, ``syp.baselines.doc_estimate``): the mean max-probability of
      the resample (:func:`resampled_means`); DoC adds the source accuracy less the source's
      mean confidence, in percent then divided by 100, as ``doc_estimate`` does;
    - ATC-MC, ATC-NE (registry ``_atc``; Garg et al., ICLR 2022): the share of the resample
      whose score (``estimators.atc_scores``) reaches the model's source threshold
      (``estimators.atc_threshold``, the code rule) (:func:`resampled_shares`);
    - GDE (registry ``_gde``, ``estimators.gde``, partner the mean over others; Jiang et al.,
      ICLR 2022): one minus the mean disagreement with the other models, each pair's agreement
      the share of the resample where their predictions agree.
    """
    m = probs.shape[0]
    b = idx.shape[0]
    nan = np.full((b, m), np.nan)
    if registry.missing(registry.get("estimate", name), ctx) or (name == "GDE" and m < 2):
        return nan
    if name == "AC":
        return resampled_means(probs.max(axis=2), idx)
    if name == "GDE":
        preds = probs.argmax(axis=2)
        a, c = np.triu_indices(m, 1)
        agree = np.ones((b, m, m))
        agree[:, a, c] = agree[:, c, a] = resampled_shares(preds[a] == preds[c],
                                                           resample_counts(idx, probs.shape[1]))
        return 1.0 - (1.0 - agree).sum(axis=2) / (m - 1)
    ps, ys = np.asarray(ctx["source_probs"]), np.asarray(ctx["source_labels"])
    if ps.ndim != 3 or ps.shape[0] != m or ps.shape[2] != probs.shape[2] or len(ys) != ps.shape[1]:
        return nan  # the registry refuses a source of another shape
    correct = ps.argmax(axis=2) == ys[None]
    if name == "DoC":
        acc = correct.mean(axis=1)
        conf_src = ps.max(axis=2).mean(axis=1)
        conf = resampled_means(probs.max(axis=2), idx)
        return 100.0 * (acc - (conf_src - conf)) / 100.0
    score = name.removeprefix("ATC-")
    with warnings.catch_warnings():  # a perfect source model: t = 0.0, as the registry
        warnings.simplefilter("ignore")
        t = np.array([estimators.atc_threshold(estimators.atc_scores(ps[j], score), correct[j])
                      for j in range(m)])
    hit = np.stack([estimators.atc_scores(probs[j], score) >= t[j] for j in range(m)])
    return resampled_shares(hit, resample_counts(idx, probs.shape[1]))


def answer_table(models: Sequence[str], sets: Sequence[TestSet], source: str | None,
                 n_boot: int = 200, seed: int = 0, *, kinds: Mapping[str, str] | None = None,
                 level: float = 0.9, max_mae: float = 0.10,
                 estimators: Sequence[str] | None = None,
                 known: MethodOutputs | None = None) -> pd.DataFrame:
    """One row per (test set, model): LaF score and rank; the estimator chosen by evidence
    (:func:`choose_estimator`), its estimate and split-conformal prediction interval at
    ``level`` (:func:`conformal_quantile` of its held-out errors), the bootstrap sampling spread
    (:func:`sampling_spread`), whether it is trusted (held-out MAE <= ``max_mae``), the true
    accuracy (NaN when unlabelled) and whether the interval covers it (labelled shifted sets).
    Trusted also needs enough held-out sets for a finite interval at ``level``. ``known``: LaF's
    scores and the estimators' outputs already computed on some sets (the zoo's scorecard), read
    instead of recomputed."""
    src = next((s for s in sets if s.name == source and s.labels is not None), None)
    est = label_free_estimates(sets, source, estimators, known=known, models=models)
    truth = {s.name: _accuracy(s) for s in sets if s.labels is not None}
    rows = []
    for k, s in enumerate(sets):
        m = s.probs.shape[0]
        laf = known.get("rank", "LaF", s.name, models) if known is not None and m >= 2 else None
        if laf is None or laf.shape != (m,):
            laf = (np.asarray(registry.call("rank", "LaF", s.probs), dtype=float) if m >= 2
                   else np.full(m, np.nan))
        c = choose_estimator(s.name, est, truth, kinds, source, src is not None, level)
        e = est[c.method][s.name] if c.method in est else _estimate(c.method, s.probs, _ctx(s, src))
        q = conformal_quantile(c.by_set, level) if c.calibrates else float("inf")
        lo, hi = np.clip(e - q, 0, 1), np.clip(e + q, 0, 1)
        slo, shi = sampling_spread(c.method, s.probs, _ctx(s, src), n_boot, seed + k)
        true = truth.get(s.name, np.full(m, np.nan))
        scored = s.name in truth and s.name != source
        order = (-np.nan_to_num(laf, nan=-np.inf)).argsort(kind="stable")
        ranks = np.empty(m, dtype=int)
        ranks[order] = np.arange(1, m + 1)
        for j, model in enumerate(models):
            rows.append({
                "testset": s.name, "model": model, "laf_score": laf[j], "laf_rank": int(ranks[j]),
                "estimated_accuracy": e[j], "interval_low": lo[j], "interval_high": hi[j],
                "level": level, "spread_low": slo[j], "spread_high": shi[j],
                "estimator": c.method, "evidence": " ".join(c.sets), "basis": c.basis,
                "evidence_sets": len(c.sets), "evidence_cells": len(c.errors),
                "evidence_mae": c.mae,
                "halfwidth": q, "trusted": bool(c.mae <= max_mae and np.isfinite(q)),
                "covered": (float(lo[j] <= true[j] <= hi[j]) if scored else np.nan),
                "true_accuracy": true[j], "inputs": s.probs.shape[1]})
    return pd.DataFrame(rows)


def _accuracy(s: TestSet) -> np.ndarray:
    return (s.probs.argmax(axis=2) == s.labels[None]).mean(axis=1)


def coverage(table: pd.DataFrame) -> tuple[float, int]:
    """Coverage measured on the zoo's labelled shifted sets, leave-one-set-out: each such set's
    interval was built without its labels (:func:`choose_estimator`), so the share of its
    (set, model) rows whose interval holds the true accuracy estimates the interval's coverage.
    Returns (share, rows); (NaN, 0) without such rows."""
    c = table["covered"].dropna()
    return (float(c.mean()), len(c)) if len(c) else (float("nan"), 0)


def label_plan(probs: np.ndarray, budget: int, seed: int) -> np.ndarray:
    """Indices PACE would have a person label (registry ``select/PACE``), ascending."""
    n = probs.shape[1]
    budget = int(min(budget, n))
    picks = registry.call("select", "PACE", probs, budget, seed)
    return np.sort(np.asarray(picks, dtype=np.int64))


def _pct(v: float) -> str:
    return "—" if v != v else f"{100 * v:.1f}"


def scorecard_summary(zoo: str, best: pd.DataFrame | None, note: str = "") -> str:
    """One paragraph of the zoo's scorecard for its answer (docs/methods.md): the best label-free
    estimator (lowest MAE) and ranker (highest Spearman) over all shifted sets, then per kind of
    shift, from ``extra-<zoo>-best.csv`` (:func:`labelfree.scorecard.report.best_per_kind`). A
    zoo of one model names its best estimator and says ranking and model selection are not
    applicable; a zoo scored on its source set only names the best estimator there (a sanity
    row); a zoo its scorecard could not score (e.g. multi-label labels) gives the table's note;
    ``note`` (why the zoo has no scorecard) when ``best`` is None."""
    if best is None:
        return f"Scorecard: none for this zoo: {note}"

    def cell(r) -> str:
        est = f"{r.estimator} (MAE {_pct(r.mae)} points)" if r.estimator else "no estimator"
        if r.ranker == ONE_MODEL:
            return est
        rk = f"{r.ranker} (Spearman {r.spearman:.2f})" if r.ranker else "no ranker"
        return f"{est}, {rk}"

    rows = best.assign(**{c: best[c].astype(object).fillna("").astype(str)
                          for c in ("estimator", "ranker")})
    where = f"Scorecard (`results/scorecard/tables/extra-{zoo}-best.csv`"
    if not (rows["estimator"].str.len() > 0).any():
        notes = [str(n) for n in rows.get("note", pd.Series(dtype=str)).dropna() if str(n)]
        return f"{where}): none for this zoo: {notes[0] if notes else note or 'nothing scored'}."
    one = (rows["ranker"] == ONE_MODEL).any()
    head = rows[rows["shift"] == "overall"]
    sanity = rows[rows["shift"].str.startswith("source")]
    kinds = rows[~rows["shift"].isin(["overall", "macro"])
                 & ~rows["shift"].str.startswith("source")]
    text = where + "; every method on this zoo's test sets against true accuracy): "
    what = "best estimator" if one else "best estimator and ranker"
    if len(head):
        text += f"over all shifted test sets, {what}: {cell(head.iloc[0])}"
    elif len(sanity):
        text += (f"only the source set is scored (a sanity row: estimators fitted on it), "
                 f"{what} there: {cell(sanity.iloc[0])}")
    text += "".join(f"; on `{r.shift}`: {cell(r)}" for r in kinds.itertuples(index=False))
    if one:
        text += f". Ranking and model selection: {ONE_MODEL} (nothing to rank)"
    return text + "."


def _interval(lo: float, hi: float) -> str:
    return "—" if lo != lo and hi != hi else f"[{_pct(lo)}, {_pct(hi)}]"


def trust_lines(table: pd.DataFrame, plan: np.ndarray, plan_set: str, top_model: str,
                max_mae: float = 0.10) -> list[str]:
    """The answer's first lines: on the headline set, the estimator, the evidence behind it and
    the measured coverage; or, when nothing is trustworthy (no labelled evidence, or the chosen
    estimator's held-out MAE above ``max_mae``), that no label-free number should be trusted
    and which inputs to label instead (PACE's plan)."""
    first = table["testset"].iloc[0]
    r = table[table["testset"] == first].iloc[0]
    cov, n = coverage(table)
    cov_text = (f"Measured coverage of these intervals on this zoo's labelled shifted sets "
                f"(each set left out of its own calibration): {_pct(cov)} % of {n} "
                f"(set, model) cases, stated level {100 * r.level:.0f} %." if n else
                "Coverage cannot be measured: this zoo has no labelled shifted set.")
    label = (f"label the {len(plan)} inputs of `{plan_set}` that PACE picked for `{top_model}` "
             "(`label-these.csv`) and measure the accuracy on them")
    if not r.trusted:
        why = (f"no labelled shifted set to judge the estimators on ({r.estimator} is the stated "
               "default)" if r.basis == NO_EVIDENCE else
               f"no interval from {r.basis}: errors on other kinds of shift do not bound "
               "this one's (sets of one kind are exchangeable with each other, not with "
               "another kind's)" if r.basis.startswith(CROSS_KIND) else
               f"{r.evidence_sets} held-out labelled shifted sets are too few for a "
               f"{100 * r.level:.0f} % prediction interval ({min_cases(r.level)} needed: a shift "
               "moves every model's error on a set together, so the set is the unit; the "
               "interval would span 0-100 %)"
               if not np.isfinite(r.halfwidth) else
               f"the best estimator on the held-out labelled sets, {r.estimator}, is off by "
               f"{_pct(r.evidence_mae)} points on average there, above the "
               f"{100 * max_mae:.0f}-point threshold")
        return [f"**No trustworthy label-free accuracy estimate on `{first}`**: {why}. "
                f"Instead, {label}. The label-free numbers below are for reference only.",
                "", cov_text]
    return [f"Accuracy on `{first}` estimated without labels by **{r.estimator}**, chosen on "
            f"held-out labelled sets ({r.basis}: {', '.join(f'`{t}`' for t in r.evidence.split())}"
            f"), where its mean absolute error is {_pct(r.evidence_mae)} points over "
            f"{r.evidence_cells} (set, model) cases; a test set's own labels never choose its "
            f"estimator. The interval is a {100 * r.level:.0f} % split-conformal prediction "
            f"interval for the true accuracy from those held-out errors, each of the "
            f"{r.evidence_sets} sets one exchangeable unit (Vovk et al. 2005; Lei et al., JASA "
            "2018; Dunn et al., JASA 2023); the sampling spread is a 95 % bootstrap over inputs.",
            "", cov_text, "", f"To check with few labels, {label}."]


#: The line of answer.md that holds :func:`summary_line` (0-based; the HTML report's first
#: screen includes it, workflow/report/workflow.rst).
SUMMARY_LINE = 2


def summary_line(zoo: str, table: pd.DataFrame, plan: np.ndarray, max_mae: float = 0.10) -> str:
    """The answer in one line, first in answer.md and on the report's first screen: on the
    headline test set, LaF's top model and its estimate with the prediction interval and the
    estimator, or that no label-free estimate is trustworthy and what to label instead; the
    true accuracy where the set has labels. Markdown that reads the same as reStructuredText."""
    first = table["testset"].iloc[0]
    main = table[table["testset"] == first].sort_values("laf_rank")
    r = main.iloc[0]
    who = (f"LaF ranks `{r.model}` first of {len(main)} models" if len(main) > 1 else
           f"one model, `{r.model}`")
    head = f"**In short** (zoo `{zoo}`, test set `{first}`): {who}; "
    true = "" if r.true_accuracy != r.true_accuracy else f"; true accuracy {_pct(r.true_accuracy)} %"
    if r.trusted:
        return (head + f"its accuracy is estimated without labels at {_pct(r.estimated_accuracy)} "
                f"% {_interval(r.interval_low, r.interval_high)} ({100 * r.level:.0f} % "
                f"prediction interval; {r.estimator}, chosen on held-out labelled sets){true}.")
    why = ("no labelled shifted set to judge estimators on" if r.basis == NO_EVIDENCE else
           f"too few labelled sets of its kind of shift, {min_cases(r.level)} needed for the "
           "interval" if r.basis.startswith(CROSS_KIND) else
           f"{r.evidence_sets} held-out labelled shifted sets, {min_cases(r.level)} needed for "
           "the interval" if not np.isfinite(r.halfwidth)
           else f"the best estimator is off by {_pct(r.evidence_mae)} points on held-out sets, "
                f"above the {100 * max_mae:.0f}-point threshold")
    return (head + f"no trustworthy label-free accuracy estimate ({why}): label the {len(plan)} "
            f"inputs PACE picked (`label-these.csv`){true}.")


def multilabel_note(testsets: Sequence[str]) -> str:
    """What the answer says of test sets whose labels are multi-label (multi-hot, one row of 0/1
    per input): out of its scope, counted as unlabelled; empty when there are none."""
    if not testsets:
        return ""
    names = ", ".join(f"`{t}`" for t in testsets)
    return (f"Out of scope: {names} {'has' if len(testsets) == 1 else 'have'} multi-label "
            "(multi-hot) labels; this answer estimates single-label accuracy (the share of "
            "inputs whose top class is the label), which such labels do not define, so these "
            "sets count as unlabelled here: no true accuracy, no evidence, no coverage.")


def render(zoo: str, table: pd.DataFrame, plan: np.ndarray, plan_set: str, top_model: str,
           scorecard_line: str = "", max_mae: float = 0.10, multilabel: Sequence[str] = ()
           ) -> str:
    """answer.md: the answer in one line (:func:`summary_line`), what is out of scope
    (:func:`multilabel_note`, the test sets in ``multilabel``), whether to trust the estimates
    (:func:`trust_lines`), the headline test set's ranking, then a line per other test set."""
    first = table["testset"].iloc[0]
    main = table[table["testset"] == first].sort_values("laf_rank")
    lines = [f"# Answer for zoo `{zoo}`", "", summary_line(zoo, table, plan, max_mae), ""]
    if multilabel:
        lines += [multilabel_note(multilabel), ""]
    lines += trust_lines(table, plan, plan_set, top_model, max_mae) + [""]
    lead = (f"Models ranked without labels by LaF on test set `{first}`" if len(main) > 1 else
            f"One model, so nothing to rank; test set `{first}`")
    r0 = main.iloc[0]
    lines.append(f"{lead} ({int(r0['inputs'])} inputs); accuracy estimated without labels by "
                 f"{r0['estimator']}; true accuracy where the test set has labels.")
    lvl = f"{100 * r0['level']:.0f} %"
    untrusted = "" if r0["trusted"] else " (not trustworthy)"
    lines += ["", f"| rank | model | LaF score | estimated accuracy %{untrusted} [{lvl} "
              "prediction interval] | sampling spread % | true accuracy % |",
              "|---|---|---|---|---|---|"]
    for r in main.itertuples(index=False):
        laf = "—" if r.laf_score != r.laf_score else f"{r.laf_score:.3f}"  # one model: none
        lines.append(f"| {r.laf_rank} | `{r.model}` | {laf} | {_pct(r.estimated_accuracy)} "
                     f"{_interval(r.interval_low, r.interval_high)} | "
                     f"{_interval(r.spread_low, r.spread_high)} | {_pct(r.true_accuracy)} |")
    others = table[table["testset"] != first]
    if len(others):
        lines += ["", "Other test sets: the estimator chosen for each (on the zoo's other labelled "
                  "sets), whether it is trusted, LaF's top model with its estimate, prediction "
                  "interval and true accuracy, and the rank LaF gave the truly best model.", "",
                  "| test set | estimator (held-out MAE, points) | trusted | LaF top model | "
                  f"estimated % [{lvl}] | true % | LaF rank of the truly best |",
                  "|---|---|---|---|---|---|---|"]
        for name, grp in others.groupby("testset", sort=False):
            top = grp.sort_values("laf_rank").iloc[0]
            best_rank = ("—" if grp["true_accuracy"].isna().all()
                         else str(int(grp.loc[grp["true_accuracy"].idxmax(), "laf_rank"])))
            lines.append(f"| `{name}` | {top.estimator} ({_pct(top.evidence_mae)}) | "
                         f"{'yes' if top.trusted else 'no'} | `{top.model}` | "
                         f"{_pct(top.estimated_accuracy)} "
                         f"{_interval(top.interval_low, top.interval_high)} | "
                         f"{_pct(top.true_accuracy)} | {best_rank} |")
    lines += ["", f"To measure `{top_model}` on `{plan_set}` with few labels, label these "
              f"{len(plan)} inputs (PACE selection; indices in `label-these.csv`): "
              + ", ".join(map(str, plan[:20])) + (" ..." if len(plan) > 20 else "") + "."]
    if scorecard_line:
        lines += ["", scorecard_line]
    return "\n".join(lines) + "\n"


def figure(table: pd.DataFrame):
    """Estimated (with interval) and true accuracy per model on the main test set, LaF order."""
    first = table["testset"].iloc[0]
    main = table[table["testset"] == first].sort_values("laf_rank")
    x = np.arange(len(main))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.45 * len(main) + 2), 3.2))
    est = 100 * main["estimated_accuracy"].to_numpy()
    err = np.vstack([est - 100 * main["interval_low"].to_numpy(),
                     100 * main["interval_high"].to_numpy() - est])
    ax.errorbar(x, est, yerr=err, fmt="o", capsize=3, label="estimated (no labels), prediction interval")
    if main["true_accuracy"].notna().any():
        ax.plot(x, 100 * main["true_accuracy"].to_numpy(), "s", mfc="none", label="true")
    ax.set_xticks(x, main["model"], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("accuracy %")
    ax.set_xlabel(f"models in LaF rank order on `{first}` (best left)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def build(zoo: str, models: Sequence[str], logits: Mapping[str, np.ndarray],
          labels: Mapping[str, np.ndarray | None], source: str | None, budget: int,
          seed: int, n_boot: int = 200, *, kinds: Mapping[str, str] | None = None,
          level: float = 0.9, max_mae: float = 0.10, estimators: Sequence[str] | None = None,
          headline: str | None = None, known: MethodOutputs | None = None
          ) -> tuple[pd.DataFrame, np.ndarray, str, str]:
    """Everything the answer needs: table, PACE plan on the headline test set, its name, top
    model.

    ``logits``: test set -> (M, N, K) in the zoo's model order; ``headline``: the test set that
    heads the answer (:func:`headline_first`; default the first of ``logits``); ``kinds``: test
    set -> kind of shift (evidence of the same kind is preferred); ``known``: method outputs the
    zoo's scorecard already computed on these arrays (:func:`answer_table`).
    """
    sets = [TestSet(name, softmax(np.asarray(logits[name], dtype=np.float64)), labels.get(name),
                    np.asarray(logits[name]))
            for name in headline_first(list(logits), headline)]
    table = answer_table(models, sets, source, n_boot=n_boot, seed=seed, kinds=kinds,
                         level=level, max_mae=max_mae, estimators=estimators, known=known)
    first = sets[0]
    top = str(table[table["testset"] == first.name].sort_values("laf_rank").iloc[0]["model"])
    j = list(models).index(top)
    plan = label_plan(first.probs[j : j + 1], budget, seed)  # PACE on the top model's outputs
    return table, plan, first.name, top


@dataclass(frozen=True)
class Answer:
    """One zoo's answer: the table (one row per test set and model, ``answer.csv``), the inputs
    PACE picked (``label-these.csv``) on ``plan_set`` for ``top``, and the page (``answer.md``)."""

    table: pd.DataFrame
    plan: np.ndarray
    plan_set: str
    top: str
    markdown: str = field(repr=False)


def answer(zoo: str, models: Sequence[str], logits: Mapping[str, np.ndarray],
           labels: Mapping[str, np.ndarray | None], source: str | None, *,
           budget: int = DEFAULTS["budget"], seed: int = DEFAULTS["seed"],
           n_boot: int = DEFAULTS["bootstrap"], kinds: Mapping[str, str] | None = None,
           level: float = DEFAULTS["level"], max_mae: float = DEFAULTS["max_mae"],
           estimators: Sequence[str] | None = None, headline: str | None = None,
           scorecard_line: str = "", known: MethodOutputs | None = None) -> Answer:
    """The answer for one zoo from its logits (test set -> (M, N, K) float32, probabilities as
    log-probabilities, as the workflow stores them) and labels (test set -> (N,) or None):
    :func:`build`, then :func:`render`. The workflow's answer job and ``labelfree answer`` call
    this with the same settings (config ``answer:``, :data:`DEFAULTS`); the job passes its zoo
    scorecard's method outputs as ``known`` (the same values, not recomputed), the command has
    none and computes them all. Multi-label labels ((N, K) multi-hot) count as unlabelled and the
    page says so (:func:`multilabel_note`)."""
    multilabel = [t for t, y in labels.items() if y is not None and np.ndim(y) != 1]
    labels = {t: (None if t in multilabel else y) for t, y in labels.items()}
    table, plan, first, top = build(zoo, models, logits, labels, source, budget, seed, n_boot,
                                    kinds=kinds, level=level, max_mae=max_mae,
                                    estimators=estimators, headline=headline, known=known)
    md = render(zoo, table, plan, first, top, scorecard_line=scorecard_line, max_mae=max_mae,
                multilabel=[t for t in multilabel if t in logits])
    return Answer(table, plan, first, top, md)


def save(a: Answer, zoo: str, md: str | Path, csv: str | Path, plan: str | Path) -> None:
    """Write the answer's files as the workflow names them: ``answer.csv`` (the table; its
    markdown twin is then replaced by the page), ``label-these.csv`` and ``answer.md``."""
    store.save_table(a.table, csv, title=f"Answer for zoo {zoo}")
    store.save_table(pd.DataFrame({"testset": a.plan_set, "input_index": a.plan}), plan,
                     title=f"Inputs to label for {a.top} on {a.plan_set} (PACE)")
    with store.atomic_path(md) as tmp:
        tmp.write_text(a.markdown)
