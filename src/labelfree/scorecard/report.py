"""Tables (csv + markdown) and one figure of a zoo's scorecard (issue 18 item 4)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .core import Scorecard

TABLES = ("estimation", "ranking", "fewlabel")


def pivot(card: Scorecard, table: str, value: str) -> pd.DataFrame:
    """Method x shift kind table of one metric (few-label: method, budget x shift)."""
    df = card.summary[table]
    if df.empty:
        return df
    index = ["method", "budget"] if table == "fewlabel" else ["method"]
    return df.pivot_table(index=index, columns="shift", values=value, aggfunc="first")


def markdown(card: Scorecard, zoo: str = "zoo") -> str:
    """The scorecard as markdown: MAE, Spearman/regret and few-label regret per shift kind."""
    parts = [f"# Scorecard: {zoo}", ""]
    spec = [("estimation", "mae", "Label-free accuracy estimation: MAE vs true accuracy"),
            ("ranking", "spearman", "Label-free ranking: Spearman rho vs true accuracy"),
            ("ranking", "kendall", "Label-free ranking: Kendall tau-b"),
            ("ranking", "regret", "Label-free ranking: top-1 regret (accuracy lost)"),
            ("fewlabel", "regret", "Few-label: top-1 regret vs label budget"),
            ("fewlabel", "mae", "Few-label: accuracy MAE vs label budget (estimators)")]
    for table, value, title in spec:
        t = pivot(card, table, value)
        if t.empty or t.isna().all().all():
            continue
        parts += [f"## {title}", "", t.round(4).to_markdown(), ""]
    if len(card.failures):
        parts += ["## Failures", "", card.failures.to_markdown(index=False), ""]
    return "\n".join(parts)


def write(card: Scorecard, outdir: str | Path, zoo: str = "zoo") -> list[Path]:
    """Write summary csvs, long csvs, ``scorecard.md`` and ``scorecard.png`` under ``outdir``."""
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in TABLES:
        p = out / f"{name}.csv"
        card.summary[name].to_csv(p, index=False)
        paths.append(p)
    for name in ("truth", "estimates", "ranking", "fewlabel", "failures", "timings"):
        p = out / f"long_{name}.csv"
        getattr(card, name).to_csv(p, index=False)
        paths.append(p)
    md = out / "scorecard.md"
    md.write_text(markdown(card, zoo))
    paths += [md, figure(card, out / "scorecard.png", zoo)]
    return paths


def figure(card: Scorecard, path: str | Path, zoo: str = "zoo") -> Path:
    """Three panels: estimation MAE per shift kind, ranking Spearman per shift kind, few-label
    top-1 regret vs budget (overall, mean over runs with standard errors)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(16, 5))
    for a, (table, value, title) in zip(
        ax[:2], [("estimation", "mae", "estimation MAE"), ("ranking", "spearman", "ranking Spearman")],
        strict=True,
    ):
        t = pivot(card, table, value)
        if t.empty:
            a.set_axis_off()
            continue
        cols = [c for c in t.columns if c not in ("macro", "source (sanity)")]
        data = t[cols].astype(float).dropna(how="all")
        if data.empty or data.isna().all().all():  # e.g. a one-model zoo: nothing to rank
            a.set_axis_off()
            a.set_title(f"{zoo}: {title}: no defined values")
            continue
        data.plot.barh(ax=a, width=0.8, legend=True)
        a.set_title(f"{zoo}: {title}")
        a.legend(fontsize=7)
    f = card.summary["fewlabel"]
    a = ax[2]
    if len(f):
        o = f[f["shift"] == "overall"]
        for m, g in o.groupby("method"):
            a.errorbar(g["budget"], g["regret"], yerr=g["regret_se"], marker="o", label=m,
                       capsize=2)
        lf = card.summary["ranking"]
        best = lf[lf["shift"] == "overall"].nsmallest(1, "regret")
        if len(best):
            a.axhline(float(best["regret"].iloc[0]), ls="--", c="k", lw=0.8,
                      label=f"best label-free ({best['method'].iloc[0]})")
        a.set_xscale("log")
        bud = sorted(set(o["budget"]))
        a.set_xticks(bud, [str(b) for b in bud])
        a.minorticks_off()
        a.set_xlabel("labels (budget)")
        a.set_ylabel("top-1 regret")
        a.set_title(f"{zoo}: few-label model selection")
        a.legend(fontsize=7)
    else:
        a.set_axis_off()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def best_per_kind(card: Scorecard) -> pd.DataFrame:
    """Which method when: per shift kind, the lowest-MAE estimator and the highest-Spearman ranker."""
    rows = []
    e, r = card.summary["estimation"], card.summary["ranking"]
    for kind in sorted(set(e["shift"]) | set(r["shift"])):
        ek = e[(e["shift"] == kind) & np.isfinite(e["mae"])]
        rk = r[(r["shift"] == kind) & np.isfinite(r["spearman"])]
        rows.append(dict(
            shift=kind,
            estimator=ek.nsmallest(1, "mae")["method"].iloc[0] if len(ek) else "",
            mae=float(ek["mae"].min()) if len(ek) else np.nan,
            ranker=rk.nlargest(1, "spearman")["method"].iloc[0] if len(rk) else "",
            spearman=float(rk["spearman"].max()) if len(rk) else np.nan))
    return pd.DataFrame(rows)
