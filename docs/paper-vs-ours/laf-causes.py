"""Experiments behind the causes of LaF's failing claims (docs/laf.md, "Claims and reproduction").

Each part changes one suspected factor on stored prediction arrays (no retraining) and
recomputes the number a check or a paper table is made of, with the study's own primitives
(``labelfree.laf.core.rank``, ``labelfree.laf.baselines``, ``labelfree.laf.metrics``):

* ``spread`` (RQ1-budget, RQ1-spread: checks 2a, 2b, 3): the real-MNIST paper-zoo run's ID set
  (30 models of the authors' MNIST networks, 1,000 inputs). Sub-zoos of 20 models consecutive in
  ID accuracy, from the least to the most accurate, change the zoo's accuracy spread with the
  number of models (and so the budget grid, 20..180 step 5, plus 300 and 500) fixed; Random has
  50 repetitions per budget, as in the paper (Sec. 4.4).
* ``fraction`` (budget as a fraction of the set): the same checks with Random drawing its labels
  from one half of the ID set and the truth measured on the other half, so that the budget is no
  part of the set it is scored against (as with the paper's 10,000 inputs, where 180 labels are
  1.8 % of the set; here 18 %).
* ``ablation-id`` (RQ3-id: check ``5 optimizing id``): LaF minus LaF w/o optimizing on 1,000
  bootstrap resamples of the paper-zoo run's ID inputs (the test set changed, the zoo kept).
* ``ablation-all`` (RQ3-all: checks ``5 * all``): the checks recomputed from each run's own
  per-set rows (``results/laf/raw/<zoo>/metrics.csv.gz``) over the sets whose zoo quality (mean
  accuracy) is at least a threshold.
* ``tight`` (RQ2-corruption, our side): per corrupted set of the paper-zoo run, the 15 of 30
  models whose accuracies on that set lie closest together (the narrowest window of 15 in the
  sorted accuracies; a zoo that is tight on every set), against the 15 spread evenly over the
  sorted accuracies (every other model); Random, SDS (50 repetitions, budgets 15..180 step 5)
  and LaF.
* ``decorrelate`` (RQ2-corruption, the order): every set of the paper-zoo run (30 models)
  with each model's errors moved to other inputs of the same class, independently per model,
  on a share f of the inputs (f = 0: the run's arrays; f = 1: errors independent across models).
  Each model keeps its accuracy per class and its confusions (a wrong label is one the model
  gave on an input of that class), so the true ranking is unchanged; only how far the models
  err together changes. Random, SDS (50 repetitions, budgets 30..180 step 5) and LaF.
* ``converged`` (RQ1/RQ2-baselines, LaF against SDS): ``decorrelate`` on the run of
  config/paper/laf-mnist-converged.yaml (the same 30 networks trained to their authors' epoch
  counts on a GPU, docs/paper-vs-ours/laf-mnist-converged.md), where LaF overtakes Random but
  not SDS.
* ``floor`` (RQ2-corruption, the paper's side): the lowest mean Spearman that uniform random
  sampling can give on a 30-model zoo with the accuracy range the paper prints per MNIST-C set
  (Table A2): one model at one end of the range, 29 at the other (their order decided by 0.01
  points, i.e. by noise), errors independent (the most sampling noise), the paper's budgets
  30..180 step 5, 50 repetitions, 10,000 inputs; averaged over the 5 severities like Table 6.
  (Uniform sampling labels each pair of models' disagreements without favouring either, so it
  orders every pair rightly at least as often as wrongly: its mean Kendall tau is not negative
  on any zoo.)

    python docs/paper-vs-ours/laf-causes.py [PART ...] --paperzoo RUN --default RUN [--converged RUN]

``--paperzoo``: a finished run of config/paper/laf-mnist-paperzoo.yaml; ``--default``: a
finished default run; ``--converged``: a finished run of config/paper/laf-mnist-converged.yaml
(part ``converged`` only). Rows go to laf-causes.csv beside this file (a part's rows replace its old
ones), the tables to laf-causes.md (rendered from the csv).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from labelfree.laf import baselines as bl
from labelfree.laf.core import rank
from labelfree.laf.metrics import batch_metrics
from labelfree.laf.run import SetInputs, load_testset
from labelfree.stats import spearman

HERE = Path(__file__).resolve().parent
CSV, MD = HERE / "laf-causes.csv", HERE / "laf-causes.md"
PARTS = ("spread", "fraction", "ablation-id", "ablation-all", "tight", "decorrelate",
         "converged", "floor")
ZOO, DATASET = "laf_mnist_paperzoo", "laf_mnist"
CONVERGED_ZOO = "laf_mnist_converged"
REPS, LARGE = 50, (300, 500)

#: The paper's Table A2 (MNIST-C accuracy range in %, severities 1-5) and Table 6 (MNIST column,
#: Random and LaF), as printed.
TABLE_A2 = {
    "Gaussian Noise": [(84.85, 99.49), (80.49, 99.25), (55.89, 99.05), (29.86, 98.77), (16.92, 96.02)],
    "Shot Noise": [(84.89, 99.53), (84.73, 99.49), (84.87, 99.38), (84.32, 99.00), (83.12, 98.68)],
    "Impulse Noise": [(84.29, 99.20), (71.33, 98.91), (56.50, 98.62), (27.77, 96.39), (16.80, 88.67)],
    "Defocus Blur": [(58.63, 95.69), (31.76, 84.91), (9.73, 43.40), (3.73, 20.46), (1.96, 18.30)],
    "Glass Blur": [(65.06, 96.52), (54.02, 94.33), (19.06, 75.43), (15.63, 70.29), (11.12, 54.46)],
    "Motion Blur": [(56.71, 97.29), (36.28, 90.04), (25.23, 78.19), (20.29, 65.58), (18.59, 61.07)],
    "Zoom Blur": [(82.68, 99.54), (81.50, 99.45), (80.42, 99.35), (78.30, 99.22), (74.93, 98.7)],
    "Snow": [(51.43, 99.06), (17.78, 98.38), (19.27, 96.03), (16.53, 93.73), (11.39, 95.73)],
    "Frost": [(17.25, 98.99), (10.60, 97.91), (9.52, 96.72), (9.18, 96.63), (9.05, 95.36)],
    "Fog": [(9.74, 97.07), (9.61, 95.32), (9.75, 89.51), (9.73, 85.28), (9.69, 73.37)],
    "Brightness": [(66.18, 99.53), (21.94, 99.22), (12.55, 98.99), (9.96, 98.60), (9.10, 97.06)],
    "Contrast": [(37.47, 99.22), (20.38, 99.17), (10.29, 99.04), (9.74, 98.08), (8.02, 92.11)],
    "Elastic": [(49.09, 99.07), (12.80, 17.58), (79.89, 97.75), (44.52, 94.33), (12.32, 71.43)],
    "Pixelate": [(80.40, 98.64), (84.37, 99.11), (77.65, 98.47), (62.11, 92.34), (54.96, 89.33)],
    "JPEG": [(84.90, 99.53), (84.93, 99.56), (85.10, 99.54), (84.78, 99.44), (84.85, 99.36)],
}
TABLE6_RANDOM = {"Gaussian Noise": 0.90, "Shot Noise": 0.76, "Impulse Noise": 0.38,
                 "Defocus Blur": 0.84, "Glass Blur": -0.16, "Zoom Blur": 0.77, "Snow": 0.50,
                 "Fog": 0.40, "Brightness": 0.94, "Contrast": 0.94, "Elastic": 0.80, "JPEG": 0.78,
                 "Pixelate": 0.38, "Frost": 0.44, "Motion Blur": 0.58}


def rng(*key: int) -> np.random.Generator:
    return np.random.default_rng(list(key))


def paperzoo_sets(run: Path, zoo: str = ZOO) -> list[SetInputs]:
    """The run's ``id`` set and its corrupted sets, each model's inference file per set."""
    infer = run / "results" / "infer" / zoo
    models = sorted(p.name for p in infer.iterdir() if (p / "id.npz").exists())
    tdir = run / "results" / "testsets" / DATASET
    out = [SetInputs("id", tuple(str(infer / m / "id.npz") for m in models), str(tdir / "id.npz"))]
    out += [SetInputs(f.stem, tuple(str(infer / m / "corruptions.npz") for m in models), str(f))
            for f in sorted(tdir.glob("*-[1-5].npz"))]
    return out


def sampled_spearman(correct: np.ndarray, truth: np.ndarray, budgets, draw, seed: int) -> dict:
    """Budget -> Spearman of ``REPS`` draws: each draw labels ``draw(b, rng)`` rows of
    ``correct`` (inputs x models) and ranks the models by their accuracy on them."""
    out = {}
    for b in budgets:
        idx = np.stack([draw(b, rng(seed, b, r)) for r in range(REPS)])
        out[b] = batch_metrics(truth, correct[idx].mean(axis=1), ())["spearman"]
    return out


def random_and_sds(preds: np.ndarray, correct: np.ndarray, truth: np.ndarray, seeds) -> tuple:
    """Mean Spearman of Random and of SDS over the budget grid of ``preds``' models (inputs x
    models), each from :func:`sampled_spearman` with its seed of ``seeds`` (Random, SDS)."""
    budgets = bl.budget_grid(preds.shape[1])
    pool = bl.sds_pool(preds)
    n_in = len(preds)
    rnd = sampled_spearman(correct, truth, budgets,
                           lambda b, g: bl.random_sample(n_in, b, g), seeds[0])
    sds = sampled_spearman(correct, truth, [b for b in budgets if b <= pool.size],
                           lambda b, g: bl.sds_sample(pool, b, g), seeds[1])
    return (np.mean([v.mean() for v in rnd.values()]),
            np.mean([v.mean() for v in sds.values()]))


def crossing(curve: dict, laf: float) -> float:
    over = [b for b in sorted(curve) if curve[b].mean() >= laf]
    return float(over[0]) if over else np.inf


def tight_zoo_checks(yhat, y, keep, truth_rows=None, draw_rows=None, seed=0, lo=None) -> dict:
    """Checks 2a, 2b, 3 (docs/laf.md, the checks table) for the models ``keep``; Random draws
    from ``draw_rows`` and is scored against the accuracy on ``truth_rows`` (default: all)."""
    n = len(keep)
    sub = yhat[:, keep]
    correct = sub == y[:, None]
    t_rows = np.arange(len(y)) if truth_rows is None else truth_rows
    d_rows = np.arange(len(y)) if draw_rows is None else draw_rows
    truth = correct[t_rows].mean(axis=0)
    laf = spearman(truth, rank(sub, 10).score)
    budgets = bl.budget_grid(n, lo=lo) + list(LARGE)
    curve = sampled_spearman(correct, truth, budgets,
                             lambda b, g: d_rows[bl.random_sample(d_rows.size, b, g)], seed)
    acc, b0 = 100 * correct.mean(axis=0), budgets[0]
    return {"models": n, "ID accuracy range": f"{acc.min():.1f}-{acc.max():.1f}",
            "ID accuracy std": acc.std(), "smallest budget": b0, "LaF": laf,
            "Random at smallest": curve[b0].mean(), "2a": laf - curve[b0].mean(),
            "2b": crossing(curve, laf), "3": curve[b0].std()}


def part_spread(a) -> pd.DataFrame:
    yhat, y, _ = load_testset(paperzoo_sets(a.paperzoo)[0])
    order = np.argsort((yhat == y[:, None]).mean(axis=0), kind="stable")
    rows = [{"sub-zoo": "all 30", **tight_zoo_checks(yhat, y, order)},
            {"sub-zoo": "all 30, smallest budget 20", **tight_zoo_checks(yhat, y, order, lo=20)},
            {"sub-zoo": "all 30 but the 2 near chance (ranks 3-30)",
             **tight_zoo_checks(yhat, y, order[2:], seed=99)}]
    for lo in range(0, yhat.shape[1] - 20 + 1):
        rows.append({"sub-zoo": f"ranks {lo + 1}-{lo + 20} of 30 by ID accuracy",
                     **tight_zoo_checks(yhat, y, order[lo:lo + 20], seed=lo + 1)})
    return pd.DataFrame(rows)


def part_fraction(a) -> pd.DataFrame:
    yhat, y, _ = load_testset(paperzoo_sets(a.paperzoo)[0])
    order = np.argsort((yhat == y[:, None]).mean(axis=0), kind="stable")
    halves = np.array_split(rng(7).permutation(len(y)), 2)
    rows = []
    for name, keep in (("all 30", order), ("ranks 11-30 (most accurate 20)", order[10:])):
        same = tight_zoo_checks(yhat, y, keep, truth_rows=halves[1], draw_rows=halves[1])
        apart = tight_zoo_checks(yhat, y, keep, truth_rows=halves[1], draw_rows=halves[0])
        rows += [{"sub-zoo": name, "labels drawn from": "the scored half (as in the study)", **same},
                 {"sub-zoo": name, "labels drawn from": "the other half (the set is unbounded)",
                  **apart}]
    return pd.DataFrame(rows)


def part_ablation_id(a, boots: int = 1000) -> pd.DataFrame:
    yhat, y, _ = load_testset(paperzoo_sets(a.paperzoo)[0])
    diffs = []
    for b in range(-1, boots):
        idx = np.arange(len(y)) if b < 0 else rng(11, b).integers(0, len(y), len(y))
        sub, truth = yhat[idx], (yhat[idx] == y[idx, None]).mean(axis=0)
        full = rank(sub, 10)
        diffs.append(spearman(truth, full.score) - spearman(truth, full.a0))
    d = np.array(diffs[1:])
    return pd.DataFrame([{"set": "paper-zoo ID (1,000 inputs, 30 models)",
                          "LaF - w/o optimizing, the run's inputs": diffs[0],
                          "bootstrap mean": d.mean(), "2.5 %": np.quantile(d, 0.025),
                          "97.5 %": np.quantile(d, 0.975),
                          "share of resamples where the check holds (>= 0)": (d >= 0).mean(),
                          "resamples": boots}])


def part_ablation_all(a) -> pd.DataFrame:
    rows = []
    for run, zoos in ((a.default, ("laf_tight", "laf_spread")), (a.paperzoo, (ZOO,))):
        det = []
        for z in zoos:
            raw = run / "results" / "laf" / "raw" / z
            m = pd.read_csv(raw / "metrics.csv.gz")
            ts = pd.read_csv(raw / "testsets.csv")[["testset", "quality"]]
            d = m[m.grid == "none"].pivot_table(index="testset", columns="method",
                                                values="spearman").join(ts.set_index("testset"))
            det.append(d)
        d = pd.concat(det)
        for q in (0, 20, 30, 40, 50, 60, 70, 80):
            s = d[d.quality >= q]
            rows.append({"run": "default run (laf_tight, laf_spread)" if len(zoos) > 1
                         else "real-MNIST paper zoo", "sets with zoo quality >= %": q,
                         "sets": len(s),
                         "5 pruning all": (s["LaF"] - s["LaF w/o pruning"]).mean(),
                         "5 optimizing all": (s["LaF"] - s["LaF w/o optimizing"]).mean()})
    return pd.DataFrame(rows)


def part_tight(a, k: int = 15) -> pd.DataFrame:
    rows = []
    for s_i, s in enumerate(paperzoo_sets(a.paperzoo)[1:]):
        yhat, y, _ = load_testset(s)
        correct = yhat == y[:, None]
        acc = correct.mean(axis=0)
        order = np.argsort(acc, kind="stable")
        widths = acc[order[k - 1:]] - acc[order[:len(order) - k + 1]]
        lo = int(np.argmin(widths))
        for name, keep in (("tight", order[lo:lo + k]), ("spread", order[::2][:k])):
            sub, c = yhat[:, keep], correct[:, keep]
            truth = c.mean(axis=0)
            random_mean, sds_mean = random_and_sds(sub, c, truth, (100 + s_i, 200 + s_i))
            rows.append({"testset": s.name, "sub-zoo": name,
                         "accuracy range": f"{100 * truth.min():.1f}-{100 * truth.max():.1f}",
                         "accuracy std": 100 * truth.std(),
                         "LaF": spearman(truth, rank(sub, 10).score),
                         "Random": random_mean,
                         "SDS": sds_mean})
    return pd.DataFrame(rows)


def decorrelated(yhat: np.ndarray, y: np.ndarray, share: float, g: np.random.Generator):
    """``yhat`` with each model's predictions on a share of every class's inputs permuted among
    those inputs, independently per model: accuracy per class and confusions kept, errors
    moved to other inputs."""
    out = yhat.copy()
    for k in np.unique(y):
        rows = np.flatnonzero(y == k)
        for j in range(yhat.shape[1]):
            pick = rows[g.random(rows.size) < share]
            out[pick, j] = yhat[g.permutation(pick), j]
    return out


def part_decorrelate(a, shares=(0.0, 0.25, 0.5, 1.0), zoo: str = ZOO) -> pd.DataFrame:
    rows = []
    run = a.converged if zoo == CONVERGED_ZOO else a.paperzoo
    for s_i, s in enumerate(paperzoo_sets(run, zoo)):
        yhat0, y, _ = load_testset(s)
        for f in shares:
            yhat = decorrelated(yhat0, y, f, rng(41, s_i, int(100 * f)))
            c = yhat == y[:, None]
            truth = c.mean(axis=0)
            random_mean, sds_mean = random_and_sds(yhat, c, truth, (300 + s_i, 400 + s_i))
            n_in = len(y)
            votes = np.zeros((n_in, 10), dtype=np.int64)
            np.add.at(votes, (np.arange(n_in)[:, None], yhat), 1)
            rows.append({"testset": s.name, "share decorrelated": f,
                         "zoo quality": 100 * truth.mean(),
                         "vote accuracy - best model": 100 * ((votes.argmax(axis=1) == y).mean()
                                                              - truth.max()),
                         "LaF": spearman(truth, rank(yhat, 10).score),
                         "Random": random_mean,
                         "SDS": sds_mean})
    return pd.DataFrame(rows)


def part_floor(a, n_inputs: int = 10_000, m: int = 30) -> pd.DataFrame:
    budgets = bl.budget_grid(m)
    rows = []
    for c_i, (corr, ranges) in enumerate(TABLE_A2.items()):
        per_sev = []
        for s_i, (lo, hi) in enumerate(ranges):
            lo, hi = lo / 100, hi / 100
            ladder = 1e-4 * np.arange(m - 1)
            zoos = {"one low": np.r_[lo, hi - ladder], "one high": np.r_[hi, lo + ladder]}
            best = np.inf
            for z_i, truth in enumerate(zoos.values()):
                means = []
                for b in budgets:
                    g = rng(31, c_i, s_i, z_i, b)
                    est = g.hypergeometric(np.round(truth * n_inputs).astype(int),
                                           n_inputs - np.round(truth * n_inputs).astype(int),
                                           b, size=(REPS, m)) / b
                    means.append(batch_metrics(truth, est, ())["spearman"].mean())
                best = min(best, float(np.mean(means)))
            per_sev.append(best)
        rows.append({"corruption": corr, "floor (mean over severities)": np.mean(per_sev),
                     "paper Random (Table 6)": TABLE6_RANDOM[corr],
                     "paper below floor": TABLE6_RANDOM[corr] < np.mean(per_sev)})
    return pd.DataFrame(rows)


RUNNERS = {"spread": part_spread, "fraction": part_fraction, "ablation-id": part_ablation_id,
           "ablation-all": part_ablation_all, "tight": part_tight,
           "decorrelate": part_decorrelate,
           "converged": lambda a: part_decorrelate(a, zoo=CONVERGED_ZOO), "floor": part_floor}

TITLES = {
    "spread": "RQ1-budget / RQ1-spread: checks 2a, 2b, 3 on 20-model sub-zoos of the paper-zoo "
              "run's ID set (Random 50 repetitions)",
    "fraction": "Budget as a fraction of the set: Random's labels from the scored half or the "
                "other half of the ID set",
    "ablation-id": "RQ3-id: LaF - w/o optimizing on bootstrap resamples of the ID inputs",
    "ablation-all": "RQ3-all: checks 5 * all over the sets with zoo quality at least a threshold",
    "tight": "RQ2-corruption: per corrupted set, the tightest 15 models against 15 spread ones "
             "(Random, SDS 50 repetitions; LaF)",
    "decorrelate": "RQ2-corruption: each model's errors moved to other inputs of the same "
                   "class on a share of the inputs (Random, SDS 50 repetitions; LaF)",
    "converged": "RQ1/RQ2-baselines: `decorrelate` on the converged zoo's run (LaF against "
                 "Random and SDS)",
    "floor": "RQ2-corruption: lowest mean Spearman of Random on any 30-model zoo with the paper's "
             "Table A2 ranges, against the paper's Random",
}


#: Columns that name a row, shown first.
KEYS = ("run", "set", "testset", "corruption", "sub-zoo", "labels drawn from", "models")


def render(df: pd.DataFrame) -> str:
    lines = ["# LaF: experiments behind the causes in docs/laf.md's claims table", "",
             "Generated by `python docs/paper-vs-ours/laf-causes.py` (its docstring says what "
             "each part changes) from `laf-causes.csv`.", ""]
    for part in PARTS:
        d = df[df.part == part].drop(columns="part").dropna(axis=1, how="all")
        if d.empty:
            continue
        first = [c for c in KEYS if c in d]
        d = d[first + [c for c in d if c not in first]]
        for c in d.select_dtypes("number"):
            if np.isfinite(d[c]).all() and (d[c] == d[c].round()).all():
                d[c] = d[c].astype(int)
        lines += [f"## {part}: {TITLES[part]}", "", d.to_markdown(index=False, floatfmt=".3f"), ""]
        if part == "spread":
            lines += ["Rank correlation over these rows: ID accuracy std with check 2b "
                      f"{spearman(d['ID accuracy std'], d['2b']):.2f}; Random's mean at the "
                      f"smallest budget with check 3 "
                      f"{spearman(d['Random at smallest'], d['3']):.2f}.", ""]
        if part == "tight":
            mean = d.groupby("sub-zoo")[["accuracy std", "LaF", "Random", "SDS"]].mean()
            wins = d.assign(w=d["LaF"] > d["Random"]).groupby("sub-zoo").w.sum()
            lines += ["Mean over the 30 corrupted sets (LaF > Random on how many):", "",
                      mean.assign(**{"LaF > Random": wins}).reset_index().to_markdown(
                          index=False, floatfmt=".3f"), ""]
        if part in ("decorrelate", "converged"):
            cor = d[d.testset != "id"].assign(gap=lambda x: x["LaF"] - x["Random"],
                                               gap_sds=lambda x: x["LaF"] - x["SDS"])
            parts = []
            for q in (0, 30, 50):
                sel = cor[cor["zoo quality"] >= q]
                g = sel.groupby("share decorrelated")
                parts.append(g[["vote accuracy - best model", "LaF", "Random", "SDS"]].mean()
                             .assign(**{"LaF - Random": g.gap.mean(),
                                        "median LaF - Random": g.gap.median(),
                                        "LaF > Random": g.gap.apply(lambda v: int((v > 0).sum())),
                                        "LaF - SDS": g.gap_sds.mean(),
                                        "LaF > SDS": g.gap_sds.apply(lambda v: int((v > 0).sum())),
                                        "sets": g.size()})
                             .reset_index().assign(**{"zoo quality >= %": q}))
            summary = pd.concat(parts).astype({"LaF > Random": int, "LaF > SDS": int,
                                                "sets": int})
            lines += ["Mean over the corrupted sets, all and those with zoo quality (mean "
                      "accuracy, the same at every share) at least 30 % and 50 %:", "",
                      summary[["zoo quality >= %"] + [c for c in summary
                                                      if c != "zoo quality >= %"]]
                      .to_markdown(index=False, floatfmt=".3f"), ""]
        if part == "floor":
            lines += [f"Average: floor {d['floor (mean over severities)'].mean():.3f}, paper "
                      f"Random {d['paper Random (Table 6)'].mean():.3f}.", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parts", nargs="*", help=f"any of {', '.join(PARTS)} (default: all)")
    ap.add_argument("--paperzoo", type=Path, required=True)
    ap.add_argument("--default", type=Path, required=True)
    ap.add_argument("--converged", type=Path, default=None)
    a = ap.parse_args(argv)
    if "converged" in (a.parts or PARTS) and a.converged is None:
        ap.error("part converged needs --converged RUN")
    if set(a.parts) - set(PARTS):
        ap.error(f"unknown part(s) {sorted(set(a.parts) - set(PARTS))}; parts: {PARTS}")
    old = pd.read_csv(CSV) if CSV.exists() else pd.DataFrame(columns=["part"])
    for part in a.parts or PARTS:
        new = RUNNERS[part](a).assign(part=part)
        old = pd.concat([old[old.part != part], new], ignore_index=True)
        old.to_csv(CSV, index=False, float_format="%.6g")
        print(part, "done", flush=True)
    MD.write_text(render(old))


if __name__ == "__main__":
    main()
