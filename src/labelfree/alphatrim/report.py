"""Tables and figures of the `alphatrim` study (paper Section V; docs/alphatrim.md): Tables
I-V, Figs. 4-16 (:mod:`labelfree.alphatrim.figures`) and the checks table, per experiment.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labelfree.alphatrim import figures as fg
from labelfree.alphatrim.plan import ENSEMBLE_ZOO, FIGURES, TABLES, experiment_outputs
from labelfree.alphatrim.run import AnalysisSettings, split_reference
from labelfree.outputs import output_name
from labelfree.store import load_json, load_npz, save_figure, save_table

# ---------------------------------------------------------------------------------------------
# tables (paper Section V)
# ---------------------------------------------------------------------------------------------


def _pm(x: pd.Series, digits: int) -> str:
    return f"{x.mean():.{digits}f} ± {x.std(ddof=1) if len(x) > 1 else 0.0:.{digits}f}"


def _range(x: pd.Series | np.ndarray, digits: int) -> str:
    x = np.asarray(x, dtype=float)
    return f"[{x.min():.{digits}f}, {x.max():.{digits}f}]" if x.size else "(none)"


def table1(ens: pd.DataFrame, cut: float, delta: float) -> pd.DataFrame:
    """Table I: per ensemble size, share with alpha-hat <= cut, accuracy/churn/ECE mean ± std;
    plus mean alpha-hat, mean L_inf and the share below the classical delta_a line (Fig. 5)."""
    out = []
    for size, g in ens.groupby("M_ens", sort=True):
        out.append(
            {
                "M_ens": int(size),
                "n_ensembles": len(g),
                f"% alpha_hat <= {cut}": 100.0 * (g["alpha_hat"] <= cut).mean(),
                "accuracy mean ± std": _pm(g["accuracy"], 2),
                "churn w.r.t. ensemble mean ± std": _pm(g["churn_vs_full_ensemble"], 2),
                "ECE mean ± std": _pm(g["ece"], 4),
                "alpha_hat mean": g["alpha_hat"].mean(),
                "L_inf mean": g["linf_to_reference"].mean(),
                "% L_inf <= delta_a": 100.0 * (g["linf_to_reference"] <= delta).mean(),
            }
        )
    return pd.DataFrame(out)


def table2(per_model: pd.DataFrame, ens_acc: Mapping[str, float], cut: float) -> pd.DataFrame:
    """Table II per regime: accuracy mean ± std and range, candidate-ensemble accuracy, accuracy
    range of runs with alpha-hat <= cut; plus alpha-hat median/max, share <= cut, Pearson
    corr(accuracy, alpha-hat), mean plain-KS rejection rate (docs/alphatrim.md, reading R12)."""
    out = []
    for regime, g in per_model.groupby("regime", sort=False):
        low = g[g["alpha_hat"] <= cut]
        corr = (
            float(np.corrcoef(g["accuracy"], g["alpha_hat"])[0, 1])
            if g["alpha_hat"].std() > 0 and g["accuracy"].std() > 0
            else float("nan")
        )
        out.append(
            {
                "source": regime,
                "accuracy mean ± std": _pm(g["accuracy"], 3),
                "accuracy range": _range(g["accuracy"], 3),
                "ensemble accuracy": ens_acc[regime],
                f"accuracy range of runs with alpha_hat <= {cut}": _range(low["accuracy"], 3),
                "alpha_hat median": g["alpha_hat"].median(),
                "alpha_hat max": g["alpha_hat"].max(),
                f"share alpha_hat <= {cut}": (g["alpha_hat"] <= cut).mean(),
                "corr(accuracy, alpha_hat)": corr,
                "mean plain-KS rejection rate": g["ks_reject_rate_at_0"].mean(),
            }
        )
    return pd.DataFrame(out)


def pair_table(per_model: pd.DataFrame, churn: np.ndarray) -> pd.DataFrame:
    """All candidate pairs (i < j) of one zoo with their churn and both alpha-hats (Fig. 10)."""
    i, j = np.triu_indices(len(per_model), k=1)
    a = per_model["alpha_hat"].to_numpy()
    return pd.DataFrame({"i": i, "j": j, "churn": churn[i, j], "alpha_i": a[i], "alpha_j": a[j]})


def table3(pairs: Mapping[str, pd.DataFrame], cut: float) -> pd.DataFrame:
    """Table III: range of pairwise churn, and among pairs with both alpha-hats <= cut."""
    out = []
    for regime, p in pairs.items():
        low = p[(p["alpha_i"] <= cut) & (p["alpha_j"] <= cut)]
        out.append(
            {
                "source": regime,
                "range of pairwise churn": _range(p["churn"], 0),
                f"range among pairs with both alpha_hat <= {cut}": _range(low["churn"], 0),
                "n pairs": len(p),
                f"n pairs both <= {cut}": len(low),
                "strict sub-range": bool(
                    len(low) and (low["churn"].max() < p["churn"].max()
                                  or low["churn"].min() > p["churn"].min())
                ),
            }
        )
    return pd.DataFrame(out)


def table_top_band(per_model: pd.DataFrame, band: float) -> pd.DataFrame:
    """Tables IV / V: candidates within ``band`` accuracy points of the best, sorted by
    alpha-hat."""
    best = per_model["accuracy"].max()
    sel = per_model[per_model["accuracy"] >= best - band].sort_values(
        ["alpha_hat", "model"], kind="stable"
    )
    return pd.DataFrame(
        {
            "model": sel["model"].to_numpy(),
            "ECE": sel["ece"].to_numpy(),
            "churn w.r.t. ensemble": sel["churn_vs_ensemble"].to_numpy(),
            "accuracy": sel["accuracy"].to_numpy(),
            "average churn": sel["avg_pairwise_churn"].to_numpy(),
            "alpha_hat": sel["alpha_hat"].to_numpy(),
        }
    )


# ---------------------------------------------------------------------------------------------
# checks table (docs/alphatrim.md, reading R11: conclusions that should remain visible at small
# scale)
# ---------------------------------------------------------------------------------------------


#: The ``source`` column of the checks table: the conclusions are docs/alphatrim.md's reading R11.
CHECK_SOURCE = "docs/alphatrim.md R11"

#: The paper's headline claims and the checks that test them, for the claims table of
#: docs/alphatrim.md ("Claims"; rendered by ``labelfree.claims``). The rows of a check repeat
#: per experiment (digits, synthetic, heads) and seed regime. ``cause`` is shown for a claim
#: that does not hold.
_CORR = ("our zoo size, 30 candidates per regime against the paper's 100: with the paper's 200 "
         "runs per regime (100 reference, 100 candidates) |corr| falls in S_init and S_all to "
         "0.24 and 0.17 on digits, 0.06 and 0.21 on synthetic, and the check holds there; in "
         "S_batch Pearson's value stays at 0.61-0.62 while the rank (Spearman) correlation is "
         "0.28-0.41: a few low-accuracy runs with high alpha-hat carry it (the paper too finds "
         "the poorest runs in S_batch, Table II). More bootstrap replicates or other analysis "
         "seeds do not move it: docs/paper-vs-ours/alphatrim-causes.md (V-B1 correlation). The "
         "paper gives no number for \"weakly\"; 0.5 is our reading R11")
CLAIMS = (
    {"id": "V-B1 tail", "checks": ("(i) *",),
     "claim": "a run's alpha-hat against its zoo's reference is mostly near 0, with a tail of "
              "outlying runs (Sec. V-B1, Fig. 9, Table II)",
     "cause": "on the transfer heads alone (the tail row; the median row holds everywhere), "
              "because our 45 candidate heads all reach the same optimum of a linear head: "
              "accuracies 91.1-91.7 %, max alpha-hat 0.004-0.010 at any bootstrap count or "
              "analysis seed; trained for one epoch or at learning rate 0.1 instead of 0.01 the "
              "heads end apart and the tail appears (max alpha-hat 0.5), with a hidden layer of "
              "32 units too (0.19): docs/paper-vs-ours/alphatrim-causes.md (V-B1 tail). The "
              "paper's ViT heads do show one (Table V: 0.069, 0.118). Real MNIST's failing "
              "medians (0.068, 0.147, 0.095; S_init, S_batch, S_all): our recipe's learning rate, "
              "0.01, ten times the paper's 0.001 (Sec. V), on a large test set. At lr 0.01 the "
              "runs end at logit scales that differ (each run's median |gap| 6.9-8.9, std of "
              "its log 0.05), and that alone puts the candidates' plain KS distance to the "
              "reference (median 0.056) above the threshold of N = 5,000 (gamma 0.033). "
              "Trained at the paper's lr 0.001 for 16 epochs, to the same accuracy (98.2 %) "
              "and scale (7.8-8.6), the runs' scale "
              "spread halves (0.026) and S_all's median falls to 0.027 and holds, with a tail "
              "(max 0.23) and |corr| 0.40 (40 runs, S_all only; the configured recipe's first 40 "
              "runs: 0.064, fails; lr 0.003: 0.062, fails; lr 0.001 for 4 epochs: 0.025). Why "
              "digits holds at the same lr: its 898 test images give gamma 0.114, and the same "
              "MNIST runs on 898 test images hold too (0.0025, 0.012, 0.012). Not the cause: "
              "retraining, B 200 (0.071, 0.145, 0.105), the analysis seed (0.059-0.166), "
              "the number of runs (the paper's 200: 0.134; references of 10-100 runs: "
              "0.09-0.13), training length at lr 0.01 (1, 2, "
              "12 epochs: 0.27, 0.087, 0.5), reading the positive class's probability instead "
              "of the gap (the same values: KS is unchanged by a monotone map) or the clip at "
              "+-15 (the same values). Found on the way: with 10 % or more of the gaps at the "
              "clip every alpha-hat is censored at 0.5 even where the plain KS distance is "
              "below gamma (500 training images: 0.021 < 0.033; without the clip the median is "
              "0.004): the 12-epoch zoo's 0.5 is that (no clip: 0.23). The paper's CNN on "
              "CIFAR-10 was not run (74 s per model and epoch here): "
              "docs/paper-vs-ours/alphatrim-causes.md (V-B1 tail, mnist)"},
    {"id": "V-B1 accuracy", "checks": ("(ii) best accuracy *", "(ii) worst run *"),
     "claim": "runs with alpha-hat <= 0.05 cover the upper part of the accuracy range, the very "
              "worst runs fall outside them (Sec. V-B1, Table II)",
     "cause": "only the informational row \"the worst run falls outside\" fails (synthetic "
              "S_init and S_batch, heads); the paper's own Table II does not show it for "
              "S_init either: there the runs with alpha-hat <= 0.05 span the whole accuracy "
              "range, worst run included (90.422), as in our synthetic S_init. On the heads it "
              "holds once the runs end apart (one epoch, or learning rate 0.1); "
              "synthetic S_batch holds with the paper's 200 runs per regime: docs/paper-vs-ours/alphatrim-causes.md (V-B1 accuracy)"},
    {"id": "V-B1 correlation", "checks": ("(ii) |corr*",),
     "claim": "alpha-hat is only weakly correlated with accuracy: it measures something "
              "accuracy does not (Sec. V-B1, Fig. 9)",
     "cause": _CORR},
    {"id": "V-A ensembles", "checks": ("(iii) *",),
     "claim": "as the ensemble grows, its alpha-hat, accuracy spread, churn and distance to the "
              "reference shrink (Sec. V-A1-V-A2, Table I, Fig. 5)",
     "cause": "sampling noise of our reduced analysis, not the ensembles: the failing rows are "
              "rises of 0.0000-0.0003 in mean alpha-hat and 0.005 points in accuracy std "
              "between sizes where both are at their floor; re-analysing the same zoos with 400 "
              "sampled ensembles per size instead of 40 (the paper: 500) every (iii) row holds "
              "on digits and heads, and with 200 bootstrap replicates instead of 30 the "
              "alpha-hat rows hold; other analysis seeds at 30 / 40 flip them either way: "
              "docs/paper-vs-ours/alphatrim-causes.md (V-A ensembles)"},
    {"id": "CIFAR-10", "untestable": "the paper's binary CIFAR-10 CNN zoo (hundreds of runs) "
                                     "needs `config/paper/alphatrim-cifar10.yaml` and a GPU; "
                                     "not run",
     "claim": "the statements above at the paper's scale (Sec. V, Tables I-IV)"},
)
#: Checks of the table that are no claim of the paper (none).
NOT_CLAIMS: dict[str, str] = {}


def checks_table(
    per_model: pd.DataFrame, ens: pd.DataFrame, cut: float, corr_max: float = 0.5
) -> pd.DataFrame:
    """The small-scale conclusions (i)-(iii) (docs/alphatrim.md, reading R11) as rows (check,
    scope, value, threshold, holds, required, source).

    (i) alpha-hat mostly near 0 with a tail: median alpha-hat <= cut (required); a tail exists
        (max > cut; informational). (ii) runs with alpha-hat <= cut reach the upper quartile of
        the zoo's accuracy (required); the worst run falls outside them ("usually": not
        required); |corr(accuracy, alpha-hat)| <= ``corr_max`` ("weakly correlated", required).
    (iii) per ensemble size, the means of alpha-hat, churn w.r.t. the big ensemble, the L_inf
        distance and the accuracy spread (std) never increase with M_ens: value = the largest
        increase between consecutive sizes (required, threshold <= 0, i.e. no slack).
    """
    rows = []

    def add(check, scope, value, threshold, holds, required):
        rows.append({"check": check, "scope": scope, "value": float(value),
                     "threshold": threshold, "holds": bool(holds), "required": required,
                     "source": CHECK_SOURCE})

    for regime, pm in per_model.groupby("regime", sort=False):
        a, acc = pm["alpha_hat"].to_numpy(), pm["accuracy"].to_numpy()
        med = float(np.median(a))
        add("(i) median alpha-hat of the candidates", regime, med, f"<= {cut:g}", med <= cut,
            True)
        add("(i) max alpha-hat (a tail of outlying runs)", regime, a.max(), f"> {cut:g}",
            a.max() > cut, False)
        low = a <= cut
        q75 = float(np.quantile(acc, 0.75))
        best_low = float(acc[low].max()) if low.any() else float("nan")
        add("(ii) best accuracy among alpha-hat <= cut minus the zoo's 75th percentile",
            regime, best_low - q75, ">= 0", low.any() and best_low >= q75, True)
        add("(ii) worst run has alpha-hat > cut (1 = yes)", regime,
            float(a[np.argmin(acc)] > cut), "= 1", a[np.argmin(acc)] > cut, False)
        r = float(np.corrcoef(acc, a)[0, 1]) if np.std(a) > 0 and np.std(acc) > 0 else 0.0
        add("(ii) |corr(accuracy, alpha-hat)|", regime, abs(r), f"<= {corr_max:g}",
            abs(r) <= corr_max, True)
    if len(ens):
        by = ens.groupby("M_ens")
        series = {
            "mean alpha-hat": by["alpha_hat"].mean(),
            "accuracy std": by["accuracy"].std(ddof=1),
            "mean churn w.r.t. the big ensemble": by["churn_vs_full_ensemble"].mean(),
            "mean L_inf to the reference": by["linf_to_reference"].mean(),
        }
        for name, s in series.items():
            s = s.sort_index().dropna()
            rise = float(np.diff(s.to_numpy()).max()) if len(s) > 1 else 0.0
            add(f"(iii) largest increase of the {name} between consecutive M_ens", "ensembles",
                rise, "<= 0", rise <= 0, True)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# step 3: tables and figures
# ---------------------------------------------------------------------------------------------


def write_report(
    name: str, cfg: Mapping[str, Any], study: Mapping[str, Any], zoo_npz: str | Path,
    per_model_csv: str | Path, ensembles_csv: str | Path, raw_npz: str | Path,
    summary_json: str | Path, tables_dir: str | Path, figures_dir: str | Path,
) -> None:
    """Write the experiment's tables (csv + md) and figures (png + pdf), see TABLES/FIGURES,
    named ``<id>-<experiment>[-<detail>]`` (docs/outputs.md), from the analysis step's files."""
    s = AnalysisSettings.from_config(study)
    want = experiment_outputs(cfg)
    per_model = pd.read_csv(per_model_csv)
    ens = pd.read_csv(ensembles_csv)
    raw = load_npz(raw_npz)
    summary = load_json(summary_json)
    z = load_npz(zoo_npz)
    tdir, fdir = Path(tables_dir), Path(figures_dir)
    pairs = {r: pair_table(per_model[per_model["regime"] == r].reset_index(drop=True),
                           raw[f"churn_{r}"])
             for r in dict.fromkeys(per_model["regime"])}
    for key in want["tables"]:
        df = _table(key, per_model, ens, pairs, summary, s.cut, float(study["top_band"]))
        save_table(df, tdir / f"{output_name(key, name)}.csv",
                   title=f"{TABLES[key]} ({name}, N = {summary['N']}, "
                         f"gamma = {summary.get('gamma', 0):.4f})")
    for key in want["figures"]:
        fig = _figure(key, f"{FIGURES[key]} ({name})", s, z, per_model, ens, pairs, summary)
        save_figure(fig, fdir / f"{output_name(key, name)}.png")


