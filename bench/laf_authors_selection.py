"""Our Random, SDS and CES against the LaF authors' selection code, on the same prediction arrays.

The authors' code (github.com/testing-cs/LaF-model-selection, ``utils.py``, called by
``main_selection.py``; ``main_eva.py`` / ``main_ces_best.py`` score it) is not part of this
repository: pass the folder of a checkout with ``--authors``. Its functions are imported and called
on our arrays unchanged, with one patch: ``scipy.stats.mode`` gets ``keepdims=True`` (SciPy >= 1.11
dropped the trailing axis the code expects; the mode itself, ties to the smallest label, is the
same).

Inputs: a results tree of the workflow (``--results``), one zoo and the dataset of its test sets.
Every test set the zoo's inference files hold is read (logits -> predicted labels and softmax),
labels from ``results/testsets/<dataset>/<set>.npz``. Both sides use the same budgets (our grid,
docs/laf.md reading R10) and the same number of repetitions; the draws differ (Python ``random``
and ``np.random`` seeded per repetition on their side, ``numpy.random.Generator`` on ours), so
per-set means agree up to sampling noise: the script prints that noise (the standard error of the
mean over repetitions) beside each difference.

Each side's Spearman is computed as that side computes it: ours by ``labelfree.laf.metrics``
(constant estimates score 0, docs/laf.md reading R6), theirs by ``scipy.stats.spearmanr`` of
``rankdata(..., 'min')`` ranks (NaN for a constant estimate; averaged with ``np.nanmean`` and the
NaN count reported). Also printed: the overlap of the SDS candidate pools (deterministic on both
sides), and LaF with both readings of the per-input parameter (docs/laf.md reading R1;
``laf.em.input_param``).

Usage (writes one row per test set and method)::

    python bench/laf_authors_selection.py --authors /tmp/LaF-model-selection \
        --results /work/after/smoke/results --zoo laf_spread --dataset digits \
        --reps 10 --ces-reps 2 --ces-budget-step 50 --out /tmp/laf-authors.csv
"""

from __future__ import annotations

import argparse
import functools
import importlib
import random
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
from scipy import stats

from labelfree import store
from labelfree.laf import baselines as bl
from labelfree.laf.core import rank
from labelfree.laf.metrics import ranking_metrics
from labelfree.laf.run import classify_testset
from labelfree.numerics import softmax32


def load_authors(folder: Path):
    """The authors' ``utils`` module, with ``stats.mode`` keeping its axis (see module doc)."""
    sys.path.insert(0, str(folder))
    utils = importlib.import_module("utils")
    mode = functools.partial(stats.mode, keepdims=True)
    utils.stats = SimpleNamespace(mode=mode)
    return utils


def read_sets(results: Path, zoo: str, dataset: str):
    """{test set: (Yhat (m, n) int64, y (m,), [probs (m, K) float32 per model], origin)}."""
    models = sorted(p for p in (results / "infer" / zoo).iterdir() if p.is_dir())
    out = {}
    for f in sorted(models[0].glob("*.npz")):
        for name in store.inference_testsets(f):
            y = store.read_labels(results / "testsets" / dataset / f"{name}.npz")
            logits = [store.read_logits(m / f.name, name) for m in models]
            Yhat = np.stack([lg.argmax(axis=1) for lg in logits], axis=1).astype(np.int64)
            out[name] = (Yhat, y.astype(np.int64), [softmax32(lg) for lg in logits], f.stem)
    return out, [m.name for m in models]


def their_rho(truth, est):
    """Spearman as main_eva.py computes it (NaN for a constant estimate)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        r = stats.spearmanr(
            stats.rankdata(truth, method="min"), stats.rankdata(est, method="min")
        )[0]
    return float(r)


def our_rho(truth, est):
    return ranking_metrics(truth, est, (1,), constant_as_zero=True)["spearman"]


def sampling(utils, Yhat, y, budgets, reps, seed):
    """{(side, method): (reps, budgets) Spearman} for Random and SDS."""
    m, n = Yhat.shape
    correct = Yhat == y[:, None]
    truth = correct.mean(axis=0)
    label_list = np.column_stack([y, Yhat])
    params = SimpleNamespace(model_num=n)
    pool = bl.sds_pool(Yhat)
    out = {k: np.full((reps, len(budgets)), np.nan) for k in
           [("ours", "Random"), ("ours", "SDS"), ("authors", "Random"), ("authors", "SDS")]}
    for r in range(reps):
        random.seed(seed + r)
        np.random.seed(seed + r)  # noqa: NPY002 (their code draws from the global state)
        for i, b in enumerate(budgets):
            rng = np.random.default_rng([seed, r, b])
            out["ours", "Random"][r, i] = our_rho(
                truth, bl.subset_accuracy(correct, bl.random_sample(m, b, rng)))
            if b <= pool.size:
                out["ours", "SDS"][r, i] = our_rho(
                    truth, bl.subset_accuracy(correct, bl.sds_sample(pool, b, rng)))
            out["authors", "Random"][r, i] = their_rho(truth, utils.randomSel(params, label_list, b)[0])
            if b <= int(m * 0.25):
                out["authors", "SDS"][r, i] = their_rho(truth, utils.sdsSel(params, label_list, b)[0])
    return out


def sds_pool_overlap(utils, Yhat):
    """Share of our SDS pool that the authors' pool (top 25 % by discrimination) also holds."""
    mode = utils.label_compare(Yhat)
    r_rank, _ = utils.r_rate(Yhat, mode)
    dis_rank, _ = utils.item_discrimination(r_rank, Yhat, mode)
    theirs = set(dis_rank[: int(len(dis_rank) * 0.25)].tolist())
    ours = bl.sds_pool(Yhat)
    return len(theirs & set(ours.tolist())) / max(len(ours), 1)


