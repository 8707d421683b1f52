"""One LaF experiment per (zoo, test set): LaF, ablations, CRC and the sampling baselines.

Spec sections 3, 4 and 6. :func:`analyse_testset` returns long-format metric rows (one per method,
budget and repetition), the per-guide CES Spearman values and LaF diagnostics; the tables and
figures of section 6 are built from these by :mod:`labelfree.laf.report`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from labelfree.laf import baselines as bl
from labelfree.laf.core import rank
from labelfree.laf.metrics import batch_metrics, ground_truth_accuracy, ranking_metrics
from labelfree.seeds import rng as seeded_rng


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
    list of corruption names (issue 20 item 4); a set of no known origin is ``other``.
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
    """Run every method of the study on one test set (spec sections 2, 3, 4.6 and 6).

    Yhat (m, n) predicted labels, y (m,) true labels, probs: the softmax outputs (CES, CRC),
    either an array (n, m, K) or a streamed source (``max_probs`` (m, n) and ``model(j)`` ->
    (m, K), e.g. :class:`labelfree.laf.study.StreamedProbs`) so that one model's outputs are in
    memory at a time. Sampling draws are seeded by (seed, dataset, test set, method, budget,
    repetition). CES time excludes the streamed source's loading (reported by the caller).
    ``origin``: the set's test-set group in the workflow (:func:`classify_testset`).
    ``bar``: the caller's progress bar (:func:`labelfree.joblog.progress`), shown the step at work.
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
    rows: list[dict[str, Any]] = []
    times: dict[str, float] = {}
    ks = params.ks

    def step(text: str) -> None:  # the bar's postfix, redrawn at the bar's pace (update(0))
        if bar is not None:
            bar.set_postfix_str(f"{testset}: {text}", refresh=False)
            bar.update(0)

    def det(method: str, score: np.ndarray, elapsed: float) -> None:
        times[method] = elapsed
        met = ranking_metrics(truth, score, ks)
        rows.append(dict(base, method=method, grid="none", budget=0, rep=0, **met))

    # LaF and its ablations (sections 2, 2.11).
    em = params.em_kwargs()
    step("LaF")
    laf = rank(Yhat, K, **em)
    det("LaF", laf.score, laf.wall_time)
    nop = rank(Yhat, K, prune=False, **em)
    det("LaF w/o pruning", nop.score, nop.wall_time)
    noo = rank(Yhat, K, optimize_params=False)
    det("LaF w/o optimizing", noo.score, noo.wall_time)
    # CRC (section 3.5).
    t0 = time.perf_counter()
    max_probs = src.max_probs
    det("CRC", bl.crc_scores(max_probs, params.crc_mode), time.perf_counter() - t0)
    other = "pairwise" if params.crc_mode == "mean" else "mean"
    t0 = time.perf_counter()
    det(f"CRC ({other})", bl.crc_scores(max_probs, other), time.perf_counter() - t0)

    # Sampling baselines (sections 3.1-3.3, 4.6).
    grids = {"main": bl.budget_grid(n, params.budget_max, params.budget_step, params.budget_min)}
    if group == "id" and params.large_budgets:
        grids["large"] = list(params.large_budgets)
    t0 = time.perf_counter()
    pool = bl.sds_pool(Yhat)
    samplers = {
        "Random": lambda b, g: bl.random_sample(m, b, g),
        "SDS": lambda b, g: bl.sds_sample(pool, b, g),
    }
    for method, draw in samplers.items():
        step(method)
        t0 = time.perf_counter()
        for grid, budgets in grids.items():
            for b in budgets:
                feasible = b <= (pool.size if method == "SDS" else m)
                reps = np.arange(params.repetitions)
                if not feasible:
                    nan = {k: np.full(reps.size, np.nan) for k in ("spearman", "kendall")}
                    rows += _rows(base, nan, method=method, grid=grid, budget=b, rep=reps)
                    continue
                idx = np.stack(
                    [draw(b, seeded_rng(seed, "laf", dataset, testset, method, b, r)) for r in reps]
                )
                est = correct[idx].mean(axis=1)
                met = batch_metrics(truth, est, ks)
                rows += _rows(base, met, method=method, grid=grid, budget=b, rep=reps)
        times[method] = time.perf_counter() - t0

    # CES, one run per guide model (section 3.4), oracle CES-best and non-oracle CES-mean.
    all_budgets = [b for bs in grids.values() for b in bs]
    ces_guides = np.full((n, len(all_budgets)), np.nan)
    run_ces = params.ces_enabled and (group != "corruption" or params.ces_on_corruptions)
    if run_ces:
        t0 = time.perf_counter()
        load0 = getattr(src, "load_seconds", 0.0)
        R = params.ces_repetitions
        feasible = [b for b in all_budgets if bl.CES_INIT <= b <= m]
        rho = np.full((n, len(all_budgets), R), np.nan)
        met_all: dict[str, np.ndarray] = {}
        for g in range(n):
            step(f"CES guide {g + 1}/{n}")
            guide = src.model(g)  # (m, K); one guide's outputs in memory at a time
            for r in range(R):
                if params.ces_nested:
                    gen = seeded_rng(seed, "laf", dataset, testset, "CES", g, r)
                    sel = bl.ces_select(guide, max(feasible), gen, params.ces_objective)
                    subsets = [sel[:b] for b in feasible]
                else:
                    subsets = [
                        bl.ces_select(
                            guide,
                            b,
                            seeded_rng(seed, "laf", dataset, testset, "CES", g, r, b),
                            params.ces_objective,
                        )
                        for b in feasible
                    ]
                est = np.stack([correct[s].mean(axis=0) for s in subsets])
                met = batch_metrics(truth, est, ks)
                cols = [all_budgets.index(b) for b in feasible]
                for key, val in met.items():
                    arr = met_all.setdefault(key, np.full((n, len(all_budgets), R), np.nan))
                    arr[g, cols, r] = val
                rho[g, cols, r] = met["spearman"]
            del guide
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # infeasible budgets: all NaN
            ces_guides = np.nanmean(rho, axis=2)
        for grid, budgets in grids.items():
            cols = [all_budgets.index(b) for b in budgets]
            # Oracle: per repetition, the guide with the best Spearman averaged over the grid.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                avg = np.nanmean(rho[:, cols, :], axis=1)  # (n, R)
            best = np.nanargmax(np.where(np.isnan(avg), -np.inf, avg), axis=0)  # (R,)
            for ci, b in zip(cols, budgets, strict=True):
                reps = np.arange(R)
                best_met = {k: v[best, ci, reps] for k, v in met_all.items()}
                rows += _rows(base, best_met, method="CES-best", grid=grid, budget=b, rep=reps)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    mean_met = {k: np.nanmean(v[:, ci, :], axis=0) for k, v in met_all.items()}
                rows += _rows(base, mean_met, method="CES-mean", grid=grid, budget=b, rep=reps)
        times["CES"] = time.perf_counter() - t0 - (getattr(src, "load_seconds", 0.0) - load0)

    quality = float(truth.mean())
    diversity = float(truth.std() * 100.0)
    info = dict(
        base,
        m=m,
        n=n,
        K=K,
        m_kept=int(laf.keep.size),
        iterations=laf.iterations,
        converged=laf.converged,
        degenerate=laf.degenerate,
        q=laf.q,
        quality=quality * 100.0,
        diversity=diversity,
        acc_min=float(truth.min() * 100.0),
        acc_max=float(truth.max() * 100.0),
        **{f"time_{k}": v for k, v in times.items()},
    )
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
    return SetResult(rows, info, model_rows, ces_guides, rq4_rows)


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
    """RQ4 / Fig. 8 (section 6.4): LaF Spearman on random fractions of the inputs or the models.

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
