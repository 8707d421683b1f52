"""The `laf` study's computations over the inference artefacts: what its workflow jobs run.

Every method of the study on one test set (:func:`analyse_testset`: LaF, its ablations, CRC and
the labelled baselines, scored against the true accuracies), one zoo's test sets read from the
inference files (:func:`analyse_sets`; a zoo as stored, or a clone control: the models of a base
zoo plus identical copies of one weak model of another zoo, built here from the stored
predictions, docs/laf.md reading R13), and its raw files.

Two ways to the same raw files: :func:`run_study` analyses every test set of a zoo in one
process; :func:`run_part` analyses some of them (a *part*: one test-set group or one test set,
:func:`labelfree.laf.plan.partition`) and writes their results losslessly, and
:func:`merge_parts` writes the zoo's raw files from the parts. Every draw is seeded by (seed,
dataset, test set, method, ...), never by the order of the work (docs/laf.md reading R7), so
the two give the same files (wall-clock times aside).
"""

from __future__ import annotations

import gzip
import json
import logging
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labelfree import store
from labelfree.joblog import progress
from labelfree.laf import baselines as bl
from labelfree.laf.core import LafResult, rank
from labelfree.laf.metrics import batch_metrics, ground_truth_accuracy, ranking_metrics
from labelfree.numerics import softmax32
from labelfree.seeds import rng as seeded_rng

log = logging.getLogger(__name__)


# --- every method on one test set -------------------------------------------------------------


@dataclass(frozen=True)
class StudyParams:
    """Parameters of the study (config key ``laf``; descriptions in config/schema/laf.yaml)."""

    budget_min: int | None = None
    budget_max: int = 180
    budget_step: int = 5
    large_budgets: tuple[int, ...] = (300, 500, 800)
    repetitions: int = 50
    ks: tuple[int, ...] = (1, 3, 5, 10)
    rel_tol: float = 1e-5
    max_iter: int = 1000
    cg_gtol: float = 0.01
    cg_maxiter: int = 25
    input_param: str = "easiness"
    ces_enabled: bool = True
    ces_repetitions: int = 10
    ces_nested: bool = True
    ces_objective: str = "laf"
    ces_on_corruptions: bool = True
    crc_mode: str = "mean"
    rq4_ratios: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 1.0)
    rq4_draws: int = 10

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> StudyParams:
        """Build from the validated ``laf`` config section (schema defaults filled in)."""
        b, em, ces, rq4 = cfg["budgets"], cfg["em"], cfg["ces"], cfg["rq4"]
        return cls(
            budget_min=b["min"],
            budget_max=b["max"],
            budget_step=b["step"],
            large_budgets=tuple(cfg["large_budgets"]),
            repetitions=cfg["repetitions"],
            ks=tuple(cfg["ks"]),
            rel_tol=em["rel_tol"],
            max_iter=em["max_iter"],
            cg_gtol=em["cg_gtol"],
            cg_maxiter=em["cg_maxiter"],
            input_param=em["input_param"],
            ces_enabled=ces["enabled"],
            ces_repetitions=ces["repetitions"],
            ces_nested=ces["nested"],
            ces_objective=ces["objective"],
            ces_on_corruptions=ces["on_corruptions"],
            crc_mode=cfg["crc_mode"],
            rq4_ratios=tuple(rq4["ratios"]),
            rq4_draws=rq4["draws"],
        )

    def em_kwargs(self) -> dict[str, Any]:
        return {
            "rel_tol": self.rel_tol,
            "max_iter": self.max_iter,
            "cg_gtol": self.cg_gtol,
            "cg_maxiter": self.cg_maxiter,
            "input_param": self.input_param,
        }


def classify_testset(name: str, origin: str = "") -> tuple[str, str, int]:
    """(group, corruption, severity) of a test set: ``id``, ``natural``, ``corruption``, ``other``.

    ``origin`` is the test-set group the workflow made the set in (the zoo's `testsets` token:
    ``corruptions`` holds the ``<corruption>-<severity>`` sets, ``natural`` the natural shifts),
    so the study learns what a set is from the sets it is given, not from the shifts layer's
    list of corruption names; a set of no known origin is ``other`` (docs/laf.md, reading R15).
    """
    if name == "id":
        return "id", "", 0
    if origin == "natural" or (not origin and name.startswith("natural")):
        return "natural", "", 0
    if origin == "corruptions":
        corruption, _, severity = name.rpartition("-")
        if not corruption or not severity.isdigit():
            raise ValueError(f"corruption set {name!r} is not named <corruption>-<severity>")
        return "corruption", corruption, int(severity)
    return "other", "", 0