def ces(utils, Yhat, y, probs, budgets, reps, seed):
    """{(side, 'CES-best'): (reps, budgets)}: per repetition the guide with the best mean
    Spearman over the budgets (main_ces_best.py); ours nested (reading R8), theirs one
    selection per budget as main_selection.py runs it."""
    m, n = Yhat.shape
    correct = Yhat == y[:, None]
    truth = correct.mean(axis=0)
    feas = [b for b in budgets if bl.CES_INIT <= b <= m]
    label_list = np.column_stack([y, Yhat])
    params = SimpleNamespace(model_num=n)
    rho = {s: np.full((n, reps, len(feas)), np.nan) for s in ("ours", "authors")}
    for g in range(n):
        for r in range(reps):
            rng = np.random.default_rng([seed, g, r])
            sel = bl.ces_select(probs[g], max(feas), rng, "laf")
            for i, b in enumerate(feas):
                ours_b = sel[: bl.CES_INIT + bl.CES_STEP * ((b - bl.CES_INIT) // bl.CES_STEP)]
                rho["ours"][g, r, i] = our_rho(truth, bl.subset_accuracy(correct, ours_b))
            np.random.seed(seed + 1000 * g + r)  # noqa: NPY002 (their code: global state)
            for i, b in enumerate(feas):
                idx = utils.conditional_sample(probs[g], b, m)
                acc = utils.computeAcc(params, label_list, idx, len(idx))
                rho["authors"][g, r, i] = their_rho(truth, acc)
    out = {}
    for s, a in rho.items():
        best = np.nanargmax(np.nanmean(a, axis=2), axis=0)  # (reps,)
        out[s, "CES-best"] = a[best, np.arange(reps)]
    return out


def laf_readings(Yhat, K):
    """LaF's Spearman ingredients with both readings of the per-input parameter."""
    return {p: rank(Yhat, K, input_param=p).score for p in ("easiness", "difficulty")}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--authors", type=Path, required=True, help="checkout of LaF-model-selection")
    ap.add_argument("--results", type=Path, required=True)
    ap.add_argument("--zoo", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--ces-reps", type=int, default=3)
    ap.add_argument("--ces-groups", default="id,natural", help="test-set groups CES runs on")
    ap.add_argument("--budget-step", type=int, default=5)
    ap.add_argument("--ces-budget-step", type=int, default=5,
                    help="coarser budget grid for CES (the authors' CES is slow on 2 cores)")
    ap.add_argument("--budget-max", type=int, default=180)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    utils = load_authors(a.authors)
    sets, models = read_sets(a.results, a.zoo, a.dataset)
    print(f"{a.zoo}: {len(models)} models, {len(sets)} test sets", flush=True)
    rows = []
    for name, (Yhat, y, probs, origin) in sets.items():
        t0 = time.perf_counter()
        group, corruption, severity = classify_testset(name, origin)
        n = Yhat.shape[1]
        K = int(max(Yhat.max(), y.max())) + 1
        truth = (Yhat == y[:, None]).mean(axis=0)
        budgets = bl.budget_grid(n, a.budget_max, a.budget_step)
        res = sampling(utils, Yhat, y, budgets, a.reps, a.seed)
        if group in a.ces_groups.split(","):
            ces_budgets = bl.budget_grid(n, a.budget_max, a.ces_budget_step)
            res.update(ces(utils, Yhat, y, probs, ces_budgets, a.ces_reps, a.seed))
        base = dict(zoo=a.zoo, testset=name, group=group, severity=severity, models=n,
                    inputs=Yhat.shape[0], acc_min=truth.min(), acc_max=truth.max())
        for (side, method), arr in res.items():
            per_rep = np.nanmean(arr, axis=1)
            rows.append(dict(base, side=side, method=method, spearman=np.nanmean(arr),
                             sem=np.nanstd(per_rep) / np.sqrt(max(len(per_rep), 1)),
                             nan_share=float(np.isnan(arr).mean())))
        for p, score in laf_readings(Yhat, K).items():
            rows.append(dict(base, side="ours", method=f"LaF ({p})", spearman=our_rho(truth, score),
                             sem=0.0, nan_share=0.0))
        rows.append(dict(base, side="both", method="SDS pool overlap",
                         spearman=sds_pool_overlap(utils, Yhat), sem=0.0, nan_share=0.0))
        print(f"  {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    df = pd.DataFrame(rows)
    df.to_csv(a.out, index=False)
    wide = df.pivot_table(index=["testset", "group"], columns=["method", "side"], values="spearman")
    print(wide.round(3).to_string())
    by_group = df.groupby(["group", "method", "side"]).spearman.mean().unstack("side")
    print(by_group.round(3).to_string())


if __name__ == "__main__":
    main()
