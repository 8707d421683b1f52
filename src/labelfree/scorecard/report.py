"""Tables (csv + markdown) and one figure of a zoo's scorecard (docs/methods.md)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from labelfree.scorecard.core import BASELINES, ONE_MODEL, Scorecard  # noqa: E402

TABLES = ("estimation", "ranking", "fewlabel")


def pivot(card: Scorecard, table: str, value: str) -> pd.DataFrame:
    """Method x shift kind table of one metric (few-label: method, budget x shift)."""
    df = card.summary[table]
    df = df[df["shift"] != "all"]  # methods not applicable: no value to tabulate
    if df.empty:
        return df
    index = ["method", "budget"] if table == "fewlabel" else ["method"]
    return df.pivot_table(index=index, columns="shift", values=value, aggfunc="first")


def markdown(card: Scorecard, zoo: str = "zoo") -> str:
    """The scorecard as markdown: MAE, Spearman/regret and few-label regret per shift kind."""
    parts = [f"# Scorecard: {zoo}", ""]
    if card.unscored:
        return "\n".join(parts + [f"Not scored: {card.unscored}", ""])
    panels = [("estimation", "mae", "Label-free accuracy estimation: MAE vs true accuracy"),
            ("ranking", "spearman", "Label-free ranking: Spearman rho vs true accuracy"),
            ("ranking", "kendall", "Label-free ranking: Kendall tau-b"),
            ("ranking", "regret", "Label-free ranking: top-1 regret (accuracy lost)"),
            ("fewlabel", "regret", "Few-label: top-1 regret vs label budget"),
            ("fewlabel", "mae", "Few-label: accuracy MAE vs label budget (estimators)")]
    for table, value, title in panels:
        t = pivot(card, table, value)
        if t.empty or t.isna().all().all():
            continue
        parts += [f"## {title}", "", t.round(4).to_markdown(), ""]
    if len(card.failures):
        parts += ["## Failures", "", card.failures.to_markdown(index=False), ""]
    if len(card.not_applicable):
        parts += ["## Not applicable", "", card.not_applicable.to_markdown(index=False), ""]
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


def figure(card: Scorecard, path: str | Path, zoo: str = "zoo",
           also: Sequence[str | Path] = ()) -> Path:
    """Three panels: estimation MAE per shift kind, ranking Spearman per shift kind, few-label
    top-1 regret vs budget (overall, mean over runs with standard errors); for a zoo of one
    model, whose regret is not applicable, the few-label methods' accuracy MAE vs budget.
    Saved to ``path`` and to each of ``also`` (e.g. a pdf beside the png: the figure is drawn
    once, each format written from it)."""
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
    f = f[f["shift"] == "overall"]
    a = ax[2]
    selects = f["regret"].notna().any()
    value = "regret" if selects else "mae"
    o = f[f[value].notna()]
    if len(o):
        for m, g in o.groupby("method"):
            a.errorbar(g["budget"].astype(int), g[value],
                       yerr=g["regret_se"] if selects else None, marker="o", label=m, capsize=2)
        lf = card.summary["ranking"]
        best = lf[lf["shift"] == "overall"].nsmallest(1, "regret") if selects else lf.iloc[:0]
        if len(best):
            a.axhline(float(best["regret"].iloc[0]), ls="--", c="k", lw=0.8,
                      label=f"best label-free ({best['method'].iloc[0]})")
        a.set_xscale("log")
        bud = sorted({int(b) for b in o["budget"]})
        a.set_xticks(bud, [str(b) for b in bud])
        a.minorticks_off()
        a.set_xlabel("labels (budget)")
        a.set_ylabel("top-1 regret" if selects else "accuracy MAE")
        a.set_title(f"{zoo}: few-label model selection" if selects else
                    f"{zoo}: few-label estimation (selection {ONE_MODEL})")
        a.legend(fontsize=7)
    else:
        a.set_axis_off()
    if card.unscored:
        fig.suptitle(textwrap.fill(f"{zoo}: not scored: {card.unscored}", 120), fontsize=10)
    fig.tight_layout()
    for p in (path, *also):
        fig.savefig(p, dpi=110)
    plt.close(fig)
    return Path(path)


BEST_COLUMNS = ["shift", "estimator", "mae", "ranker", "spearman", "note"]


def best_per_kind(card: Scorecard) -> pd.DataFrame:
    """Which method when: per shift kind, the lowest-MAE estimator and the highest-Spearman
    ranker; on a zoo of one model the ranker is :data:`~labelfree.scorecard.core.ONE_MODEL`
    (and ``note`` says so); a zoo that is not scored is one row, shift ``all``, its reason as
    note."""
    if card.unscored:
        return pd.DataFrame([dict(shift="all", estimator="", mae=np.nan, ranker="",
                                  spearman=np.nan, note=card.unscored)], columns=BEST_COLUMNS)
    one = card.truth["model"].nunique() == 1
    rows = []
    e, r = card.summary["estimation"], card.summary["ranking"]
    e, r = e[~e["method"].isin(BASELINES)], r[~r["method"].isin(BASELINES)]  # methods only
    for kind in sorted((set(e["shift"]) | set(r["shift"])) - {"all"}):
        ek = e[(e["shift"] == kind) & np.isfinite(e["mae"].astype(float))]
        rk = r[(r["shift"] == kind) & np.isfinite(r["spearman"].astype(float))]
        ranker = rk.nlargest(1, "spearman")["method"].iloc[0] if len(rk) else ""
        rows.append(dict(
            shift=kind,
            estimator=ek.nsmallest(1, "mae")["method"].iloc[0] if len(ek) else "",
            mae=float(ek["mae"].min()) if len(ek) else np.nan,
            ranker=ONE_MODEL if one else ranker,
            spearman=float(rk["spearman"].max()) if len(rk) else np.nan,
            note=f"ranking and model selection {ONE_MODEL}" if one else ""))
    return pd.DataFrame(rows, columns=BEST_COLUMNS)


COVERAGE_COLUMNS = ["zoo", "models", "scored_testsets", "scorecard", "reason"]


def coverage(rows: Sequence[Mapping[str, object]],
             best: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """extra-all-zoos: the parse-time rows (labelfree.scorecard.plan.scorecard_coverage) with the
    reason a scorecard job found when it read the labels: a zoo whose ``best`` table
    (:func:`best_per_kind`) names no estimator and carries a note, e.g. multi-label labels only
    (labelfree.scorecard.core.unscored), is ``no`` with that note and no scored test set."""
    table = pd.DataFrame(list(rows), columns=COVERAGE_COLUMNS)
    for i, z in enumerate(table["zoo"]):
        b = best.get(z)
        if b is None or not len(b):
            continue
        named = b["estimator"].fillna("").astype(str).str.len() > 0
        notes = [str(n) for n in b.get("note", pd.Series(dtype=str)).dropna() if str(n)]
        if not named.any() and notes:
            table.loc[i, ["scored_testsets", "scorecard", "reason"]] = [0, "no", notes[0]]
    return table