def _table(
    key: str, per_model: pd.DataFrame, ens: pd.DataFrame, pairs: Mapping[str, pd.DataFrame],
    summary: Mapping[str, Any], cut: float, band: float,
) -> pd.DataFrame:
    """The table ``key`` of :data:`TABLES` from an experiment's analysis."""
    if key == "table1":
        return table1(ens, cut, summary["fig5_delta_a"])
    if key == "table2":
        return table2(per_model, summary["ensemble_accuracy"], cut)
    if key == "table3":
        return table3(pairs, cut)
    if key == "extra-checks":
        return checks_table(per_model, ens, cut)
    if key in ("table4", "table5"):
        return table_top_band(per_model[per_model["regime"] == "S_all"], band)
    raise KeyError(key)


def _figure(
    key: str, label: str, s: AnalysisSettings, z: Mapping[str, np.ndarray],
    per_model: pd.DataFrame, ens: pd.DataFrame, pairs: Mapping[str, pd.DataFrame],
    summary: Mapping[str, Any],
) -> Any:
    """The figure ``key`` of :data:`FIGURES` (a matplotlib figure) from an experiment's zoo
    file ``z`` (Figs. 4 and 13: gaps and training curves) and analysis."""
    cut = s.cut
    sall = per_model[per_model["regime"] == "S_all"]

    def curves(zoo: str) -> dict[str, np.ndarray] | None:
        if f"curve_accuracy_{zoo}" not in z:
            return None
        return {"accuracy": z[f"curve_accuracy_{zoo}"], "loss": z[f"curve_loss_{zoo}"]}

    if key == "fig4":
        logits = z[f"logits_{ENSEMBLE_ZOO}"]
        m = split_reference(len(logits), s.reference_fraction)
        return fg.fig_gap_histogram_and_curves(s.gaps(logits[m:]), curves(ENSEMBLE_ZOO), label)
    if key == "fig5":
        return fg.fig_ensemble_scatter(ens, "linf_to_reference", "L_inf(reference, ensemble)",
                                       label, hline=summary["fig5_delta_a"])
    if key in ("fig6", "fig15"):
        return fg.fig_ensemble_panels(ens, "churn_vs_full_ensemble", "churn w.r.t. ensemble",
                                      label)
    if key in ("fig7", "fig16"):
        return fg.fig_ensemble_panels(ens, "ece", "ECE", label)
    if key == "fig8":
        return fg.fig_ensemble_scatter(ens, "alpha_hat", "alpha-hat", label, hline=cut)
    if key == "fig9":
        return fg.fig_alpha_vs_accuracy(per_model, cut, label)
    if key == "fig10":
        return fg.fig_pairwise(pairs, label)
    if key in ("fig11", "fig14"):
        return fg.fig_alpha_vs_metrics(sall, cut, label)
    if key == "fig12":
        return fg.fig_3d(sall, label)
    if key == "fig13":
        return fg.fig_curves(curves("S_all"), label)
    raise KeyError(key)  # FIGURES and this dispatch are kept in sync by tests
