"""Tables, figures and the checks table of the study, from the per-zoo verdict summaries and
per-image tables written by :func:`labelfree.metamorphic.run.zoo_verdicts`.

Every output names the paper table or figure it reproduces (the paper's Sections 5 and 6; the
checks: docs/metamorphic.md, reading R12). :func:`write_report` is the single entry point of the
``metamorphic_report`` rule; ``cfg`` is the validated ``metamorphic`` section of the config.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.patches import Rectangle

from labelfree import plots, stats
from labelfree.metamorphic import analysis as an
from labelfree.metamorphic.followups import COLOURSETS
from labelfree.metamorphic.plan import TABLES, zoo_of
from labelfree.metamorphic.run import NpzRows
from labelfree.outputs import POOLED, output_name
from labelfree.seeds import derive_seed
from labelfree.store import load_npz, read_image_set, save_figure, save_json, save_table

log = logging.getLogger(__name__)

def out_name(stem: str) -> str:
    """The file name (no suffix) of a metamorphic table or figure (docs/outputs.md)."""
    return output_name(stem, POOLED)


MR_LABEL = {"MR1": "MR-1", "MR2": "MR-2", "MR1&2": "MR-1&2"}


#: The paper's headline claims and the checks that test them (a row's key is ``check: what``),
#: for the claims table of docs/metamorphic.md ("Claims"; rendered by ``labelfree.claims``).
#: ``cause`` is shown for a claim that does not hold.
CLAIMS = (
    {"id": "RQ1 precision", "checks": ("F: *",),
     "claim": "MR-2's flags are far more precise than MR-1's (RQ1: 96.4 % against 64.1 % on "
              "single-label models); MR-1's false positives come from incomplete annotation"},
    {"id": "RQ1 rates", "checks": ("B: *",),
     "claim": "MR-1 flags few inferences, MR-2 many (RQ1, RQ3, Tables 5-6)",
     "cause": "B as written fails only through the near-chance models B's switch leaves out "
              "(the row names them); near chance the ratios mean nothing (docs/metamorphic.md, "
              "reading R12)"},
    {"id": "RQ2", "checks": ("E: *",),
     "claim": "three colours give the verdicts of fifteen (RQ2, Table 4)"},
    {"id": "RQ3", "checks": ("RQ3: *",),
     "claim": "unreliable inferences are model-specific: models flag different inputs (RQ3, "
              "Fig. 6)"},
    {"id": "RQ4", "checks": ("C: *", "RQ4: *"),
     "claim": "inputs with small objects are flagged more (RQ4, Figs. 7-8)"},
    {"id": "RQ5", "checks": ("D: *", "RQ5: *"),
     "claim": "dropping the MR-2-flagged inferences raises accuracy (RQ5, Tables 7-8: +8.84 % "
              "single-label)"},
    {"id": "RQ5 multi-label", "checks": ("G: MR-1 ratio multi-label*", "G: MR-2 ratio multi-label*"),
     "claim": "multi-label models make more unreliable inferences than single-label ones "
              "(RQ3, RQ5: 21.96 % against 8.84 %)"},
    {"id": "RQ6 training", "checks": ("RQ6: *", "G: last *"),
     "claim": "MR-2's ratio falls early in training, then stays flat (RQ6, Fig. 9)",
     "cause": "our unbiased zoo has no background reliance to lose: its scenes' backgrounds "
              "carry no label (rho 0), where ImageNet's context goes with the label and the "
              "paper reads the fall as its models moving to object-relevant features (Sec. "
              "6.4.3). On it the ratio rises from the near-chance first checkpoints (epoch 1: "
              "accuracy 0.23; the background fills move its outputs by a total variation of "
              "0.11 against 0.46 at epoch 8, so it flags little) to a seed-specific plateau of "
              "0.26-0.39, flat from about epoch 10 (40 epochs, 3 seeds; sampled every 5 epochs "
              "it falls in 1 seed of 3). The same recipe trained on our biased data (rho 0.9: "
              "the background is the label's in 90 % of the training scenes) shows the paper's "
              "curve on its own scenes: at epoch 1 the model is already 80-87 % right, by the "
              "background, and 0.58-0.65 of its correct inferences are flagged; the ratio falls "
              "to 0.37-0.48 by epoch 8 and stays there (0.38-0.51 at epoch 30); sampled every 5 "
              "epochs from epoch 5 both rows hold in 3 seeds of 3 (falls 0.59 -> 0.51, 0.47 -> "
              "0.38, 0.48 -> 0.40; last-3 spread 0.007-0.039). Controls: with rho 0.5 the fall "
              "is over by epoch 3-5 (0.60-0.70 at epoch 1, 0.32-0.39 at epoch 5), before the "
              "first of the paper's samples, and the ratio then settles at 0.41-0.46 (2 seeds); "
              "with rho 1 (the background alone gives accuracy 0.99, the glyph is never needed) "
              "it rises (0.34 at epoch 1, 0.61 at 3) and settles at 0.50 (1 seed): "
              "docs/paper-vs-ours/metamorphic-causes.md (training, biased)"},
    {"id": "RQ6 accuracy", "checks": ("G: Pearson *",),
     "claim": "higher accuracy goes with fewer MR-2 flags (RQ6, Fig. 10: Pearson -0.901)",
     "cause": "our zoo is mostly checkpoints of one run, near-chance ones included, where the "
              "paper correlates 18 trained models: near chance a model flags little (RQ6 "
              "training), which makes the slope positive; without the checkpoints of fewer than "
              "5 epochs the same zoo gives -0.98 (3 models), and 8 trained models (widths 4-16, "
              "training fractions 0.25-1, 3 seeds) give -0.81, -0.87, -0.52 after 8, 20, 40 "
              "epochs: docs/paper-vs-ours/metamorphic-causes.md (zoo)"},
    {"id": "premise", "checks": ("A: *", "G: MR-1 ratio shortcut*"),
     "claim": "a model that leans on the background (biased, shortcut) is flagged more (the "
              "approach's premise, Sec. 1, Fig. 1; tested on our synthetic scenes, where the "
              "bias is known)",
     "cause": "check A's margin is seed luck: over seeds 0-4 the biased-minus-unbiased MR-2 gap "
              "is 0.36, 0.18, 0.07, 0.34, 0.09, mean 0.21 against the threshold 0.3 "
              "(docs/metamorphic.md, \"Checks table and which conclusions hold\")"},
    {"id": "ImageNet/COCO", "untestable": "`config/paper/metamorphic-{imagenet,coco}.yaml` "
                                          "need ImageNet val and COCO and a GPU; not run",
     "claim": "the above on 18 Keras ImageNet models and 3 COCO multi-label models (Secs. 5-6)"},
)
#: Checks of the table that are no claim of the paper, and why.
NOT_CLAIMS = {"H: *": "MR-2's recall against our scenes' counterfactual, reported (reading R12); "
                      "the paper has no ground truth to compute it"}


def _pct(x: float) -> str:
    return "nan" if x != x else f"{100 * x:.2f}%"


def _reference_rows(sheet: pd.DataFrame, ref: Mapping[str, Any]) -> pd.DataFrame:
    """Rows of the unbiased zoo with the reference width/seed and their largest epoch count."""
    s = sheet[(sheet["width"] == ref["width"]) & (sheet["seed"] == ref["seed"])]
    if s.empty:
        s = sheet
    return s[s["epochs"] == s["epochs"].max()]


def select(summary: pd.DataFrame, **eq: Any) -> pd.DataFrame:
    m = np.ones(len(summary), dtype=bool)
    for k, v in eq.items():
        m &= (summary[k] == v).to_numpy()
    return summary[m]


def main_rows(summary: pd.DataFrame, cfg: Mapping[str, Any]) -> pd.DataFrame:
    """Each zoo's models on its main base with the main colour set."""
    parts = [
        select(summary, zoo=z, base=zc["main"], colourset=cfg["colourset_main"])
        for z, zc in cfg["zoos"].items()
    ]
    return pd.concat(parts, ignore_index=True) if parts else summary.iloc[:0]