class ArrayProbs:
    """Softmax outputs held as one array (n, m, K), behind the streamed sources' interface."""

    def __init__(self, probs: np.ndarray) -> None:
        if probs.ndim != 3:
            raise ValueError(f"probabilities must be (models, inputs, K), got {probs.shape}")
        self.probs = probs
        self.max_probs = probs.max(axis=2).T

    def model(self, j: int) -> np.ndarray:
        return self.probs[j]


@dataclass
class SetResult:
    """Output of :func:`analyse_testset`."""

    rows: list[dict[str, Any]]
    info: dict[str, Any]
    models: list[dict[str, Any]]
    ces_guides: np.ndarray  # (guides, budgets) mean Spearman over CES repetitions, NaN if not run
    rq4: list[dict[str, Any]]


def _rows(
    base: dict[str, Any], metrics: dict[str, np.ndarray], **cols: Any
) -> list[dict[str, Any]]:
    size = len(next(iter(metrics.values())))
    out = []
    for r in range(size):
        row = dict(base, **{k: (v[r] if isinstance(v, np.ndarray) else v) for k, v in cols.items()})
        row.update({k: float(v[r]) for k, v in metrics.items()})
        out.append(row)
    return out


def analyse_testset(
    Yhat: np.ndarray,
    y: np.ndarray,
    probs: np.ndarray,
    K: int,
    models: list[str],
    params: StudyParams,
    seed: int,
    zoo: str,
    dataset: str,
    testset: str,
    rq4: bool = False,
    origin: str = "",
    bar: Any = None,
) -> SetResult:
    """Run every method of the study on one test set (paper sections 3.3, 4.4, 4.5 and 5).

    Yhat (m, n) predicted labels, y (m,) true labels, probs: the softmax outputs (CES, CRC),
    either an array (n, m, K) or a streamed source (``max_probs`` (m, n) and ``model(j)`` ->
    (m, K), e.g. :class:`StreamedProbs`) so that one model's outputs are in memory at a time.
    Sampling draws are seeded by (seed, dataset, test set, method, budget, repetition)
    (docs/laf.md, reading R7). CES time excludes the streamed source's loading (reported by the
    caller). ``origin``: the set's test-set group in the workflow (:func:`classify_testset`).
    ``bar``: the caller's progress bar (:func:`labelfree.joblog.progress`), shown the step at work.

    The steps, in the order of the rows: :func:`_label_free_methods` (LaF, its ablations, CRC),
    :func:`_sampling_baselines` (Random, SDS), :func:`_ces_baseline` (CES-best, CES-mean), then
    the set's diagnostics (:func:`_set_info`), per-model rows and RQ4 (:func:`impact_of_size`).
    """
    Yhat = np.asarray(Yhat)
    m, n = Yhat.shape
    src = probs if hasattr(probs, "model") else ArrayProbs(np.asarray(probs))
    if src.max_probs.shape != (m, n):
        raise ValueError(
            f"{zoo}/{testset}: probabilities of {src.max_probs.shape[1]} models x "
            f"{src.max_probs.shape[0]} inputs do not match predictions {Yhat.shape}"
        )
    group, corruption, severity = classify_testset(testset, origin)
    truth = ground_truth_accuracy(Yhat, y)
    correct = Yhat == np.asarray(y)[:, None]
    base = {
        "zoo": zoo,
        "dataset": dataset,
        "testset": testset,
        "group": group,
        "corruption": corruption,
        "severity": severity,
    }
    step = _progress_step(bar, testset)
    draws = _Draws(correct, truth, params, seed, dataset, testset, base)
    laf, rows, times = _label_free_methods(Yhat, K, src.max_probs, truth, params, base, step)
    grids = _budget_grids(n, group, params)
    sampled, sampled_times = _sampling_baselines(Yhat, grids, draws, step)
    rows += sampled
    times.update(sampled_times)
    ces_guides = np.full((n, sum(len(bs) for bs in grids.values())), np.nan)
    if params.ces_enabled and (group != "corruption" or params.ces_on_corruptions):
        ces_rows, ces_guides, times["CES"] = _ces_baseline(src, grids, draws, step)
        rows += ces_rows
    model_rows = [
        dict(
            base,
            model=name,
            accuracy=float(truth[j]),
            laf_score=float(laf.score[j]),
            laf_rank=int(laf.rank[j]),
            pseudo_accuracy=float(laf.a0[j]),
            laf_acc_hat=float(laf.acc_hat[j]),
        )
        for j, name in enumerate(models)
    ]
    rq4_rows = impact_of_size(Yhat, y, K, params, seed, dataset, testset, base) if rq4 else []
    info = _set_info(base, (m, n, K), laf, truth, times)
    return SetResult(rows, info, model_rows, ces_guides, rq4_rows)


