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

    python docs/paper-vs-ours/alphatrim-causes.py PART [--run /tmp/dr]

Rows go to alphatrim-causes.csv beside this file (a part's rows replace its old ones), the
summary to alphatrim-causes.md (rendered from the csv).
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

import pandas as pd
import yaml

from labelfree.alphatrim.report import checks_table
from labelfree.alphatrim.run import analyse_experiment, train_experiment
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
            t = h.pivot_table(index=["experiment", "scope"], columns="setting", values="value",
                              aggfunc="first", sort=False)
            ok = h.pivot_table(index=["experiment", "scope"], columns="setting", values="holds",
                               aggfunc="first", sort=False)
            t = t.round(4).astype(str) + ok.map(lambda v: "" if v in (True, "True") else " (fails)")
            lines += [f"### {check} ({p})", "", t.reset_index().to_markdown(index=False), ""]
            if check.startswith("(ii) |corr") and h["spearman"].notna().any():
                s = h.pivot_table(index=["experiment", "scope"], columns="setting",
                                  values="spearman", aggfunc="first", sort=False).round(4)
                lines += [f"|Spearman| ({p}):", "", s.reset_index().to_markdown(index=False), ""]
    MD.write_text("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=("analysis", "zoo"))
    ap.add_argument("--run", type=Path, default=Path("/tmp/dr"), help="a default run's tree")
    ap.add_argument("--only", nargs="*", help="experiments of the zoo part to run")
    a = ap.parse_args()
    rows = {"analysis": part_analysis, "zoo": part_zoo}[a.part](a)
    write(rows, a.part)


if __name__ == "__main__":
    main()