def write_report(
    summary: pd.DataFrame,
    images: pd.DataFrame,
    cfg: Mapping[str, Any],
    out_dir: str | Path,
    gallery: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Write every table, figure and the checks; returns the checks as a dict."""
    out = Path(out_dir)
    tdir, fdir = out / "tables", out / "figures"
    unb = zoo_of(cfg, "unbiased")
    ref = _reference_rows(select(summary, zoo=unb, base=cfg["zoos"][unb]["main"],
                                 colourset=cfg["colourset_main"]), cfg["reference"]) if unb else None
    ref_model = str(ref["model"].iloc[0]) if ref is not None and len(ref) else None
    res: dict[str, Any] = {"reference_model": ref_model}

    # RQ1 ------------------------------------------------------------------------------------
    rq1 = _rq1(summary, cfg)
    save_table(rq1, tdir / f"{out_name('table1-3')}.csv", title=TABLES["table1-3"])
    # RQ2 ------------------------------------------------------------------------------------
    rq2 = _rq2(images, cfg)
    save_table(rq2, tdir / f"{out_name('table4')}.csv", title=TABLES["table4"], float_format="%.4g")
    # RQ3 ------------------------------------------------------------------------------------
    mains = main_rows(summary, cfg)
    t5 = _prevalence(mains)
    save_table(t5, tdir / f"{out_name('table5-6')}.csv", title=TABLES["table5-6"])
    f6 = _fig6(images, cfg, unb, fdir)
    save_table(f6, tdir / f"{out_name('fig6')}.csv", title=TABLES["fig6"])
    # RQ4 ------------------------------------------------------------------------------------
    f8, rho_c = _fig8(images, cfg, unb, ref_model, fdir)
    save_table(f8, tdir / f"{out_name('fig8')}.csv", title=TABLES["fig8"])
    # RQ5 ------------------------------------------------------------------------------------
    t7 = _accuracy_table(mains)
    save_table(t7, tdir / f"{out_name('table7-8')}.csv", title=TABLES["table7-8"])
    w = _wilcoxon(mains, unb)
    save_table(w, tdir / f"{out_name('table7-wilcoxon')}.csv", title=TABLES["table7-wilcoxon"], float_format="%.4g")
    # RQ6 ------------------------------------------------------------------------------------
    f9 = _fig9(summary, cfg, unb, fdir)
    save_table(f9, tdir / f"{out_name('fig9')}.csv", title=TABLES["fig9"])
    f10, r10 = _fig10(mains, unb, fdir)
    save_table(f10, tdir / f"{out_name('fig10')}.csv", title=TABLES["fig10"])
    # bias calibration and recall ------------------------------------------------------------
    bias = _bias_table(summary, cfg, ref_model)
    save_table(bias, tdir / f"{out_name('extra-bias_calibration')}.csv", title=TABLES["extra-bias_calibration"])
    rec = _recall_table(summary, cfg)
    save_table(rec, tdir / f"{out_name('extra-mr2_recall')}.csv", title=TABLES["extra-mr2_recall"])
    # RQ1 manual-check export and Fig. 7 ------------------------------------------------------
    sizes, sample = rq1_annotation(images, summary, cfg)
    save_table(sizes, tdir / f"{out_name('table1-3-annotation_sizes')}.csv", title=TABLES["table1-3-annotation_sizes"])
    save_table(sample, out / "annotation" / "rq1_sample.csv",
               title="RQ1 annotation form: one row per sampled flag; annotators fill the blank columns")
    f7 = _fig7(images, cfg, unb, gallery or {}, fdir)
    save_table(f7, tdir / f"{out_name('fig7')}.csv", title=TABLES["fig7"])
    # checks ---------------------------------------------------------------------------------
    checks = _checks(summary, mains, rq1, rq2, bias, f6, f9, rho_c, w, r10, rec, cfg, ref_model, f7, images)
    save_table(checks, tdir / f"{out_name('extra-checks')}.csv", title=TABLES["extra-checks"], float_format="%.4g")
    res["checks"] = checks.to_dict("records")
    save_json(res, out / "raw" / "checks.json")
    # gallery ----------------------------------------------------------------------------------
    _gallery(images, cfg, ref_model, unb, gallery or {}, fdir)
    return res


# ---------------------------------------------------------------------------------------------
# RQ1
# ---------------------------------------------------------------------------------------------


def _rq1(summary: pd.DataFrame, cfg: Mapping[str, Any]) -> pd.DataFrame:
    """Tables 1-3: per model and MR on the RQ1 base (multi-label models on their main base)."""
    rows = []
    for zoo, zc in cfg["zoos"].items():
        base = cfg["rq1"]["base"] if zc["role"] != "multilabel" else zc["main"]
        s = select(summary, zoo=zoo, base=base, colourset=cfg["colourset_main"])
        for r in s.to_dict("records"):
            for mr in ("MR1", "MR2"):
                rows.append({
                    "zoo": zoo, "model": r["model"], "role": zc["role"], "base": base,
                    "MR": MR_LABEL[mr], "acc": r["acc"], "total_flags": r[f"{mr}_flags"],
                    "cochran_sample": r[f"{mr}_cochran"], "TP": r[f"{mr}_tp"],
                    "precision": r[f"{mr}_precision"],
                    "FP_multiple": r[f"{mr}_fp_multiple"],
                    "FP_multiple_also_incomplete": r[f"{mr}_fp_multiple_and_incomplete"],
                    "FP_incomplete": r[f"{mr}_fp_incomplete"], "FP_other": r[f"{mr}_fp_other"],
                    "share_multiple_all_correct": r["share_multiple_all"],
                })
    return pd.DataFrame(rows)


def rq1_annotation(
    images: pd.DataFrame, summary: pd.DataFrame, cfg: Mapping[str, Any]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """RQ1 manual check (docs/metamorphic.md, reading R11): per model of ``rq1.models`` (empty = every model) on
    the RQ1 base (multi-label zoos: their main base) and per MR, a uniform sample without
    replacement of the flags (violated and correct) of Cochran's size (z, e of ``rq1``), seeded by
    (``rq1.seed``, zoo, model, MR). Returns (sizes per model and MR, the annotation form: one row
    per sampled flag with the follow-up to show, white-filled as the authors did, and blank
    annotator columns)."""
    rq1 = cfg["rq1"]
    z, e, seed = float(rq1.get("z", 1.96)), float(rq1.get("e", 0.05)), int(rq1.get("seed", 0))
    wanted = set(rq1.get("models") or [])
    sizes, rows = [], []
    for zoo, zc in cfg["zoos"].items():
        base = rq1["base"] if zc["role"] != "multilabel" else zc["main"]
        im = select(images, zoo=zoo, base=base, colourset=cfg["colourset_main"])
        for model, g in im.groupby("model", sort=False):
            if wanted and model not in wanted:
                continue
            for mr, col, shown in (("MR-1", "mr1", "obj-white"), ("MR-2", "mr2", "bg-white")):
                flags = g[g[col] & g["correct"]]
                k = an.cochran(len(flags), z=z, e=e)
                # the stream keeps its former name's draws (labelfree.seeds.FORMER_NAMES)
                rng = np.random.default_rng(derive_seed(seed, "metamorphic_rq1", zoo, model, mr))
                pick = np.sort(rng.choice(len(flags), size=k, replace=False)) if k else np.zeros(0, int)
                sizes.append({"zoo": zoo, "model": model, "base": base, "MR": mr,
                              "acc": float(g["correct"].mean()), "total_flags": len(flags),
                              "cochran_sample": k, "z": z, "e": e})
                for r in flags.iloc[pick].to_dict("records"):
                    rows.append({"zoo": zoo, "model": model, "base": base, "MR": mr, "id": r["id"],
                                 "gt": r["gt"], "pred": r["pred"], "certainty": r["certainty"],
                                 "area_ratio": r["area_ratio"], "show": f"source with region | {shown}",
                                 "question": "is the object fully removed? if not: a multiple / "
                                 "b incomplete / c other" if mr == "MR-1" else
                                 "is the object fully preserved?",
                                 "annotator_1": "", "annotator_2": "", "reason_1": "", "reason_2": ""})
    cols = ["zoo", "model", "base", "MR", "id"]
    return pd.DataFrame(sizes), pd.DataFrame(rows, columns=None if rows else cols)


# ---------------------------------------------------------------------------------------------
# RQ2
# ---------------------------------------------------------------------------------------------


def _rq2(images: pd.DataFrame, cfg: Mapping[str, Any]) -> pd.DataFrame:
    """Table 4: per model (and pooled) 2x2 of 15- vs 3-colour verdicts on correct inferences."""
    base, cs = cfg["rq2"]["base"], cfg["rq2"]["colourset"]
    big = select(images, base=base, colourset=cs)
    small = select(images, base=base, colourset=f"c3-from-{cs}")
    rows = []
    if big.empty or small.empty:
        return pd.DataFrame(columns=["zoo", "model", "MR"])
    keys = ["zoo", "model", "id"]
    m = big.merge(small, on=keys, suffixes=("_15", "_3"))
    m = m[m["correct_15"]]
    groups = [(z, mo, g) for (z, mo), g in m.groupby(["zoo", "model"], sort=False)]
    groups.append(("all", "pooled", m))
    for zoo, model, g in groups:
        for mr, col in (("MR1", "mr1"), ("MR2", "mr2")):
            t = an.contingency(g[f"{col}_3"].to_numpy(), g[f"{col}_15"].to_numpy())
            chi2, p, v = an.cramers_v(t)
            rows.append({
                "zoo": zoo, "model": model, "MR": MR_LABEL[mr], "n_correct": len(g),
                "V15_violate_V3_violate": t[0, 0], "V15_violate_V3_not": t[0, 1],
                "V15_not_V3_violate": t[1, 0], "V15_not_V3_not": t[1, 1],
                "chi2_yates": chi2, "p": p, "cramers_v": v,
            })
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# RQ3
# ---------------------------------------------------------------------------------------------


def _prevalence(mains: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for r in mains.to_dict("records"):
        row = {"zoo": r["zoo"], "model": r["model"], "role": r["role"], "base": r["base"],
               "task": r["task"], "acc": r["acc"], "acc_num": r["acc_num"]}
        for mr in ("MR1", "MR2", "MR1&2"):
            row[f"{MR_LABEL[mr]}"] = f"{r[f'{mr}_correct']} ({_pct(r[f'{mr}_ratio'])})"
            row[f"{MR_LABEL[mr]} ratio"] = r[f"{mr}_ratio"]
        rows.append(row)
    return pd.DataFrame(rows)


def _fig6(images: pd.DataFrame, cfg: Mapping[str, Any], unb: str | None, fdir: Path) -> pd.DataFrame:
    rows = []
    if unb is not None:
        base = cfg["zoos"][unb]["main"]
        im = select(images, zoo=unb, base=base, colourset=cfg["colourset_main"])
        models = list(dict.fromkeys(im["model"]))
        for mr, col in (("MR1", "mr1"), ("MR2", "mr2"), ("MR1&2", "mr12")):
            flags = np.stack([
                (select(im, model=m)[col] & select(im, model=m)["correct"]).to_numpy() for m in models
            ])
            freq = an.flag_frequency(flags)
            n_flagged = int(flags.any(axis=0).sum())
            for k, f in enumerate(freq, start=1):
                rows.append({"MR": MR_LABEL[mr], "n_models": k, "share": f, "n_inputs_flagged": n_flagged})
    df = pd.DataFrame(rows)
    fig, ax = plots.figure(width=5.0, height=3.0)
    if not df.empty:
        nm = int(df["n_models"].max())
        for j, mr in enumerate(["MR-1", "MR-2", "MR-1&2"]):
            d = df[df["MR"] == mr]
            ax.bar(d["n_models"] + (j - 1) * 0.27, d["share"], width=0.27, label=mr)
        ax.set_xticks(range(1, nm + 1))
    ax.set_xlabel("number of models flagging the input (violated and correct)")
    ax.set_ylabel("share of flagged inputs")
    ax.set_title(f"Fig. 6 analogue: {unb} zoo")
    ax.legend()
    save_figure(fig, fdir / f"{out_name('fig6')}.png")
    return df


# ---------------------------------------------------------------------------------------------
# RQ4
# ---------------------------------------------------------------------------------------------


def _fig8(images, cfg, unb, ref_model, fdir) -> tuple[pd.DataFrame, float]:
    sb = cfg["size_bins"]
    im = select(images, zoo=unb, model=ref_model, base=cfg["rq4"]["base"],
                colourset=cfg["colourset_main"]) if ref_model else images.iloc[:0]
    rows = []
    rho = float("nan")
    fig, ax = plots.figure(width=4.5, height=3.0)
    if not im.empty:
        ratio = im["area_ratio"].to_numpy()
        correct = im["correct"].to_numpy()
        for mr, col in (("MR1", "mr1"), ("MR2", "mr2"), ("MR1&2", "mr12")):
            x, rate, count = an.size_bin_rates(ratio, im[col].to_numpy() & correct, sb["width"],
                                               sb["n"], sb["x_position"])
            _, acc, _ = an.size_bin_rates(ratio, correct, sb["width"], sb["n"], sb["x_position"])
            ok = count > 0
            for b in np.nonzero(ok)[0]:
                rows.append({"MR": MR_LABEL[mr], "bin": int(b), "x": x[b], "rate": rate[b],
                             "n_images": int(count[b]), "accuracy": acc[b],
                             "ratio_among_correct": rate[b] / acc[b] if acc[b] > 0 else np.nan})
            ax.plot(x[ok], rate[ok], marker="o", label=MR_LABEL[mr])
            if mr == "MR2":
                rho = _size_trend(x[ok], rate[ok])
    ax.set_xlabel("object area ratio (bin midpoint)")
    ax.set_ylabel("flagged & correct / images in bin")
    ax.set_title(f"Fig. 8 analogue: {ref_model}\nMR-2 Spearman rho = {rho:.2f}", fontsize=8)
    ax.legend()
    save_figure(fig, fdir / f"{out_name('fig8')}.png")
    return pd.DataFrame(rows), rho


# ---------------------------------------------------------------------------------------------
# RQ5
# ---------------------------------------------------------------------------------------------


def _size_trend(x: np.ndarray, rate: np.ndarray) -> float:
    """Check C: Spearman rho of the MR-2 rate over the non-empty size bins; NaN below 3 bins, where
    a rank correlation says nothing (docs/metamorphic.md, reading R12)."""
    x, rate = np.asarray(x, dtype=np.float64), np.asarray(rate, dtype=np.float64)
    ok = ~(np.isnan(x) | np.isnan(rate))
    if ok.sum() < 3:
        return float("nan")
    return stats.spearman(x[ok], rate[ok])


def _accuracy_table(mains: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for r in mains.to_dict("records"):
        row = {"zoo": r["zoo"], "model": r["model"], "base": r["base"], "task": r["task"],
               "original": 100 * r["acc"]}
        for mr in ("MR1", "MR2", "MR1&2"):
            row[f"{MR_LABEL[mr]} unreliable"] = 100 * r[f"{mr}_acc"]
            row[f"{MR_LABEL[mr]} reliable"] = 100 * r[f"non_{mr}_acc"]
            row[f"{MR_LABEL[mr]} n_unreliable"] = r[mr]
        rows.append(row)
    return pd.DataFrame(rows)


def _wilcoxon(mains: pd.DataFrame, unb: str | None) -> pd.DataFrame:
    rows = []
    groups = [("all models", mains)]
    if unb is not None:
        groups.insert(0, (unb, mains[mains["zoo"] == unb]))
    for name, g in groups:
        for mr in ("MR1", "MR2", "MR1&2"):
            rel = 100 * g[f"non_{mr}_acc"].to_numpy()
            orig = 100 * g["acc"].to_numpy()
            gain = rel - orig
            rows.append({"models": name, "MR": MR_LABEL[mr], "n_models": len(g),
                         "mean_gain_pp": gain.mean() if len(g) else np.nan,
                         "min_gain_pp": gain.min() if len(g) else np.nan,
                         "max_gain_pp": gain.max() if len(g) else np.nan,
                         "wilcoxon_p_one_sided": an.wilcoxon_greater(rel, orig) if len(g) else np.nan})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# RQ6
# ---------------------------------------------------------------------------------------------


def epoch_rows(sheet_like: pd.DataFrame, ep: Mapping[str, Any]) -> pd.DataFrame:
    """Rows of one training run: same width and seed, differing only in epochs (checkpoints)."""
    s = sheet_like[(sheet_like["width"] == ep["width"]) & (sheet_like["seed"] == ep["seed"])]
    return s.sort_values("epochs").drop_duplicates("epochs")


def _fig9(summary, cfg, unb, fdir) -> pd.DataFrame:
    if unb is None:
        return pd.DataFrame()
    s = select(summary, zoo=unb, base=cfg["zoos"][unb]["main"], colourset=cfg["colourset_main"])
    e = epoch_rows(s, cfg["epochs"])
    df = pd.DataFrame({"model": e["model"], "epochs": e["epochs"], "acc": e["acc"],
                       "MR-1 ratio": e["MR1_ratio"], "MR-2 ratio": e["MR2_ratio"],
                       "MR-1&2 ratio": e["MR1&2_ratio"]})
    fig, ax = plots.figure(ncols=2, width=3.6, height=2.8)
    ax[0].plot(df["epochs"], df["acc"], marker="o", color="k")
    ax[0].set_xlabel("epoch")
    ax[0].set_ylabel("accuracy")
    ax[1].plot(df["epochs"], df["MR-1 ratio"], marker="o", label="MR-1")
    ax[1].plot(df["epochs"], df["MR-2 ratio"], marker="s", label="MR-2")
    ax[1].set_xlabel("epoch")
    ax[1].set_ylabel("ratio to #correct")
    ax[1].legend()
    fig.suptitle(f"Fig. 9 analogue: width {cfg['epochs']['width']}, seed {cfg['epochs']['seed']}",
                 fontsize=9)
    save_figure(fig, fdir / f"{out_name('fig9')}.png")
    return df


def _fig10(mains, unb, fdir) -> tuple[pd.DataFrame, dict[str, float]]:
    g = mains[mains["zoo"] == unb] if unb is not None else mains.iloc[:0]
    r = {mr: an.pearson(g["acc"], g[f"{mr}_ratio"]) for mr in ("MR1", "MR2", "MR1&2")}
    fig, ax = plots.figure(width=4.5, height=3.2)
    for mr, mk in (("MR1", "o"), ("MR2", "s"), ("MR1&2", "^")):
        xv, yv = g["acc"].to_numpy(), g[f"{mr}_ratio"].to_numpy()
        ax.scatter(xv, yv, marker=mk, label=f"{MR_LABEL[mr]} (r = {r[mr]:.2f})")
        if len(xv) >= 2 and np.ptp(xv) > 0:
            k, b = np.polyfit(xv, yv, 1)
            xs = np.linspace(xv.min(), xv.max(), 10)
            ax.plot(xs, k * xs + b, lw=1)
    ax.set_xlabel("accuracy")
    ax.set_ylabel("ratio to #correct")
    ax.set_title(f"Fig. 10 analogue: {unb} zoo")
    ax.legend(fontsize=7)
    save_figure(fig, fdir / f"{out_name('fig10')}.png")
    rows = [{"model": m, "width": w_, "epochs": e, "acc": a, "MR-1 ratio": r1, "MR-2 ratio": r2,
             "MR-1&2 ratio": r12}
            for m, w_, e, a, r1, r2, r12 in zip(g["model"], g["width"], g["epochs"], g["acc"],
                                                 g["MR1_ratio"], g["MR2_ratio"], g["MR1&2_ratio"],
                                                 strict=True)]
    rows.append({"model": "Pearson r", "acc": np.nan, "MR-1 ratio": r["MR1"],
                 "MR-2 ratio": r["MR2"], "MR-1&2 ratio": r["MR1&2"]})
    return pd.DataFrame(rows), r


# ---------------------------------------------------------------------------------------------
# bias calibration table, counterfactual recall
# ---------------------------------------------------------------------------------------------


def _bias_models(summary, cfg, ref_model) -> list[tuple[str, str, str]]:
    out = []
    for zoo, zc in cfg["zoos"].items():
        if zc["role"] == "multilabel":
            continue
        models = [ref_model] if zc["role"] == "unbiased" else list(
            dict.fromkeys(select(summary, zoo=zoo)["model"]))
        out += [(zc["role"], zoo, m) for m in models if m]
    return out


def _bias_table(summary, cfg, ref_model) -> pd.DataFrame:
    rows = []
    for role, zoo, model in _bias_models(summary, cfg, ref_model):
        s = select(summary, zoo=zoo, model=model, colourset=cfg["colourset_main"])
        for r in s.to_dict("records"):
            rho = cfg["testsets"][r["base"]]["options"].get("rho", 0.0)
            rows.append({"training set": role, "zoo": zoo, "model": model, "test base": r["base"],
                         "test rho": rho, "acc": r["acc"], "MR-1 ratio": r["MR1_ratio"],
                         "MR-2 ratio": r["MR2_ratio"], "MR-1&2 ratio": r["MR1&2_ratio"]})
    return pd.DataFrame(rows)


def _recall_table(summary, cfg) -> pd.DataFrame:
    cols = [c for c in summary.columns if c.startswith("cf_")]
    if not cols:
        return pd.DataFrame(columns=["zoo", "model", "base"])
    s = summary[(summary["colourset"] == cfg["colourset_main"]) & summary["cf_recall"].notna()
                | (summary["colourset"] == cfg["colourset_main"]) & summary["cf_n_correct"].notna()]
    keep = ["zoo", "role", "model", "base", "acc", "MR2_ratio", *cols]
    return s[keep].reset_index(drop=True)


# ---------------------------------------------------------------------------------------------
# checks A-H (docs/metamorphic.md, reading R12)
# ---------------------------------------------------------------------------------------------


def _b_check(mains: pd.DataFrame, cfg: Mapping[str, Any], add) -> None:
    """Check B: MR-1 < MR-2 for every model; the switch
    ``metamorphic.checks.b_min_accuracy_over_chance`` (m > 0) restricts it to single-label models
    with accuracy >= m / K (a near-chance model gives meaningless ratios; docs/metamorphic.md,
    reading R12); the row names the switch and every excluded model, and the value over every
    model is reported too."""
    mult = float(cfg.get("checks", {}).get("b_min_accuracy_over_chance", 0.0))
    k = mains["n_classes"] if "n_classes" in mains else pd.Series(10, index=mains.index)
    defined = mains[mains["acc_num"] > 0]
    diff_all = (defined["MR2_ratio"] - defined["MR1_ratio"]).to_numpy()
    lit = float(diff_all.min()) if diff_all.size else np.nan
    lit_ok = bool(diff_all.size and (diff_all > 0).all())
    if mult <= 0:
        add("B", "hard", f"min MR-2 - MR-1 ratio over every model ({len(defined)}; main bases)", lit,
            "> 0", lit_ok, "")
        return
    above = (mains["task"] == "multi") | (mains["acc"] >= mult / k)
    keep = mains[above & (mains["acc_num"] > 0)]
    out = mains[~above]
    diff = (keep["MR2_ratio"] - keep["MR1_ratio"]).to_numpy()
    excluded = ", ".join(f"{m} acc {a:.3f}" for m, a in zip(out["model"], out["acc"], strict=True))
    add("B", "hard", f"min MR-2 - MR-1 ratio over {len(keep)} of {len(mains)} models with accuracy "
        f">= {mult:g}x chance (main bases)", float(diff.min()) if diff.size else np.nan, "> 0",
        bool(diff.size and (diff > 0).all()),
        f"metamorphic.checks.b_min_accuracy_over_chance = {mult:g} "
        f"(docs/metamorphic.md R12: B as written covers every model); "
        f"excluded: {excluded or 'none'}")
    add("B", "reported", "B as written (docs/metamorphic.md R12): min MR-2 - MR-1 ratio over "
        f"every model ({len(defined)})", lit, "> 0", lit_ok, "")


def _checks(summary, mains, rq1, rq2, bias, f6, f9, rho_c, w, r10, rec, cfg, ref_model, f7=None,
            images=None) -> pd.DataFrame:
    """The checks table: check, kind (hard / soft / reported / conclusion), what, value,
    threshold, holds, switch (the documented deviation from the checks as written, empty if none;
    docs/metamorphic.md, reading R12). Rows: A-F, then G and H, then the paper's conclusions."""
    rows: list[dict[str, Any]] = []

    def add(check, kind, what, value, threshold, holds, switch=""):
        rows.append({"check": check, "kind": kind, "hard": kind == "hard", "what": what,
                     "value": value, "threshold": threshold, "holds": bool(holds), "switch": switch})

    b = _hard_checks(add, mains, rq1, rq2, bias, rho_c, cfg, ref_model)
    _soft_checks(add, b, mains, f9, r10, rec, cfg)
    _conclusions(add, f6, w, f7, f9, images, cfg)
    return pd.DataFrame(rows)


def _hard_checks(add, mains, rq1, rq2, bias, rho_c, cfg, ref_model) -> pd.DataFrame:
    """Checks A-F; returns the bias table's rows on the RQ1 base (the soft checks use them)."""
    base1 = cfg["rq1"]["base"]
    b = bias[bias["test base"] == base1] if not bias.empty else bias
    unb = b[b["training set"] == "unbiased"]["MR-2 ratio"].mean() if not b.empty else np.nan
    bia = b[b["training set"] == "biased"]["MR-2 ratio"].mean() if not b.empty else np.nan
    n_unb = int((b["training set"] == "unbiased").sum()) if not b.empty else 0
    n_bia = int((b["training set"] == "biased").sum()) if not b.empty else 0
    gap = bia - unb
    add("A", "hard", f"MR-2 ratio biased ({n_bia} model(s), mean {bia:.3f}) - unbiased "
        f"({n_unb} model(s), mean {unb:.3f}) on {base1}", gap, ">= 0.3", gap >= 0.3)
    _b_check(mains, cfg, add)
    add("C", "hard", f"Spearman rho of MR-2 rate over area bins ({ref_model})", rho_c, "< 0", rho_c < 0)
    d_ok = ((mains["non_MR2_acc"] > mains["acc"]) & (mains["acc"] > mains["MR2_acc"])).to_numpy()
    add("D", "hard", "models with MR-2 Reliable > Original > Unreliable accuracy",
        f"{int(d_ok.sum())}/{len(d_ok)}", "all", len(d_ok) and d_ok.all())
    pooled = rq2[rq2["model"] == "pooled"] if not rq2.empty else rq2
    for mr in ("MR-1", "MR-2"):
        r = pooled[pooled["MR"] == mr]
        p = float(r["p"].iloc[0]) if len(r) else np.nan
        v = float(r["cramers_v"].iloc[0]) if len(r) else np.nan
        add("E", "hard", f"{mr}: 3 vs 15 colours, pooled over models (p, V)", f"p={p:.3g}, V={v:.3f}",
            "p < 0.001 and V > 0.3", p < 1e-3 and v > 0.3)
    single_rq1 = rq1[(rq1["base"] == base1)] if not rq1.empty else rq1
    tot = single_rq1.groupby("MR")[["total_flags", "TP", "FP_multiple"]].sum() if len(rq1) else None
    if tot is not None and {"MR-1", "MR-2"} <= set(tot.index):
        p1 = tot.loc["MR-1", "TP"] / max(tot.loc["MR-1", "total_flags"], 1)
        p2 = tot.loc["MR-2", "TP"] / max(tot.loc["MR-2", "total_flags"], 1)
        inv1 = tot.loc["MR-1", "total_flags"] - tot.loc["MR-1", "TP"]
        share_inv = tot.loc["MR-1", "FP_multiple"] / inv1 if inv1 else np.nan
        share_all = float(single_rq1["share_multiple_all_correct"].mean())
    else:
        p1 = p2 = share_inv = share_all = np.nan
    add("F", "hard", f"oracle precision MR-2 vs MR-1 on {base1} (pooled)", f"{p2:.3f} vs {p1:.3f}",
        "MR-2 > MR-1", p2 > p1)
    add("F", "hard", "share of 'multiple' among invalid MR-1 flags vs among correct inferences",
        f"{share_inv:.3f} vs {share_all:.3f}", "over-represented", share_inv > share_all)
    return b


def _soft_checks(add, b, mains, f9, r10, rec, cfg) -> None:
    """Soft checks G (shortcut, multi-label, accuracy link, last checkpoints) and H (recall)."""
    base1 = cfg["rq1"]["base"]
    sc = b[b["training set"] == "shortcut"]["MR-1 ratio"].mean() if not b.empty else np.nan
    un1 = b[b["training set"] == "unbiased"]["MR-1 ratio"].mean() if not b.empty else np.nan
    add("G", "soft", f"MR-1 ratio shortcut vs unbiased on {base1}", f"{sc:.3f} vs {un1:.3f}",
        "shortcut > unbiased", sc > un1)
    ml = mains[mains["task"] == "multi"]
    sl = mains[mains["task"] == "single"]
    if len(ml):
        for mr in ("MR1", "MR2"):
            a_, b_ = ml[f"{mr}_ratio"].mean(), sl[f"{mr}_ratio"].mean()
            add("G", "soft", f"{MR_LABEL[mr]} ratio multi-label vs single-label (mean)",
                f"{a_:.3f} vs {b_:.3f}", "multi > single", a_ > b_)
    add("G", "soft", "Pearson r of accuracy and MR-2 ratio across the unbiased zoo (Fig. 10)", r10["MR2"],
        "< 0", r10["MR2"] < 0)
    if len(f9) >= 3:
        last = f9["MR-2 ratio"].to_numpy()[-3:]
        spread = float(np.abs(last - last.mean()).max())
        add("G", "soft", "last 3 checkpoints: max |MR-2 ratio - their mean|", spread, "<= 0.05",
            spread <= 0.05)
    if not rec.empty and "cf_recall" in rec:
        for r in rec.to_dict("records"):
            add("H", "reported", f"MR-2 recall / false alarm vs counterfactual: {r['zoo']}/{r['model']} "
                f"on {r['base']}",
                f"recall={r['cf_recall']:.3f} (n={int(r['cf_n_bg_driven'])}), "
                f"false alarm={r['cf_false_alarm']:.3f} (n={int(r['cf_n_obj_driven'])})",
                "reported", True)


def _conclusions(add, f6, w, f7, f9, images, cfg) -> None:
    """The paper's conclusions at small scale that A-H do not cover (RQ3-RQ6, the paper's
    Section 6)."""
    if not f6.empty:
        d = f6[f6["MR"] == "MR-2"]
        one = float(d.loc[d["n_models"] == 1, "share"].iloc[0]) if len(d) else np.nan
        allm = float(d.loc[d["n_models"] == d["n_models"].max(), "share"].iloc[0]) if len(d) else np.nan
        add("RQ3", "conclusion", "unreliability is model-specific (Fig. 6): MR-2-flagged inputs "
            "flagged by exactly one model vs by every model", f"{one:.3f} vs {allm:.3f}", "one > all",
            one > allm)
    if not w.empty:
        g = w[(w["MR"] == "MR-2") & (w["models"] != "all models")]
        g = g if len(g) else w[w["MR"] == "MR-2"]
        gain = float(g["mean_gain_pp"].iloc[0]) if len(g) else np.nan
        pw = float(g["wilcoxon_p_one_sided"].iloc[0]) if len(g) else np.nan
        add("RQ5", "conclusion", "dropping MR-2 flags raises accuracy (Tables 7-8): mean gain (pp), "
            "exact one-sided Wilcoxon p", f"{gain:+.2f} pp, p={pw:.3g}", "gain > 0", gain > 0)
    if f7 is not None and len(f7) and images is not None and len(images):
        allr = float(select(images, zoo=f7["zoo"].iloc[0], base=f7["base"].iloc[0],
                            colourset=cfg["colourset_main"]).drop_duplicates("id")["area_ratio"].mean())
        topr = float(f7["area_ratio"].mean())
        add("RQ4", "conclusion", f"inputs flagged by the most models have small objects (Fig. 7): mean "
            f"area ratio of the top {len(f7)} vs all inputs", f"{topr:.3f} vs {allr:.3f}", "top < all",
            topr < allr)
    if len(f9) >= 2:
        r2 = f9["MR-2 ratio"].to_numpy()
        add("RQ6", "conclusion", "MR-2 ratio falls during training (Fig. 9): last vs first checkpoint",
            f"{r2[-1]:.3f} vs {r2[0]:.3f}", "last < first", r2[-1] < r2[0])


def _fig7(images, cfg, unb, paths: Mapping[str, str], fdir: Path, top: int = 8) -> pd.DataFrame:
    """Fig. 7 (the paper's RQ4): the ``top`` inputs of the RQ1 base flagged (MR-1 or MR-2, violated
    and correct) by the most models of the unbiased zoo, ties broken by id, drawn with their box."""
    base = cfg["rq1"]["base"]
    im = select(images, zoo=unb, base=base, colourset=cfg["colourset_main"]) if unb else images.iloc[:0]
    df = pd.DataFrame(columns=["zoo", "base", "id", "n_models", "of_models", "area_ratio", "gt"])
    if not im.empty:
        im = im.assign(flag=(im["mr1"] | im["mr2"]) & im["correct"])
        n_models = im["model"].nunique()
        per = im.groupby("id").agg(n_models=("flag", "sum"), area_ratio=("area_ratio", "first"),
                                   gt=("gt", "first")).reset_index()
        per = per[per["n_models"] > 0].sort_values(["n_models", "id"], ascending=[False, True]).head(top)
        df = per.assign(zoo=unb, base=base, of_models=n_models)[list(df.columns)].reset_index(drop=True)
    if len(df) and paths.get("base"):
        x = NpzRows(paths["base"], "x")
        boxes = load_npz(paths["base"], keys=("boxes",))["boxes"]
        fig, axes = plots.figure(ncols=len(df), width=1.2, height=1.45)
        axes = np.atleast_1d(axes)
        for ax, r in zip(axes, df.to_dict("records"), strict=True):
            i = int(r["id"])
            ax.imshow(x[i : i + 1][0], interpolation="nearest")
            x0, y0, x1, y1 = boxes[i]
            ax.add_patch(Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False, ec="red", lw=0.8))
            ax.set_title(f"#{i}: {int(r['n_models'])}/{int(r['of_models'])} models\narea {r['area_ratio']:.2f}",
                         fontsize=6)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
    else:
        fig, ax = plots.figure(width=3, height=1)
        ax.text(0.5, 0.5, "no flagged inputs to show", ha="center")
        ax.axis("off")
    save_figure(fig, fdir / f"{out_name('fig7')}.png")
    return df