def _progress_step(bar: Any, testset: str) -> Callable[[str], None]:
    """Show the step at work in the bar's postfix, redrawn at the bar's pace (``update(0)``)."""

    def step(text: str) -> None:
        if bar is not None:
            bar.set_postfix_str(f"{testset}: {text}", refresh=False)
            bar.update(0)

    return step


@dataclass(frozen=True)
class _Draws:
    """What the labelled baselines of one test set share: which inputs each model gets right
    (``correct`` (m, n)), the true accuracies, the parameters and the seed names of their draws
    (docs/laf.md, reading R7), and the test set's columns of every row (``base``)."""

    correct: np.ndarray
    truth: np.ndarray
    params: StudyParams
    seed: int
    dataset: str
    testset: str
    base: dict[str, Any]

    def rng(self, *names: object) -> np.random.Generator:
        return seeded_rng(self.seed, "laf", self.dataset, self.testset, *names)


def _label_free_methods(
    Yhat: np.ndarray, K: int, max_probs: np.ndarray, truth: np.ndarray, params: StudyParams,
    base: dict[str, Any], step: Callable[[str], None],
) -> tuple[LafResult, list[dict[str, Any]], dict[str, float]]:
    """LaF, its ablations (paper section 5.3) and CRC in both modes (paper section 4.4):
    (LaF's result, one metric row per method, method -> seconds). When no input is pruned, "w/o
    pruning" is LaF's own fit (the same computation), not run twice."""
    rows: list[dict[str, Any]] = []
    times: dict[str, float] = {}

    def det(method: str, score: np.ndarray, elapsed: float) -> None:
        times[method] = elapsed
        met = ranking_metrics(truth, score, params.ks)
        rows.append(dict(base, method=method, grid="none", budget=0, rep=0, **met))

    em = params.em_kwargs()
    step("LaF")
    laf = rank(Yhat, K, **em)
    det("LaF", laf.score, laf.wall_time)
    # Where pruning keeps every input the ablation is the same fit, bit for bit: its score and
    # time are LaF's.
    nop = laf if laf.keep.size == Yhat.shape[0] else rank(Yhat, K, prune=False, **em)
    det("LaF w/o pruning", nop.score, nop.wall_time)
    noo = rank(Yhat, K, optimize_params=False)
    det("LaF w/o optimizing", noo.score, noo.wall_time)
    t0 = time.perf_counter()
    det("CRC", bl.crc_scores(max_probs, params.crc_mode), time.perf_counter() - t0)
    other = "pairwise" if params.crc_mode == "mean" else "mean"
    t0 = time.perf_counter()
    det(f"CRC ({other})", bl.crc_scores(max_probs, other), time.perf_counter() - t0)
    return laf, rows, times


def _budget_grids(n: int, group: str, params: StudyParams) -> dict[str, list[int]]:
    """Budgets of the labelled baselines: the ``main`` grid, and the ``large`` budgets of
    Table A1 on the `id` set (docs/laf.md, reading R10)."""
    grids = {"main": bl.budget_grid(n, params.budget_max, params.budget_step, params.budget_min)}
    if group == "id" and params.large_budgets:
        grids["large"] = list(params.large_budgets)
    return grids


