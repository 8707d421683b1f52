"""Experiments behind the causes of the metamorphic study's failing RQ6 claims (docs/metamorphic.md,
"Claims"): "MR-2's ratio falls early in training, then stays flat" (the paper's RQ6, Fig. 9) and
"higher accuracy goes with fewer MR-2 flags" (RQ6, Fig. 10, Pearson -0.901).

The paper's setting (Sec. 6.4.2): Fig. 9 trains VGG16 and ResNet-50 from scratch to saturation
(~90 epochs on ImageNet, 72-76 % top-1) and measures every five epochs, three runs each;
Fig. 10 correlates the ratio with top-1 accuracy over the 18 *pre-trained* (converged) models of
Table 5. Our default run (config/config.yaml) measures Fig. 9 on checkpoints 1, 2, 3, 5, 8 of one
LeNet (width 8, seed 0; accuracy 0.23 -> 0.75) and computes Fig. 10's Pearson over the unbiased
zoo, whose 7 models are five checkpoints of that run and two width-4 models.

Every number comes from the study's own code: training ``labelfree.zoo.train.train_family``
(the default recipe; the checkpoints are bit for bit those of a shorter run), the oracle
``labelfree.metamorphic.oracle.evaluate`` with the config's options, on the default run's main
base of the unbiased zoo (``rho0``, 300 scenes, colours c3). Parts:

* ``check``: the run's own unbiased-zoo weights through this script's path give the run's
  ratios (the path is the report's).
* ``training``: the default recipe trained 40 epochs with a checkpoint after every epoch (and
  the initial model), seeds 0, 1, 2: does the ratio fall once the model has left chance, as in
  Fig. 9, when sampled like the paper (every five epochs to saturation)?
* ``zoo``: a Fig. 10 zoo of converged models (40 epochs): widths 4, 8, 16 and training
  fractions 0.25, 0.5, 1 (``ZOO_MODELS``), so that accuracies spread as the paper's 18 do, with
  the ``training`` part's three width-8 runs at epoch 40: Pearson of accuracy and MR-2 ratio.

* ``biased``: does the fall appear once backgrounds go with the label, as ImageNet's context
  does (the paper reads the fall as the models learning "object-relevant features", Sec.
  6.4.3)? The default recipe trained 30 epochs with a checkpoint after every epoch on the run's
  biased data (rho 0.9), on the same data drawn with rho 0.5, and on the shortcut data (rho 1),
  measured on the scenes of the training distribution (the biased zoo's main base ``rho09``;
  ``rho1`` for the shortcut data) and on the unbiased scenes (``rho0``).

    python docs/paper-vs-ours/metamorphic-causes.py PART [--run /tmp/dr2]
    python docs/paper-vs-ours/metamorphic-causes.py biased [--only SETTING ...] [--seeds 0 1 2]

Rows go to metamorphic-causes.csv beside this file (a part's rows replace its old ones); the
summary metamorphic-causes.md is rendered from the csv by ``render``.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import yaml

from labelfree.config import validate_config
from labelfree.data import digitscenes
from labelfree.metamorphic import oracle as orc
from labelfree.metamorphic.analysis import pearson
from labelfree.metamorphic.run import oracle_options, read_base_annotations
from labelfree.numerics import softmax
from labelfree.seeds import derive_seed
from labelfree.store import load_npz, read_image_set
from labelfree.zoo.io import load_model
from labelfree.zoo.preprocess import preprocess
from labelfree.zoo.train import TrainSpec, train_family, validation_split

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CSV, MD = HERE / "metamorphic-causes.csv", HERE / "metamorphic-causes.md"
ZOO = "metamorphic_unbiased"  # the run's name of the unbiased zoo (and of its dataset)
BASE = "rho0"  # its main base (config: metamorphic.zoos.<unbiased>.main)
#: the default recipe of the unbiased zoo (config/config.yaml, zoos)
RECIPE = TrainSpec(arch="lenet", width=8, optimizer="adam", lr=0.002, epochs=8, batch_size=32,
                   seed=0, preprocessing="center")
EPOCHS = 40
#: the ``zoo`` part's models (width, data fraction), seed 0, trained ``EPOCHS`` epochs
ZOO_MODELS = ((4, 1.0), (16, 1.0), (8, 0.25), (8, 0.5), (4, 0.5))


def config() -> dict:
    return validate_config(yaml.safe_load((ROOT / "config/config.yaml").read_text()),
                           ROOT / "config" / "schema.yaml")


class Bench:
    """The main base's annotations and its c3 follow-ups (variant-major: source, 3 object fills,
    3 background fills), and the oracle options of the config."""

    def __init__(self, run: Path, zoo: str = ZOO, base: str = BASE) -> None:
        cfg = config()
        ts = run / "results/testsets" / zoo
        self.ex = read_base_annotations(ts / f"metamorphic-{base}.npz")
        self.x = load_npz(ts / f"metamorphic-{base}-c3.npz", keys=("x",))["x"]
        self.opt = oracle_options(cfg["metamorphic"], "")
        self.n = len(self.ex["y"])

    @torch.inference_mode()
    def ratios(self, model: torch.nn.Module, kind: str) -> dict:
        model.eval()
        logits = model(preprocess(self.x, kind, channels=3)).double().numpy()
        p_s, p_o, p_b = orc.split_followup_outputs(softmax(logits), 3, self.n)
        v = orc.evaluate("single", p_s, p_o, p_b, self.ex["y"], self.ex["has_region"], self.opt)
        nc = int(v.correct.sum())
        r = {f"{k}_ratio": (int((f & v.correct).sum()) / nc if nc else np.nan)
             for k, f in (("MR1", v.mr1), ("MR2", v.mr2), ("MR1&2", v.mr12))}
        # how much the background fill moves the output at all (total variation, mean over
        # sources and colours), and MR-2 violations over every source, correct or not
        tv = 0.5 * np.abs(p_b - p_s[:, None, :]).sum(axis=2).mean()
        return {"acc": float(v.correct.mean()), "n_correct": nc, **r, "bg_tv": float(tv),
                "MR2_all": float(v.mr2.mean())}


def train_data(run: Path, zoo: str = ZOO) -> tuple[np.ndarray, ...]:
    """The zoo's training split and validation split as the workflow draws them
    (``labelfree.zoo.local.train_local_zoo``: val fraction 0.1, seeded by the zoo)."""
    cfg = config()
    data = read_image_set(run / f"results/data/{zoo}/train.npz")
    tr, va = validation_split(data.y, 0.1, derive_seed(int(cfg["seed"]), zoo, "val"))
    return data.x[tr], data.y[tr], data.x[va], data.y[va]


def part_check(a) -> list[dict]:
    b = Bench(a.run)
    summ = pd.read_csv(a.run / f"results/metamorphic/raw/{ZOO}/summary.csv")
    summ = summ[(summ.base == BASE) & (summ.colourset == "c3")].set_index("model")
    out = []
    for d in sorted((a.run / f"results/zoo/{ZOO}").iterdir()):
        model, meta = load_model(d)
        r = b.ratios(model, meta["preprocessing"])
        out.append({"part": "check", "setting": "the run's weights", "model": d.name,
                    "width": meta["width"], "epochs": meta["epochs"], "seed": meta["seed"], **r,
                    "run_MR2_ratio": float(summ.loc[d.name, "MR2_ratio"]),
                    "run_acc": float(summ.loc[d.name, "acc"])})
    return out


def part_training(a) -> list[dict]:
    b = Bench(a.run)
    x, y, xv, yv = train_data(a.run)
    out = []
    for seed in (0, 1, 2):
        t = time.process_time()
        runs = train_family(range(EPOCHS + 1), replace(RECIPE, seed=seed), x, y, xv, yv,
                            num_classes=10)
        for e, res in runs.items():
            out.append({"part": "training", "setting": f"default recipe, {EPOCHS} epochs",
                        "model": f"lenet-w8-e{e}-s{seed}", "width": 8, "epochs": e, "seed": seed,
                        "data_fraction": 1.0, "val_acc": res.meta["val_accuracy"],
                        "train_loss": res.meta["final_train_loss"],
                        **b.ratios(res.model, RECIPE.preprocessing)})
        print("training seed", seed, round(time.process_time() - t), "cpu s", flush=True)
    return out


#: the ``biased`` part: training data whose background family goes with the label (the run's
#: biased zoo, rho 0.9, and shortcut zoo, rho 1), measured on the scenes of the training
#: distribution (the zoo's main base) and on the unbiased scenes (rho0)
BIASED = {"metamorphic_biased": "rho09", "metamorphic_shortcut": "rho1", "rho 0.5": "rho09"}
BIASED_EPOCHS = 30


def rho_train_data(run: Path, rho: float) -> tuple[np.ndarray, ...]:
    """Training data like the biased zoo's (its dataset's options and seed) with the background
    family the label's in a share ``rho`` of the scenes; split as :func:`train_data`."""
    cfg = config()
    ds = cfg["datasets"]["metamorphic_biased"]
    opts = {**ds["options"], "rho": rho}
    spec = {"name": "metamorphic_biased", "splits": {"train": ds["splits"]["train"]}, "options": opts}
    data = digitscenes.build(spec, derive_seed(int(cfg["seed"]), "data", "metamorphic_biased"))["train"]
    tr, va = validation_split(data.y, 0.1, derive_seed(int(cfg["seed"]), "metamorphic_biased", "val"))
    return data.x[tr], data.y[tr], data.x[va], data.y[va]


