"""Experiments behind the causes of alpha-trimming's failing checks (docs/alphatrim.md, "Claims").

Each setting changes one suspected factor of the default run's experiments (digits, synthetic,
heads) and recomputes the checks table (``labelfree.alphatrim.report.checks_table``, reading R11)
with the study's own code (``labelfree.alphatrim.run``: ``train_experiment``,
``analyse_experiment``):

* ``analysis``: the default run's zoos (no training) re-analysed with more bootstrap
  replicates (B = 30 -> 200), other analysis seeds, and 400 instead of 40 sampled ensembles
  per size.
* ``zoo``: zoos trained again with the default recipe (the baseline of this part), with the
  paper's zoo size (200 runs per seed regime: 100 reference, 100 candidates; Sec. V-B), with
  three times the epochs, and for the transfer heads with a 10x learning rate, one epoch, or a
  hidden layer of 32 units (a non-convex head).
* ``mnist-train`` and ``mnist``: the real-MNIST even/odd experiment of
  ``config/paper/alphatrim-mnist-reduced.yaml`` (its MLP, 60 runs per seed regime, 4 epochs,
  B = 30), whose medians fail (docs/paper-vs-ours/alphatrim-mnist.md). ``mnist-train`` trains
  its zoos again into ``--scratch`` (no ensemble zoo: the median rows do not use it): S_all with
  the paper's 200 runs (its first 60 are the configured 60: model i's seeds depend only on i),
  S_all with 1 and 2 epochs (60 runs) and 12 epochs (20 runs: the CPU time we had), and, when
  time allows, S_init and S_batch as configured. ``mnist`` analyses them: as configured, with
  B = 200 and other analysis seeds, with every run's gaps brought to one scale (a diagnostic),
  with the positive class's probability in place of the logit gap, with the paper's 200 runs,
  with reference pools of 10-100 runs against the same candidates, with other epoch counts
  (compared on the first 20 runs of each zoo), on test subsets as large as the digits
  experiment's (898 images) and 2,000, and the ``mnist-recipe`` zoos; beside each, how the runs'
  gap distributions differ (``gap_stats``: scale spread, width, plain KS distance, gamma).
* ``mnist-recipe``: one change of the configured recipe per zoo (``MNIST_RECIPES``: the paper's
  learning rate 0.001 at 4 and 16 epochs, 0.003, fewer training images), S_all, 40 runs each,
  against the configured zoo's first 40 runs.

    python docs/paper-vs-ours/alphatrim-causes.py PART [--run /tmp/dr]
    python docs/paper-vs-ours/alphatrim-causes.py mnist-train --mnist DIR [--scratch DIR]
    python docs/paper-vs-ours/alphatrim-causes.py mnist-recipe --mnist DIR [--scratch DIR]
    python docs/paper-vs-ours/alphatrim-causes.py mnist [--scratch DIR]

``--mnist``: a folder with the prepared real MNIST (``train.npz``, ``test.npz``: all 60,000 and
10,000 images, as the config's ``alphatrim_mnist`` dataset prepares them).

Rows go to alphatrim-causes.csv beside this file (a part's rows replace its old ones), the
summary to alphatrim-causes.md (rendered from the csv).
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from labelfree.alphatrim.kernel import acceptance_threshold
from labelfree.alphatrim.report import checks_table
from labelfree.alphatrim.run import (
    AnalysisSettings,
    analyse_experiment,
    analyse_zoo,
    load_task,
    train_experiment,
    train_models,
)
from labelfree.config import validate_config

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CSV, MD = HERE / "alphatrim-causes.csv", HERE / "alphatrim-causes.md"
#: claim of docs/alphatrim.md -> the checks that test it (as ``CLAIMS`` of alphatrim/report.py)
CLAIM_OF = {"(i) max": "V-B1 tail", "(i) median": "V-B1 tail", "(ii) best": "V-B1 accuracy",
            "(ii) worst": "V-B1 accuracy", "(ii) |corr": "V-B1 correlation",
            "(iii)": "V-A ensembles"}


def study() -> dict:
    cfg = validate_config(yaml.safe_load((ROOT / "config/config.yaml").read_text()),
                          ROOT / "config" / "schema.yaml")
    return cfg["alphatrim"]


def inputs(run: Path, name: str) -> dict[str, str]:
    r = run / "results"
    if name == "digits":
        return {"train": str(r / "data/alphatrim_digits/train.npz"),
                "test": str(r / "data/alphatrim_digits/test.npz")}
    if name == "heads":
        return {"train": str(r / "testsets/digits/alphatrim-train.npz"),
                "test": str(r / "testsets/digits/id.npz"),
                "train_feat": str(r / "infer/alphatrim_backbone/lenet_backbone/alphatrim_train.npz"),
                "test_feat": str(r / "infer/alphatrim_backbone/lenet_backbone/id.npz")}
    return {}


def checks_of(name: str, cfg: dict, st: dict, zoo: Path, tmp: Path) -> pd.DataFrame:
    out = {k: tmp / f"{name}-{k}" for k in ("pm.csv", "ens.csv", "raw.npz", "sum.json")}
    analyse_experiment(name, cfg, st, zoo, out["pm.csv"], out["ens.csv"], out["raw.npz"],
                       out["sum.json"], threads=1)
    pm, ens = pd.read_csv(out["pm.csv"]), pd.read_csv(out["ens.csv"])
    c = checks_table(pm, ens, float(st["representative_cut"]))
    corr_s = pm.groupby("regime")[["accuracy", "alpha_hat"]].corr(method="spearman")
    c["spearman"] = [abs(corr_s.loc[(r, "accuracy"), "alpha_hat"]) if ch.startswith("(ii) |corr")
                     else float("nan") for ch, r in zip(c["check"], c["scope"], strict=True)]
    c["n_candidates"] = c["scope"].map(pm.groupby("regime").size()).astype("Int64")
    return c


def rows_of(c: pd.DataFrame, part: str, name: str, setting: str, **extra) -> list[dict]:
    c = c.assign(part=part, experiment=name, setting=setting, **extra)
    c["claim"] = [next(v for k, v in CLAIM_OF.items() if ch.startswith(k)) for ch in c["check"]]
    return c.drop(columns=["source", "threshold"]).to_dict("records")


def part_analysis(a) -> list[dict]:
    st0 = study()
    out: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("digits", "synthetic", "heads"):
            cfg = st0["experiments"][name]
            zoo = a.run / f"results/alphatrim/raw/{name}/zoo.npz"
            settings = {"as run (B 30, seed of the config, 40 ensembles per size)": ({}, {}),
                        "B 200": ({"bootstrap_B": 200}, {})}
            settings |= {f"analysis seed {s}": ({"seed": s}, {}) for s in (1, 2)}
            if cfg["ensembles"]["sizes"]:
                settings["400 ensembles per size"] = ({}, {"reps": 400})
                settings["400 ensembles per size, B 200"] = ({"bootstrap_B": 200}, {"reps": 400})
            for label, (sto, enso) in settings.items():
                st = {**st0, **sto}
                c2 = copy.deepcopy(cfg)
                c2["ensembles"].update(enso)
                t = time.process_time()
                out += rows_of(checks_of(name, c2, st, zoo, Path(tmp)), "analysis", name, label,
                               cpu_s=round(time.process_time() - t))
                print(name, label, flush=True)
    return out


def part_zoo(a) -> list[dict]:
    st = study()
    exps = st["experiments"]
    per = {"digits": ("S_init", "S_batch", "S_all"), "synthetic": ("S_init", "S_batch", "S_all")}
    settings = []
    for name in ("heads", "digits", "synthetic"):
        settings.append((name, "default recipe (retrained)", {}))
    settings += [("heads", "lr 0.1 (10x)", {"model": {"lr": 0.1}}),
                 ("heads", "1 epoch", {"model": {"epochs": 1}}),
                 ("heads", "hidden layer of 32 units", {"model": {"hidden": [32]}}),
                 ("digits", "3x epochs (90)", {"model": {"epochs": 90}}),
                 ("synthetic", "3x epochs (60)", {"model": {"epochs": 60}})]
    for name, regs in per.items():
        settings.append((name, "200 runs per regime (the paper's)",
                         {"regimes": dict.fromkeys(regs, 200)}))
    out: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, label, over) in enumerate(settings):
            if a.only and name not in a.only:
                continue
            cfg = copy.deepcopy(exps[name])
            for k, v in over.items():
                cfg[k].update(v)
            if name == "digits" and "regimes" in over:
                cfg["ensembles"]["sizes"] = []  # the ensemble zoo is unchanged: skip it here
                cfg["ensembles"]["models"] = 0
            zoo = Path(tmp) / f"{i}.npz"
            t = time.process_time()
            train_experiment(name, cfg, int(st["seed"]), inputs(a.run, name), zoo,
                             Path(tmp) / f"{i}.csv", threads=1)
            out += rows_of(checks_of(name, cfg, st, zoo, Path(tmp)), "zoo", name, label,
                           cpu_s=round(time.process_time() - t))
            print(name, label, round(time.process_time() - t), flush=True)
            write(out, "zoo")  # keep what is done
    return out


MNIST_CONFIG = ROOT / "config/paper/alphatrim-mnist-reduced.yaml"
MNIST = "mnist_even_odd"
#: zoos trained by ``mnist-train``: label -> (regime sizes, model overrides)
MNIST_ZOOS = {
    "200 runs": ({"S_all": 200}, {}),  # its first 60: the configured S_all zoo
    "1 epoch": ({"S_all": 60}, {"epochs": 1}),
    "12 epochs (3x)": ({"S_all": 20}, {"epochs": 12}),  # 20 runs: the CPU time we had
    "as configured": ({"S_init": 60, "S_batch": 60}, {}),
    "2 epochs": ({"S_all": 60}, {"epochs": 2}),
}


#: zoos trained by ``mnist-recipe``: one change of the configured recipe each, S_all, 40 runs
#: (20 reference, 20 candidates; the configured zoo's first 40 runs are its baseline), as
#: label -> (model overrides, training images kept: the first n of a seeded permutation)
MNIST_RECIPES = {
    "lr 0.001 (the paper's)": ({"lr": 0.001}, None),
    "lr 0.001, 16 epochs": ({"lr": 0.001, "epochs": 16}, None),
    "lr 0.003": ({"lr": 0.003}, None),
    "2,000 training images, 20 epochs": ({"epochs": 20}, 2000),
    "500 training images, 40 epochs": ({"epochs": 40}, 500),
}
RECIPE_RUNS = 40


def mnist_study() -> dict:
    cfg = validate_config(yaml.safe_load(MNIST_CONFIG.read_text()), ROOT / "config" / "schema.yaml")
    return cfg["alphatrim"]


def part_mnist_train(a) -> list[dict]:
    st = mnist_study()
    base = st["experiments"][MNIST]
    a.scratch.mkdir(parents=True, exist_ok=True)
    inp = {"train": str(a.mnist / "train.npz"), "test": str(a.mnist / "test.npz")}
    task = load_task(MNIST, base, int(st["seed"]), inp)
    for label, (regimes, over) in MNIST_ZOOS.items():
        if a.only and label not in a.only:
            continue
        cfg = copy.deepcopy(base)
        cfg["model"].update(over)
        arrays = {}
        for regime, k in regimes.items():
            t = time.process_time()
            z = train_models(MNIST, cfg, int(st["seed"]), task, regime, 0, k, threads=1)
            arrays["y_test"] = z["y_test"]
            arrays[f"logits_{regime}"] = z["logits"]
            print(label, regime, k, "models", round(time.process_time() - t), "cpu s", flush=True)
        np.savez(a.scratch / f"{label}.npz", **arrays)
    return []


def part_mnist_recipe(a) -> list[dict]:
    st = mnist_study()
    base = st["experiments"][MNIST]
    a.scratch.mkdir(parents=True, exist_ok=True)
    inp = {"train": str(a.mnist / "train.npz"), "test": str(a.mnist / "test.npz")}
    xtr, ytr, xte, yte = load_task(MNIST, base, int(st["seed"]), inp)
    keep = np.random.default_rng(0).permutation(len(ytr))
    for label, (over, n_train) in MNIST_RECIPES.items():
        if a.only and label not in a.only:
            continue
        cfg = copy.deepcopy(base)
        cfg["model"].update(over)
        idx = keep[:n_train] if n_train else keep
        t = time.process_time()
        z = train_models(MNIST, cfg, int(st["seed"]), (xtr[idx], ytr[idx], xte, yte), "S_all", 0,
                         RECIPE_RUNS, threads=1)
        print(label, RECIPE_RUNS, "models", round(time.process_time() - t), "cpu s", flush=True)
        np.savez(a.scratch / f"recipe {label}.npz", y_test=z["y_test"], logits_S_all=z["logits"])
    return []


def mnist_checks(logits: dict[str, np.ndarray], y: np.ndarray, st: dict, m_ref: int | None = None,
                 **over) -> pd.DataFrame:
    """The (i)-(ii) check rows of the regimes in ``logits`` (as ``analyse_experiment`` computes
    them); ``m_ref``: the reference is the first ``m_ref`` runs of the reference half only."""
    s = AnalysisSettings.from_config({**st, **over, "threads": 1})
    frames = []
    for regime, lg in logits.items():
        if m_ref is not None:
            half = len(lg) // 2
            s2 = AnalysisSettings(**{**s.__dict__, "reference_fraction": m_ref / (m_ref + half)})
            lg = np.concatenate([lg[:m_ref], lg[half:]])
        else:
            s2 = s
        frames.append(analyse_zoo(lg, y, s2, MNIST, regime).per_model.assign(regime=regime))
    pm = pd.concat(frames, ignore_index=True)
    c = checks_table(pm, pd.DataFrame(), float(st["representative_cut"]))
    c["n_candidates"] = c["scope"].map(pm.groupby("regime").size()).astype("Int64")
    return c


def unit_scale(logits: np.ndarray) -> np.ndarray:
    """Each run's logits (K, N, 2) divided by its median |logit gap| (a diagnostic: the runs then
    differ only in the shape of their gap distributions, not in its scale)."""
    return logits / np.median(np.abs(logits[..., 1] - logits[..., 0]), axis=1)[:, None, None]


def as_probability(logits: np.ndarray) -> np.ndarray:
    """Two-column 'logits' (1/2, p+) whose gap is p+ - 1/2, p+ = sigmoid(m+ - m-) the positive
    class's softmax probability, in float64 (the sign, so the prediction, is the gap's; the clip
    at +-15 never acts)."""
    g = logits[..., 1].astype(np.float64) - logits[..., 0]
    return np.stack([np.full_like(g, 0.5), 1.0 / (1.0 + np.exp(-g))], axis=-1)


def part_mnist(a) -> list[dict]:
    st = mnist_study()
    z = {k: np.load(a.scratch / f"{k}.npz") for k in MNIST_ZOOS
         if (a.scratch / f"{k}.npz").exists()}
    y = next(iter(z.values()))["y_test"]
    settings: dict[str, tuple] = {}
    s_all = z["200 runs"]["logits_S_all"] if "200 runs" in z else None
    if s_all is not None:
        conf = {"S_all": s_all[:60]}
        if "as configured" in z:
            conf = {"S_init": z["as configured"]["logits_S_init"],
                    "S_batch": z["as configured"]["logits_S_batch"], **conf}
        settings = {"as configured (60 runs, 4 epochs, B 30; retrained)": (conf, None, {}),
                    "B 200": (conf, None, {"bootstrap_B": 200}),
                    "analysis seed 1": (conf, None, {"seed": 1}),
                    "analysis seed 2": (conf, None, {"seed": 2})}
        # a diagnostic, no reading: every run's logits divided by its median |logit gap|, so
        # that runs no longer differ in the scale of their gaps (only in shape)
        scaled = {r: unit_scale(lg) for r, lg in conf.items()}
        settings["each run's logits divided by its median |gap| (diagnostic)"] = (scaled, None,
                                                                                  {})
        # the score read as a probability: the positive class's softmax probability
        # sigmoid(gap) in place of the logit gap (the paper, Sec. II-A, reads the gap)
        settings["positive-class probability in place of the logit gap"] = (
            {r: as_probability(lg) for r, lg in conf.items()}, None, {})
        # the clip (reading R1): gaps beyond +-15 kept as they are
        settings["as configured, no clip"] = (conf, None, {"clip_mode": "none"})
        settings["200 runs per regime (the paper's)"] = ({"S_all": s_all}, None, {})
        for m in (10, 30, 100):  # reference pools against the same 100 candidates (100-199)
            settings[f"reference of {m} runs, 100 candidates"] = ({"S_all": s_all}, m, {})
    # training length: S_all zoos of 1, 2, 4 (the configured) and 12 epochs, compared on their
    # first 20 runs (the 12-epoch zoo has 20), and on 60 where trained
    by_epochs = {"1 epoch": z.get("1 epoch"), "2 epochs": z.get("2 epochs"),
                 "4 epochs": None if s_all is None else {"logits_S_all": s_all[:60]},
                 "12 epochs": z.get("12 epochs (3x)")}
    for label, zz in by_epochs.items():
        if zz is None:
            continue
        lg = zz["logits_S_all"]
        settings[f"{label}, 20 runs"] = ({"S_all": lg[:20]}, None, {})
        settings[f"{label}, 20 runs, scaled (diagnostic)"] = ({"S_all": unit_scale(lg[:20])},
                                                              None, {})
        if len(lg) >= 60 and label != "4 epochs":
            settings[f"{label}, 60 runs"] = ({"S_all": lg[:60]}, None, {})
        if label == "12 epochs":
            settings[f"{label}, 20 runs, no clip"] = ({"S_all": lg[:20]}, None,
                                                      {"clip_mode": "none"})
    settings = {k: (*v, None) for k, v in settings.items()}  # (logits, m_ref, over, test subset)
    if s_all is not None:
        # the test set's size N: the configured zoos on a seeded subset of the test images as
        # large as the digits experiment's (898: N = 449, gamma 0.114) and 2,000 (N = 1,000);
        # the configured 10,000 give N = 5,000, gamma 0.0328 (the paper's CIFAR-10: 8,000)
        for n in (898, 2000):
            sub = np.sort(np.random.default_rng(n).permutation(len(y))[:n])
            settings[f"as configured, {n} test images"] = (conf, None, {}, sub)
        # one change of the training recipe each (``mnist-recipe``: S_all, 40 runs), against the
        # configured zoo's first 40 runs
        settings["4 epochs, 40 runs (recipe baseline)"] = ({"S_all": s_all[:40]}, None, {}, None)
    for label in MNIST_RECIPES:
        f = a.scratch / f"recipe {label}.npz"
        if f.exists():
            lg = {"S_all": np.load(f)["logits_S_all"]}
            settings[f"recipe: {label}, 40 runs"] = (lg, None, {}, None)
            settings[f"recipe: {label}, 40 runs, no clip"] = (lg, None, {"clip_mode": "none"},
                                                              None)
    out: list[dict] = []
    for label, (logits, m_ref, over, sub) in settings.items():
        t = time.process_time()
        if sub is not None:
            logits = {r: lg[:, sub] for r, lg in logits.items()}
        ys = y if sub is None else y[sub]
        c = mnist_checks(logits, ys, st, m_ref, **over)
        c["spearman"] = float("nan")
        out += rows_of(c.assign(source=""), "mnist", "mnist", label,
                       cpu_s=round(time.process_time() - t), **gap_stats(logits, ys, st))
        print(label, round(time.process_time() - t), flush=True)
    return out


def gap_stats(logits: dict[str, np.ndarray], y: np.ndarray, st: dict) -> dict[str, float]:
    """How the runs' gap distributions differ (over every regime of the setting): each run's
    median |logit gap| (its scale), min and max and the std of its log over the runs; the width
    of one run's gap distribution (std over the test images of log |gap|, mean over the runs);
    the runs' mean accuracy; the share of gaps at the clip; the median over the candidates of
    the plain (untrimmed) KS distance of a candidate's clipped gaps to the reference pool's, on
    the whole test set, beside gamma."""
    s = AnalysisSettings.from_config({**st, "threads": 1})
    scale, width, acc, ks, clipped = [], [], [], [], []
    for lg in logits.values():
        g = lg[..., 1] - lg[..., 0]
        clipped.append(np.abs(g).ravel() >= s.clip)
        scale.append(np.median(np.abs(g), axis=1))
        width.append(np.log(np.abs(g) + 1e-12).std(axis=1))
        acc.append(((g >= 0).astype(int) == y).mean(axis=1))
        g = np.clip(g, -s.clip, s.clip)
        m = int(round(len(g) * s.reference_fraction))
        ref = np.sort(g[:m].ravel())
        for cand in np.sort(g[m:], axis=1):
            at = np.concatenate([cand, ref])
            ks.append(np.abs(np.searchsorted(cand, at, side="right") / len(cand)
                             - np.searchsorted(ref, at, side="right") / len(ref)).max())
    sc = np.concatenate(scale)
    return {"gap_scale_min": float(sc.min()), "gap_scale_max": float(sc.max()),
            "gap_scale_sd_log": float(np.log(sc).std()),
            "gap_width": float(np.concatenate(width).mean()),
            "accuracy_mean": float(np.concatenate(acc).mean()),
            "clipped": float(np.concatenate(clipped).mean()),
            "ks_median": float(np.median(ks)),
            "gamma": acceptance_threshold(len(y) // 2, s.eps_a)}


def write(rows: list[dict], part: str) -> None:
    old = pd.read_csv(CSV) if CSV.exists() else pd.DataFrame(columns=["part"])
    df = pd.concat([old[old.part != part], pd.DataFrame(rows)], ignore_index=True)
    df.to_csv(CSV, index=False, float_format="%.4g")
    lines = ["# alpha-trimming: experiments on the causes of the failing checks", "",
             "Generated by `docs/paper-vs-ours/alphatrim-causes.py` (every number; rows in "
             "`alphatrim-causes.csv`). Each table: one claim of docs/alphatrim.md's claims "
             "table, its check rows (value, holds) per experiment, seed regime and setting; "
             "`spearman` is |Spearman correlation| beside the checked Pearson one.", ""]
    for claim, g in df.groupby("claim", sort=False):
        lines += [f"## {claim}", ""]
        for (p, check), h in g.groupby(["part", "check"], sort=False):
            # the mnist part has many settings and one experiment: settings as rows
            index, cols = (["setting"], "scope") if p == "mnist" else (["experiment", "scope"],
                                                                      "setting")
            t = h.pivot_table(index=index, columns=cols, values="value", aggfunc="first",
                              sort=False)
            ok = h.pivot_table(index=index, columns=cols, values="holds", aggfunc="first",
                               sort=False)
            t = t.round(4).astype(str) + ok.map(lambda v: "" if v in (True, "True") else " (fails)")
            lines += [f"### {check} ({p})", "", t.reset_index().to_markdown(index=False), ""]
            if p == "mnist" and check.startswith("(i) median") and "gap_scale_min" in h:
                cols = [c for c in ("gap_scale_min", "gap_scale_max", "gap_scale_sd_log",
                                    "gap_width", "accuracy_mean", "clipped", "ks_median",
                                    "gamma")
                        if c in h]
                g = h.groupby("setting", sort=False)[cols].first()
                lines += ["The runs' gap distributions (`mnist.gap_stats`): each run's median "
                          "|logit gap| (its scale), min and max over the runs of the setting and "
                          "the std of its log; `gap_width`: std of log |gap| over the test "
                          "images (mean over runs); `accuracy_mean`; `clipped`: share of gaps at "
                          "the clip (+-15); `ks_median`: median over "
                          "the candidates of the untrimmed KS distance to the reference pool "
                          "(whole test set), beside the acceptance threshold `gamma`:", "",
                          g.round(4).reset_index().to_markdown(index=False), ""]
            if check.startswith("(ii) |corr") and h["spearman"].notna().any() and p != "mnist":
                s = h.pivot_table(index=["experiment", "scope"], columns="setting",
                                  values="spearman", aggfunc="first", sort=False).round(4)
                lines += [f"|Spearman| ({p}):", "", s.reset_index().to_markdown(index=False), ""]
    MD.write_text("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=("analysis", "zoo", "mnist-train", "mnist-recipe", "mnist"))
    ap.add_argument("--run", type=Path, default=Path("/tmp/dr"), help="a default run's tree")
    ap.add_argument("--only", nargs="*", help="experiments of the zoo part (zoos of mnist-train) "
                                              "to run")
    ap.add_argument("--mnist", type=Path, help="folder of the prepared MNIST (mnist-train)")
    ap.add_argument("--scratch", type=Path, default=Path("/tmp/alphatrim-causes-mnist"),
                    help="where mnist-train writes its zoos and mnist reads them")
    a = ap.parse_args()
    parts = {"analysis": part_analysis, "zoo": part_zoo, "mnist-train": part_mnist_train,
             "mnist-recipe": part_mnist_recipe, "mnist": part_mnist}
    rows = parts[a.part](a)
    if a.part not in ("mnist-train", "mnist-recipe"):
        write(rows, a.part)


if __name__ == "__main__":
    main()