def _sampling_baselines(
    Yhat: np.ndarray, grids: Mapping[str, list[int]], d: _Draws, step: Callable[[str], None],
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Random and SDS (paper section 4.4), every budget of every grid and every repetition:
    (one metric row per draw, method -> seconds). A budget above what a sampler can label
    (SDS's pool) gives NaN rows, like the paper's "-"."""
    m = Yhat.shape[0]
    rows: list[dict[str, Any]] = []
    times: dict[str, float] = {}
    pool = bl.sds_pool(Yhat)
    samplers = {
        "Random": lambda b, g: bl.random_sample(m, b, g),
        "SDS": lambda b, g: bl.sds_sample(pool, b, g),
    }
    reps = np.arange(d.params.repetitions)
    for method, draw in samplers.items():
        step(method)
        t0 = time.perf_counter()
        for grid, budgets in grids.items():
            for b in budgets:
                if b > (pool.size if method == "SDS" else m):
                    nan = {k: np.full(reps.size, np.nan) for k in ("spearman", "kendall")}
                    rows += _rows(d.base, nan, method=method, grid=grid, budget=b, rep=reps)
                    continue
                idx = np.stack([draw(b, d.rng(method, b, r)) for r in reps])
                met = batch_metrics(d.truth, d.correct[idx].mean(axis=1), d.params.ks)
                rows += _rows(d.base, met, method=method, grid=grid, budget=b, rep=reps)
        times[method] = time.perf_counter() - t0
    return rows, times


def _ces_baseline(
    src: Any, grids: Mapping[str, list[int]], d: _Draws, step: Callable[[str], None],
) -> tuple[list[dict[str, Any]], np.ndarray, float]:
    """CES, one run per guide model (paper section 4.4; docs/laf.md, reading R8), reported as
    the oracle CES-best and the non-oracle CES-mean: (metric rows, per-guide mean Spearman
    (guides, budgets), seconds without the streamed source's loading)."""
    t0 = time.perf_counter()
    load0 = getattr(src, "load_seconds", 0.0)
    budgets = [b for bs in grids.values() for b in bs]
    rho, met_all = _ces_runs(src, budgets, d, step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # infeasible budgets: all NaN
        ces_guides = np.nanmean(rho, axis=2)
    rows = []
    for grid, grid_budgets in grids.items():
        rows += _ces_rows(rho, met_all, [budgets.index(b) for b in grid_budgets], grid,
                          grid_budgets, d.base)
    seconds = time.perf_counter() - t0 - (getattr(src, "load_seconds", 0.0) - load0)
    return rows, ces_guides, seconds


def _ces_runs(
    src: Any, budgets: list[int], d: _Draws, step: Callable[[str], None],
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Every CES selection: guide g, repetition r, each feasible budget (nested prefixes of one
    selection, or one selection per budget). Returns the Spearman values (guides, budgets, R)
    and every metric likewise, NaN where a budget is infeasible."""
    p = d.params
    n = d.correct.shape[1]
    m = d.correct.shape[0]
    R = p.ces_repetitions
    feasible = [b for b in budgets if bl.CES_INIT <= b <= m]
    cols = [budgets.index(b) for b in feasible]
    rho = np.full((n, len(budgets), R), np.nan)
    met_all: dict[str, np.ndarray] = {}
    for g in range(n):
        step(f"CES guide {g + 1}/{n}")
        guide = src.model(g)  # (m, K); one guide's outputs in memory at a time
        for r in range(R):
            if p.ces_nested:
                sel = bl.ces_select(guide, max(feasible), d.rng("CES", g, r), p.ces_objective)
                subsets = [sel[:b] for b in feasible]
            else:
                subsets = [
                    bl.ces_select(guide, b, d.rng("CES", g, r, b), p.ces_objective)
                    for b in feasible
                ]
            est = np.stack([d.correct[s].mean(axis=0) for s in subsets])
            met = batch_metrics(d.truth, est, p.ks)
            for key, val in met.items():
                arr = met_all.setdefault(key, np.full((n, len(budgets), R), np.nan))
                arr[g, cols, r] = val
            rho[g, cols, r] = met["spearman"]
        del guide
    return rho, met_all


def _ces_rows(
    rho: np.ndarray, met_all: Mapping[str, np.ndarray], cols: list[int], grid: str,
    budgets: list[int], base: dict[str, Any],
) -> list[dict[str, Any]]:
    """CES-best (oracle: per repetition, the guide with the best Spearman averaged over the
    grid) and CES-mean (every guide's mean) rows of one budget grid."""
    R = rho.shape[2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        avg = np.nanmean(rho[:, cols, :], axis=1)  # (n, R)
    best = np.nanargmax(np.where(np.isnan(avg), -np.inf, avg), axis=0)  # (R,)
    rows: list[dict[str, Any]] = []
    for ci, b in zip(cols, budgets, strict=True):
        reps = np.arange(R)
        best_met = {k: v[best, ci, reps] for k, v in met_all.items()}
        rows += _rows(base, best_met, method="CES-best", grid=grid, budget=b, rep=reps)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean_met = {k: np.nanmean(v[:, ci, :], axis=0) for k, v in met_all.items()}
        rows += _rows(base, mean_met, method="CES-mean", grid=grid, budget=b, rep=reps)
    return rows


def _set_info(
    base: dict[str, Any], shape: tuple[int, int, int], laf: LafResult, truth: np.ndarray,
    times: Mapping[str, float],
) -> dict[str, Any]:
    """The test set's row of ``testsets.csv``: sizes (m, n, K), LaF's diagnostics, the zoo's
    quality and diversity (mean and std of its accuracies, in points), every method's time."""
    m, n, K = shape
    return dict(
        base,
        m=m,
        n=n,
        K=K,
        m_kept=int(laf.keep.size),
        iterations=laf.iterations,
        converged=laf.converged,
        degenerate=laf.degenerate,
        q=laf.q,
        quality=float(truth.mean()) * 100.0,
        diversity=float(truth.std() * 100.0),
        acc_min=float(truth.min() * 100.0),
        acc_max=float(truth.max() * 100.0),
        **{f"time_{k}": v for k, v in times.items()},
    )


def impact_of_size(
    Yhat: np.ndarray,
    y: np.ndarray,
    K: int,
    params: StudyParams,
    seed: int,
    dataset: str,
    testset: str,
    base: dict[str, Any],
) -> list[dict[str, Any]]:
    """RQ4 / Fig. 8 (paper section 5.4): LaF Spearman on random fractions of the inputs or the
    models.

    Uniformly random subsets, ``rq4_draws`` per ratio (one when the ratio keeps everything);
    ground truth recomputed on the same subset; at least 2 models are kept.
    """
    m, n = Yhat.shape
    out = []
    for axis, total in (("inputs", m), ("models", n)):
        for ratio in params.rq4_ratios:
            size = max(2, int(round(ratio * total)))
            draws = 1 if size >= total else params.rq4_draws
            for d in range(draws):
                gen = seeded_rng(seed, "laf", dataset, testset, "rq4", axis, ratio, d)
                pick = np.sort(gen.choice(total, size=min(size, total), replace=False))
                Ys, ys = (Yhat[pick], y[pick]) if axis == "inputs" else (Yhat[:, pick], y)
                truth = ground_truth_accuracy(Ys, ys)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)  # n = 2 tie warning
                    res = rank(Ys, K, **params.em_kwargs())
                met = ranking_metrics(truth, res.score, ks=())
                out.append(dict(base, axis=axis, ratio=ratio, draw=d, size=int(pick.size), **met))
    return out


# --- one zoo from the inference artefacts ----------------------------------------------------


@dataclass(frozen=True)
class SetInputs:
    """Where one test set's artefacts are: the inference file (of its group) of each model, and
    the labels; the file holds test set ``name`` among others (labelfree.store.read_logits).
    ``origin``: the test-set group the workflow made it in (`corruptions`, `natural`, ...)."""

    name: str
    infer: tuple[str, ...]
    labels: str
    origin: str = ""


def read_model_logits(ref: tuple[str, str]) -> np.ndarray:
    """The logits (m, K) float32 of one model on one test set: the study's only read of them.

    ``ref`` = (the model's inference file for the test set's group, the test set's name).
    """
    return store.read_logits(*ref)


class StreamedProbs:
    """Softmax outputs of a test set's models, one model in memory at a time, never as one
    (n, m, K) array (docs/laf.md, reading R12).

    ``max_probs`` (m, n) float32 (CRC) is kept; :meth:`model` re-reads model j's logits and
    returns its (m, K) float32 softmax (CES guides). ``load_seconds`` adds up the time spent
    reading and converting.
    """

    def __init__(self, refs: Sequence[tuple[str, str]], max_probs: np.ndarray, K: int) -> None:
        self.refs = list(refs)
        self.max_probs = max_probs
        self.K = K
        self.load_seconds = 0.0

    def __len__(self) -> int:
        return len(self.refs)

    def model(self, j: int) -> np.ndarray:
        t0 = time.perf_counter()
        probs = softmax32(read_model_logits(self.refs[j]))
        self.load_seconds += time.perf_counter() - t0
        return probs

    def subset(self, keep: int, extra: StreamedProbs | None = None, j: int = 0, copies: int = 0):
        """The first ``keep`` models plus ``copies`` copies of model ``j`` of ``extra``."""
        refs = self.refs[:keep]
        mp = [self.max_probs[:, :keep]]
        if extra is not None and copies:
            refs += [extra.refs[j]] * copies
            mp.append(np.repeat(extra.max_probs[:, j : j + 1], copies, axis=1))
        out = StreamedProbs(refs, np.concatenate(mp, axis=1), self.K)
        out.load_seconds = self.load_seconds + (extra.load_seconds if extra is not None else 0.0)
        return out


def load_testset(inputs: SetInputs) -> tuple[np.ndarray, np.ndarray, StreamedProbs]:
    """(predictions (m, n) int64, labels (m,), streamed softmax outputs of the n models).

    One model's logits are in memory at a time; what stays is the argmax and the max softmax
    probability of every model (m x n each).
    """
    t0 = time.perf_counter()
    y = store.read_labels(inputs.labels)
    if y is None:
        raise store.ArtefactError(f"{inputs.labels}: LaF needs labels to score its ranking; "
                                  "this test set has none")
    if y.ndim != 1:
        raise store.ArtefactError(f"{inputs.labels}: LaF needs single-label y, got {y.shape}")
    preds, max_probs, shape = [], [], None
    refs = [(path, inputs.name) for path in inputs.infer]
    for ref in refs:
        lg = read_model_logits(ref)
        if shape is None:
            shape = lg.shape
            if y.shape[0] != shape[0]:
                raise store.ArtefactError(
                    f"{inputs.labels}: {y.shape[0]} labels but {shape[0]} inference rows in {ref[0]}"
                )
        elif lg.shape != shape:
            raise store.ArtefactError(
                f"{inputs.name}: inference outputs differ in shape "
                f"{sorted({shape, lg.shape})} ({ref[0]})"
            )
        preds.append(lg.argmax(axis=1))
        max_probs.append(softmax32(lg).max(axis=1))
        del lg
    probs = StreamedProbs(refs, np.stack(max_probs, axis=1), shape[1])
    probs.load_seconds = time.perf_counter() - t0
    return np.stack(preds, axis=1).astype(np.int64), y.astype(np.int64), probs


def pick_clone(source_id: SetInputs, target_accuracy: float) -> tuple[int, float]:
    """Index and ID accuracy of the source model whose ID accuracy is nearest to the target."""
    preds, y, _ = load_testset(source_id)
    acc = ground_truth_accuracy(preds, y)
    j = int(np.argmin(np.abs(acc - target_accuracy)))
    return j, float(acc[j])


def clone_control(entry: Mapping, testsets: Sequence[SetInputs]) -> dict:
    """The clone control (docs/laf.md, reading R13) as :func:`run_study` takes it.

    ``entry`` (the rule's ``clone`` entry): ``accuracy`` (the target ID accuracy), ``copies``,
    ``base_models``, ``source_infer`` (per test set, the source zoo's inference files, in the
    order of ``testsets``), ``source_models`` and, when ``testsets`` is a part without the `id`
    set, ``source_id`` ({"infer": the source's `id` inference files, "labels": the `id` labels}).
    The source model whose `id` accuracy is nearest the target is copied; raises ValueError when
    the zoos have no `id` test set.
    """
    names = [t.name for t in testsets]
    source = [
        SetInputs(t.name, tuple(paths), t.labels, t.origin)
        for t, paths in zip(testsets, entry["source_infer"], strict=True)
    ]
    if entry.get("source_id"):
        source_id = SetInputs("id", tuple(entry["source_id"]["infer"]), entry["source_id"]["labels"])
    elif "id" in names:
        source_id = source[names.index("id")]
    else:
        raise ValueError("clone control: the zoos have no `id` test set")
    j, acc = pick_clone(source_id, entry["accuracy"])
    log.info(
        "clone control: %d copies of %s (ID accuracy %.3f)",
        entry["copies"], entry["source_models"][j], acc,
    )
    return {
        "source": source,
        "index": j,
        "copies": entry["copies"],
        "base_models": entry["base_models"],
        "name": entry["source_models"][j],
    }


def analyse_sets(
    zoo: str,
    dataset: str,
    models: Sequence[str],
    testsets: Sequence[SetInputs],
    params: StudyParams,
    seed: int,
    clone: dict | None = None,
) -> list[SetResult]:
    """Every method on each of ``testsets`` (:func:`analyse_testset`): one :class:`SetResult` per
    set, in order, its ``info`` with the time spent loading (``time_load``).

    ``clone`` (control zoo): {"source": [SetInputs per test set, same order], "index": j,
    "copies": c, "base_models": N, "name": model id}: the base models (first N) plus c copies of
    source model j.
    """
    results = []
    names = list(models)
    bar = progress(total=len(testsets), desc=f"laf {zoo}", unit="set")
    for t_idx, ts in enumerate(testsets):
        preds, y, probs = load_testset(ts)
        if clone is not None:
            keep = clone["base_models"] or preds.shape[1]
            src_preds, src_y, src_probs = load_testset(clone["source"][t_idx])
            if not np.array_equal(src_y, y):
                raise store.ArtefactError(
                    f"clone control {zoo}: test set {ts.name} differs between base and source zoo"
                )
            j, c = clone["index"], clone["copies"]
            preds = np.concatenate([preds[:, :keep], np.repeat(src_preds[:, j : j + 1], c, 1)], 1)
            probs = probs.subset(keep, src_probs, j, c)
            names = list(models)[:keep] + [f"{clone['name']}-copy{i}" for i in range(c)]
        K = probs.K
        group = classify_testset(ts.name, ts.origin)[0]
        res = analyse_testset(
            preds, y, probs, K, names, params, seed, zoo, dataset, ts.name, rq4=group == "id",
            origin=ts.origin, bar=bar,
        )
        res.info = dict(res.info, time_load=probs.load_seconds)
        results.append(res)
        bar.update(1)
        log.info(
            "%s/%s: LaF rho=%.3f (%d of %d rows kept, %d EM iterations)",
            zoo,
            ts.name,
            next(r["spearman"] for r in res.rows if r["method"] == "LaF"),
            res.info["m_kept"],
            res.info["m"],
            res.info["iterations"],
        )
    bar.close()
    return results


def write_raw(results: Sequence[SetResult], out_dir: str | Path) -> None:
    """Write a zoo's raw files from its test sets' results, in the order given:
    ``out_dir``/{metrics.csv.gz, testsets.csv, models.csv, rq4.csv, ces_guides.npz}."""
    out = Path(out_dir)
    rows = [r for res in results for r in res.rows]
    infos = [res.info for res in results]
    model_rows = [r for res in results for r in res.models]
    rq4_rows = [r for res in results for r in res.rq4]
    guides = {res.info["testset"]: res.ces_guides for res in results}
    out.mkdir(parents=True, exist_ok=True)
    # gzip without a file name or time in its header: the same rows give the same bytes
    csv = pd.DataFrame(rows).to_csv(index=False, float_format="%.6g").encode()
    with store.atomic_path(out / "metrics.csv.gz", suffix=".gz") as tmp:
        tmp.write_bytes(gzip.compress(csv, mtime=0))
    with store.atomic_path(out / "testsets.csv") as tmp:
        pd.DataFrame(infos).to_csv(tmp, index=False, float_format="%.6g")
    with store.atomic_path(out / "models.csv") as tmp:
        pd.DataFrame(model_rows).to_csv(tmp, index=False, float_format="%.6g")
    with store.atomic_path(out / "rq4.csv") as tmp:
        pd.DataFrame(rq4_rows).to_csv(tmp, index=False, float_format="%.6g")
    # one NaN bit pattern: nanmean's NaN has the sign bit set, a part file's (JSON) NaN has not
    store.save_npz(out / "ces_guides.npz",
                   **{k.replace("-", "_"): np.where(np.isnan(v), np.nan, v) for k, v in guides.items()})


def run_study(
    zoo: str,
    dataset: str,
    models: Sequence[str],
    testsets: Sequence[SetInputs],
    params: StudyParams,
    seed: int,
    out_dir: str | Path,
    clone: dict | None = None,
) -> None:
    """Analyse one zoo on all its test sets in this process and write ``out_dir``/{metrics.csv.gz,
    testsets.csv, models.csv, rq4.csv, ces_guides.npz} (``clone``: see :func:`analyse_sets`)."""
    write_raw(analyse_sets(zoo, dataset, models, testsets, params, seed, clone), out_dir)


# --- the same study split into independent jobs ------------------------------------------------

#: Format version of a part file; :func:`read_part` refuses others.
PART_VERSION = 1


def _plain(obj):
    """JSON form of a numpy scalar (``json.dumps(default=...)``); floats keep every bit (repr)."""
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot store {type(obj).__name__} in a LaF part file")


def write_part(results: Sequence[SetResult], path: str | Path) -> None:
    """Store test sets' results losslessly (gzipped JSON: Python's float repr round-trips every
    float64, NaN included), so that :func:`merge_parts` rebuilds exactly :func:`write_raw`'s input."""
    doc = {
        "version": PART_VERSION,
        "sets": [
            {
                "rows": res.rows,
                "info": res.info,
                "models": res.models,
                "rq4": res.rq4,
                "ces_guides": {
                    "shape": list(res.ces_guides.shape),
                    "values": [float(v) for v in res.ces_guides.ravel()],
                },
            }
            for res in results
        ],
    }
    data = json.dumps(doc, default=_plain, allow_nan=True).encode()
    with store.atomic_path(path, suffix=".gz") as tmp:
        tmp.write_bytes(gzip.compress(data, mtime=0))


def read_part(path: str | Path) -> list[SetResult]:
    """The results a :func:`write_part` file holds, in its order."""
    try:
        doc = json.loads(gzip.decompress(Path(path).read_bytes()))
    except (OSError, EOFError, ValueError) as exc:
        raise store.ArtefactError(f"{path}: not a LaF part file ({exc})") from exc
    if doc.get("version") != PART_VERSION:
        raise store.ArtefactError(
            f"{path}: LaF part file version {doc.get('version')!r}, expected {PART_VERSION}"
        )
    out = []
    for s in doc["sets"]:
        g = s["ces_guides"]
        guides = np.array(g["values"], dtype=np.float64).reshape(g["shape"])
        out.append(SetResult(s["rows"], s["info"], s["models"], guides, s["rq4"]))
    return out


def run_part(
    zoo: str,
    dataset: str,
    models: Sequence[str],
    testsets: Sequence[SetInputs],
    params: StudyParams,
    seed: int,
    path: str | Path,
    clone: dict | None = None,
) -> None:
    """Analyse a part of a zoo's test sets (:func:`analyse_sets`) and :func:`write_part` it."""
    write_part(analyse_sets(zoo, dataset, models, testsets, params, seed, clone), path)


def merge_parts(
    paths: Sequence[str | Path], out_dir: str | Path, order: Sequence[str] | None = None
) -> None:
    """Write a zoo's raw files (:func:`write_raw`) from its part files.

    ``order``: the zoo's test sets in the order of :func:`run_study` (default: the parts' order);
    every test set must occur exactly once over the parts.
    """
    results = [res for p in paths for res in read_part(p)]
    names = [res.info["testset"] for res in results]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"test sets {dup} occur in more than one LaF part")
    if order is not None:
        if sorted(order) != sorted(names):
            raise ValueError(
                f"LaF parts hold test sets {sorted(names)}, the zoo has {sorted(order)}"
            )
        results = [results[names.index(t)] for t in order]
    write_raw(results, out_dir)