def part_biased(a) -> list[dict]:
    old = pd.read_csv(CSV) if CSV.exists() else pd.DataFrame(columns=["part", "zoo"])
    run_now = [z for z in BIASED if not a.only or z in a.only]
    out = old[(old.part == "biased") & ~old.zoo.isin(run_now)].to_dict("records")
    for zoo in run_now:
        main = BIASED[zoo]
        src = "metamorphic_biased" if zoo.startswith("rho ") else zoo  # where the test scenes are
        benches = {main: Bench(a.run, src, main), "rho0": Bench(a.run, src, "rho0")}
        x, y, xv, yv = (rho_train_data(a.run, float(zoo.split()[1])) if zoo.startswith("rho ")
                        else train_data(a.run, zoo))
        for seed in a.seeds:
            t = time.process_time()
            runs = train_family(range(BIASED_EPOCHS + 1), replace(RECIPE, seed=seed), x, y, xv,
                                yv, num_classes=10)
            for e, res in runs.items():
                for base, b in benches.items():
                    out.append({"part": "biased", "setting": f"{zoo} data, measured on {base}",
                                "zoo": zoo, "base": base, "model": f"lenet-w8-e{e}-s{seed}",
                                "width": 8, "epochs": e, "seed": seed, "data_fraction": 1.0,
                                "val_acc": res.meta["val_accuracy"],
                                "train_loss": res.meta["final_train_loss"],
                                **b.ratios(res.model, RECIPE.preprocessing)})
            print("biased", zoo, "seed", seed, round(time.process_time() - t), "cpu s", flush=True)
            write(out, "biased")
    return out