# ---------------------------------------------------------------------------------------------
# gallery (Figs. 1, 2, 4, 5)
# ---------------------------------------------------------------------------------------------


def _gallery(images, cfg, ref_model, unb, paths: Mapping[str, str], fdir: Path) -> None:
    """Source with its box, then obj-black/gray/white and bg-black/gray/white, per category."""
    fig, axes = None, None
    cats: list[tuple[str, int]] = []
    if paths and ref_model:
        im = select(images, zoo=unb, model=ref_model, base=cfg["rq1"]["base"], colourset="c3")
        c = im["correct"]
        pick = {
            "MR-2 TP": im[c & im["mr2"] & im["mr2_valid"]],
            "MR-1 TP": im[c & im["mr1"] & im["mr1_valid"]],
            "MR-1 FP multiple": im[c & im["mr1"] & ~im["mr1_valid"] & ((im["defect"] & 1) > 0)],
            "MR-1 FP incomplete": im[c & im["mr1"] & ~im["mr1_valid"] & ((im["defect"] & 2) > 0)],
            "not flagged": im[c & ~im["mr1"] & ~im["mr2"]],
        }
        for name, d in pick.items():
            cats += [(name, int(i)) for i in d["id"].to_numpy()[:2]]
    if cats:
        fol = read_image_set(paths["followups"])  # the first part when follow-ups are in parts
        n = len(fol) // 7
        cats = [(name, i) for name, i in cats if i < n]
    if cats:
        src = load_npz(paths["base"], keys=("y", "boxes"))
        fig, axes = plots.figure(ncols=7, nrows=len(cats), width=1.0, height=1.05)
        axes = np.atleast_2d(axes)
        titles = ["source + box"] + [f"obj-{c}" for c in COLOURSETS["c3"]] + [
            f"bg-{c}" for c in COLOURSETS["c3"]]
        for r, (name, i) in enumerate(cats):
            for v in range(7):
                ax = axes[r, v]
                ax.imshow(fol.x[v * n + i], interpolation="nearest")
                ax.set_xticks([])
                ax.set_yticks([])
                ax.grid(False)
                if r == 0:
                    ax.set_title(titles[v], fontsize=6)
            x0, y0, x1, y1 = src["boxes"][i]
            axes[r, 0].add_patch(Rectangle((x0 - 0.5, y0 - 0.5), x1 - x0, y1 - y0, fill=False,
                                           ec="red", lw=0.8))
            axes[r, 0].set_ylabel(f"{name}\n#{i} y={src['y'][i]}", fontsize=5)
    else:
        fig, ax = plots.figure(width=3, height=1)
        ax.text(0.5, 0.5, "no flagged inferences to show", ha="center")
        ax.axis("off")
    save_figure(fig, fdir / f"{out_name('fig1-5-gallery')}.png")