def part_zoo(a) -> list[dict]:
    b = Bench(a.run)
    x, y, xv, yv = train_data(a.run)
    out = []
    # with the ``training`` part's three width-8 runs (seeds 0-2, full data) at 40 epochs
    for width, frac in ZOO_MODELS:
        t = time.process_time()
        spec = replace(RECIPE, width=width, data_fraction=frac, epochs=EPOCHS)
        runs = train_family((8, 20, EPOCHS), spec, x, y, xv, yv, num_classes=10)
        for e, res in runs.items():
            out.append({"part": "zoo", "setting": "converged zoo", "width": width,
                        "model": f"lenet-w{width}-f{frac:g}-e{e}", "epochs": e, "seed": 0,
                        "data_fraction": frac, "val_acc": res.meta["val_accuracy"],
                        "train_loss": res.meta["final_train_loss"],
                        **b.ratios(res.model, RECIPE.preprocessing)})
        print("zoo", width, frac, round(time.process_time() - t), "cpu s", flush=True)
        write(out, "zoo")
    return out


def write(rows: list[dict], part: str) -> None:
    old = pd.read_csv(CSV) if CSV.exists() else pd.DataFrame(columns=["part"])
    df = pd.concat([old[old.part != part], pd.DataFrame(rows)], ignore_index=True)
    df.to_csv(CSV, index=False, float_format="%.4g")


def render(a) -> None:
    """metamorphic-causes.md from the csv."""
    df = pd.read_csv(CSV)
    lines = ["# metamorphic: experiments on the causes of the failing RQ6 claims", "",
             "Generated by `docs/paper-vs-ours/metamorphic-causes.py render` from "
             "`metamorphic-causes.csv` (rows written by its parts `check`, `training`, `zoo`, "
             "`biased`; "
             "the docstring says what each does). Main base of the unbiased zoo (`rho0`, 300 "
             "DigitScenes test scenes, colours c3); ratio = flagged correct inferences / correct "
             "inferences, as the report counts them (docs/metamorphic.md, reading R8). Run on "
             "the default-run tree of a62b8cf (`/tmp/dr2`), AMD EPYC, 2 shared cores, no GPU, "
             "torch on the CPU; `training` took about 60 CPU s per seed, `zoo` 10-60 CPU s per "
             "model; `biased` on the default-run tree of e173b99 (`/tmp/dr3`), same machine, "
             "about 65 CPU s per seed (30 epochs).", ""]
    cols = ["model", "epochs", "acc", "MR1_ratio", "MR2_ratio"]
    ch = df[df.part == "check"]
    if len(ch):
        lines += ["## check: the run's weights through this script", "",
                  "`bg_tv`: how far the background fills move the output (total variation "
                  "between source and follow-up softmax, mean over sources and colours).", "",
                  ch[cols + ["bg_tv", "run_acc", "run_MR2_ratio"]].to_markdown(
                      index=False, floatfmt=".4f"), ""]
        late = ch[ch.epochs >= 5]
        lines += ["Fig. 10's Pearson r (accuracy, MR-2 ratio) over the run's unbiased zoo: "
                  f"all {len(ch)} models {pearson(ch.acc, ch.MR2_ratio):+.3f}; without the "
                  f"checkpoints of fewer than 5 epochs ({len(late)} models: "
                  f"{', '.join(late.model)}) {pearson(late.acc, late.MR2_ratio):+.3f}.", ""]
    tr = df[df.part == "training"]
    if len(tr):
        lines += ["## training: the default recipe, 40 epochs, every epoch (Fig. 9)", ""]
        piv = tr.pivot_table(index="epochs", columns="seed", values=["acc", "MR2_ratio"])
        piv.columns = [f"{v} s{s}" for v, s in piv.columns]
        piv.index = piv.index.astype(int).astype(str)  # shown as 0, 1, ... not 0.0000
        show = piv.loc[[e for e in piv.index if int(e) <= 10 or int(e) % 5 == 0]]
        lines += [show.reset_index().to_markdown(index=False, floatfmt=".4f"), ""]
        lines += ["Fig. 9 as the paper samples it (every five epochs to saturation) and as the "
                  "default run does (checkpoints 1, 2, 3, 5, 8):", ""]
        rows = []
        for seed, g in tr.groupby("seed"):
            g = g.set_index("epochs")
            for label, eps in (("default run's checkpoints 1-8", [1, 2, 3, 5, 8]),
                               ("every 5 epochs, 5-40", list(range(5, EPOCHS + 1, 5))),
                               ("every epoch, 0-40", list(range(0, EPOCHS + 1)))):
                r2 = g.loc[eps, "MR2_ratio"].to_numpy()
                last = r2[-3:]
                top = int(np.argmax(r2))
                rows.append({"seed": seed, "sampling": label,
                             "first": r2[0], "peak": r2[top], "peak at epoch": eps[top],
                             "last": r2[-1], "last < first": r2[-1] < r2[0],
                             "last 3 spread": float(np.abs(last - last.mean()).max()),
                             "acc first": g.loc[eps[0], "acc"], "acc last": g.loc[eps[-1], "acc"]})
        lines += [pd.DataFrame(rows).to_markdown(index=False, floatfmt=".4f"), ""]
        lines += ["Pearson of accuracy and MR-2 ratio over one run's checkpoints (what the "
                  "default zoo's Fig. 10 mostly is: 5 of its 7 models are checkpoints of one run):",
                  ""]
        rows = []
        for seed, g in tr.groupby("seed"):
            g = g.set_index("epochs")
            for label, eps in (("checkpoints 1, 2, 3, 5, 8", [1, 2, 3, 5, 8]),
                               ("checkpoints 10-40", list(range(10, EPOCHS + 1)))):
                rows.append({"seed": seed, "checkpoints": label,
                             "Pearson r": pearson(g.loc[eps, "acc"], g.loc[eps, "MR2_ratio"])})
        lines += [pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3f"), ""]
    zo = df[df.part == "zoo"]
    if len(zo):
        # the converged zoo: the zoo part's models and the training part's width-8 runs
        both = pd.concat([zo, tr[tr.epochs.isin(zo.epochs.unique())]], ignore_index=True)
        lines += ["## zoo: converged models (Fig. 10)", "",
                  "`bg_tv` is empty (nan) on the `training` part's rows: that part was run "
                  "before the column existed.", "",
                  both[["model", "width", "data_fraction", "seed", "epochs", "acc", "val_acc",
                        "MR1_ratio", "MR2_ratio", "bg_tv"]].sort_values(["epochs", "acc"])
                  .to_markdown(index=False, floatfmt=".4f"), ""]
        rows = []
        for e, g in both.groupby("epochs"):
            rows.append({"models": f"{len(g)} models at {e} epochs", "acc range":
                         f"{g.acc.min():.3f}-{g.acc.max():.3f}",
                         "Pearson r (MR-2)": pearson(g.acc, g.MR2_ratio),
                         "Pearson r (MR-1)": pearson(g.acc, g.MR1_ratio)})
        lines += [pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3f"), ""]
    bi = df[df.part == "biased"]
    if len(bi):
        lines += render_biased(bi)
    MD.write_text("\n".join(lines))


def render_biased(bi: pd.DataFrame) -> list[str]:
    """The ``biased`` part: the ratio per epoch (mean over seeds), and the report's two RQ6 rows
    per run at the default run's checkpoints and at the paper's sampling."""
    lines = ["## biased: backgrounds that go with the label (Fig. 9)", "",
             "The default recipe trained on the run's biased data (rho 0.9: the background family "
             "is the label's in 90 % of the training scenes), on the same data drawn with rho 0.5, "
             f"and on the shortcut data (rho 1), {BIASED_EPOCHS} epochs (the seeds: the last "
             "table), measured on the scenes of the biased zoo's main base (`rho09`; `rho1` for "
             "the shortcut data) and on the unbiased scenes (`rho0`). Mean over the seeds:", ""]
    for setting, g in bi.groupby("setting", sort=False):
        piv = g.groupby("epochs")[["acc", "MR2_ratio", "bg_tv"]].mean()
        piv.index = piv.index.astype(int).astype(str)
        show = piv.loc[[e for e in piv.index if int(e) <= 10 or int(e) % 5 == 0]]
        lines += [f"### {setting}", "", show.reset_index().to_markdown(index=False, floatfmt=".4f"),
                  ""]
    lines += ["The report's RQ6 rows on these runs: `last < first` (\"MR-2 ratio falls during "
              "training\") and the last 3 checkpoints' spread (<= 0.05: \"then stays flat\"), at "
              "the default run's checkpoints and at the paper's sampling (every 5 epochs from "
              "epoch 5):", ""]
    rows = []
    for (setting, seed), g in bi.groupby(["setting", "seed"], sort=False):
        g = g.set_index("epochs")
        for label, eps in (("checkpoints 1, 2, 3, 5, 8", [1, 2, 3, 5, 8]),
                           (f"every 5 epochs, 5-{BIASED_EPOCHS}",
                            list(range(5, BIASED_EPOCHS + 1, 5)))):
            r2 = g.loc[eps, "MR2_ratio"].to_numpy()
            last = r2[-3:]
            spread = float(np.abs(last - last.mean()).max())
            rows.append({"setting": setting, "seed": seed, "sampling": label, "first": r2[0],
                         "peak": r2.max(), "last": r2[-1], "falls (last < first)": r2[-1] < r2[0],
                         "last 3 spread": spread, "flat (<= 0.05)": spread <= 0.05,
                         "acc first": g.loc[eps[0], "acc"], "acc last": g.loc[eps[-1], "acc"]})
    lines += [pd.DataFrame(rows).to_markdown(index=False, floatfmt=".4f"), ""]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=("check", "training", "zoo", "biased", "render"))
    ap.add_argument("--run", type=Path, default=Path("/tmp/dr2"))
    ap.add_argument("--only", nargs="*", help="settings of the biased part to run")
    ap.add_argument("--seeds", nargs="*", type=int, default=[0, 1, 2],
                    help="training seeds of the biased part")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.part == "render":
        render(a)
        return
    rows = {"check": part_check, "training": part_training, "zoo": part_zoo,
            "biased": part_biased}[a.part](a)
    write(rows, a.part)
    render(a)


if __name__ == "__main__":
    main()
