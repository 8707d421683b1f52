"""Our result tables beside the papers' numbers: docs/paper-vs-ours/<study>-mnist.md.

The papers' numbers are long csv files, one printed number a row (``study, dataset, paper_table,
paper_line, row, column, value, note``; docs/paper-vs-ours/extract_paper_tables.py writes them
from the papers' text). Our side is brought to the same ``(row, column, value)`` long form by a
per-study reader of the study's own tables (``results/<study>/tables``), then joined on
``(row, column)``: every paper number gets a line, with ours (blank when our run has no such
number) and the difference ours - paper. Nothing here computes a result; it only lines up two
tables. Usage, after a run::

    python -m labelfree.paper_compare laf --tables results/laf/tables \\
        --config config/paper/laf-mnist-reduced.yaml --wall "24 min" --peak-mem "1.9 GB" \\
        --why "20 local models instead of the paper's 30 GitHub models; ..."
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from labelfree.outputs import POOLED, output_name

PAPER_COLUMNS = ["study", "dataset", "paper_table", "paper_line", "row", "column", "value", "note"]
OURS_COLUMNS = ["row", "column", "value"]


def load_paper(path: str | Path) -> pd.DataFrame:
    """Read a ``<study>-mnist-paper.csv`` and check its columns."""
    df = pd.read_csv(path)
    missing = [c for c in PAPER_COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}; expected {PAPER_COLUMNS}")
    return df


def compare(ours: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Every paper number with ours beside it and ``difference = ours - paper``.

    ``ours`` has columns row, column, value; a (row, column) it lists twice is an error.
    """
    missing = [c for c in OURS_COLUMNS if c not in ours.columns]
    if missing:
        raise ValueError(f"our table lacks columns {missing}; expected {OURS_COLUMNS}")
    dup = ours.duplicated(["row", "column"])
    if dup.any():
        first = ours[dup].iloc[0]
        raise ValueError(f"our table lists ({first['row']!r}, {first['column']!r}) twice")
    mine = ours[OURS_COLUMNS].rename(columns={"value": "ours"})
    out = paper.rename(columns={"value": "paper"}).merge(mine, on=["row", "column"], how="left")
    out["ours"] = pd.to_numeric(out["ours"], errors="coerce")
    out["difference"] = out["ours"] - out["paper"]
    return out


def _fmt(v: float) -> str:
    return "" if pd.isna(v) else f"{v:.4g}"


def render(
    study: str, joined: pd.DataFrame, run: Mapping[str, str], why: str, title: str = ""
) -> str:
    """Markdown: run facts, the sentence on why the numbers differ, one table per paper table."""
    lines = [f"# {title or study}: our MNIST run beside the paper", ""]
    lines += ["| run | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in run.items()] + [""]
    lines += [f"**Why the numbers differ:** {why}", ""]
    matched = joined["ours"].notna()
    mad = joined.loc[matched, "difference"].abs().mean()
    lines += [
        f"{int(matched.sum())} of {len(joined)} paper numbers have a counterpart in our run"
        + (f"; mean absolute difference {mad:.3g}." if matched.any() else "."),
        "",
    ]
    for table, g in joined.groupby("paper_table", sort=False):
        notes = "; ".join(sorted(set(g["note"].dropna().astype(str))))
        lines += [f"## {table} ({', '.join(sorted(set(g['dataset'].astype(str))))})", ""]
        if notes:
            lines += [f"Paper: {notes}.", ""]
        lines += [
            "| row | column | ours | paper | difference | paper line |",
            "|---|---|---|---|---|---|",
        ]
        for r in g.itertuples(index=False):
            lines.append(
                f"| {r.row} | {r.column} | {_fmt(r.ours)} | {_fmt(r.paper)} | "
                f"{_fmt(r.difference)} | {r.paper_line} |"
            )
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# readers of our tables into (row, column, value)
# ---------------------------------------------------------------------------------------------

#: Our corruption names -> the row names of LaF Tables 3, 4, 6 and 7.
LAF_CORRUPTIONS = {
    "gaussian_noise": "Gaussian Noise", "shot_noise": "Shot Noise",
    "impulse_noise": "Impulse Noise", "defocus_blur": "Defocus Blur", "glass_blur": "Glass Blur",
    "zoom_blur": "Zoom Blur", "snow": "Snow", "fog": "Fog", "brightness": "Brightness",
    "contrast": "Contrast", "elastic_transform": "Elastic", "jpeg_compression": "JPEG",
    "pixelate": "Pixelate", "frost": "Frost", "motion_blur": "Motion Blur", "average": "Average",
}  # fmt: skip
#: Our method names -> the paper's column names (Tables 6/7: CES = the best guide; Table 5: Our).
LAF_METHODS = {"Random": "Random", "SDS": "SDS", "CES-best": "CES", "LaF": "LaF", "CRC": "CRC"}


def _ours_rows(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["source"] == "ours"] if "source" in df.columns else df


def _one_zoo(df: pd.DataFrame, what: str) -> pd.DataFrame:
    if "zoo" in df.columns and df["zoo"].nunique() > 1:
        raise ValueError(f"{what}: several zoos {sorted(df['zoo'].unique())}; expected one")
    return df


def ours_laf(tables: str | Path) -> pd.DataFrame:
    """LaF Tables 3/4 (ID + corruptions, LaF / CRC), 5 (top-k Jaccard), 6/7 (all methods)."""
    t = Path(tables)
    rows: list[dict] = []
    rq1_name = output_name("table3-4-id", POOLED)
    rq1 = _one_zoo(_ours_rows(pd.read_csv(t / f"{rq1_name}.csv")), rq1_name)
    for metric in ("spearman", "kendall"):
        for method in ("LaF", "CRC"):
            col = f"{metric} {method}"
            if col in rq1.columns and len(rq1):
                rows.append({"row": "ID", "column": col, "value": float(rq1[col].iloc[0])})
        path = t / f"{output_name('table6' if metric == 'spearman' else 'table7', POOLED)}.csv"
        if path.exists():
            df = _one_zoo(_ours_rows(pd.read_csv(path)), path.name)
            for r in df.to_dict("records"):
                name = LAF_CORRUPTIONS.get(str(r["corruption"]))
                for ours, paper in LAF_METHODS.items():
                    if name and ours in r and pd.notna(r[ours]):
                        rows.append({"row": name, "column": f"{metric} {paper}",
                                     "value": float(r[ours])})  # fmt: skip
    jac = t / f"{output_name('table5', POOLED)}.csv"
    if jac.exists():
        df = _one_zoo(_ours_rows(pd.read_csv(jac)), jac.name)
        for r in df.to_dict("records"):
            for ours, paper in {**LAF_METHODS, "LaF": "Our"}.items():
                if ours in r and pd.notna(r[ours]):
                    rows.append({"row": f"jaccard k={int(r['k'])}", "column": paper,
                                 "value": float(r[ours])})  # fmt: skip
    return pd.DataFrame(rows, columns=OURS_COLUMNS)


#: Paper subject ids (PACE Table 1) -> our subjects ({model}@{test set}, config pace-mnist*).
PACE_SUBJECTS = {
    "1": "lenet1@id", "2": "lenet4@id", "3": "lenet5@id", "4": "lenet5_m1@id",
    "5": "lenet5_m2@id", "6": "lenet5_m3@id", "18": "lenet5@pace_bim",
}  # fmt: skip
PACE_MODELS = {"1": "LeNet-1", "2": "LeNet-4", "3": "LeNet-5", "4": "LeNet-5-M1",
               "5": "LeNet-5-M2", "6": "LeNet-5-M3", "18": "LeNet-5"}  # fmt: skip


def ours_pace(
    tables: str | Path, zoo: str, subjects: Mapping[str, str] = PACE_SUBJECTS
) -> pd.DataFrame:
    """PACE Tables 2-3 (MSE % per subject, approach, budget) and Table 1 accuracies of the run
    on pace zoo ``zoo`` (the scope of its table names, docs/outputs.md)."""
    t = Path(tables)
    by_name = {v: k for k, v in subjects.items()}
    rows: list[dict] = []
    per = pd.read_csv(t / f"{output_name('table2-3', zoo)}.csv")
    budgets = [c for c in per.columns if re.fullmatch(r"n=\d+", str(c))]
    for r in per.to_dict("records"):
        sid = by_name.get(str(r["subject"]))
        if sid is None:
            continue
        for b in budgets:
            if pd.notna(r[b]):
                rows.append({"row": f"{sid} {r['approach']}", "column": f"mse {b}",
                             "value": float(r[b])})  # fmt: skip
    meta = t / f"{output_name('table1', zoo)}.csv"
    if meta.exists():
        for r in pd.read_csv(meta).to_dict("records"):
            sid = by_name.get(str(r.get("name")))
            if sid is not None:
                rows.append({"row": f"{sid} {PACE_MODELS[sid]}", "column": "accuracy %",
                             "value": 100.0 * float(r["accuracy"])})  # fmt: skip
    return pd.DataFrame(rows, columns=OURS_COLUMNS)


def _pm(text: str) -> tuple[float, float]:
    m = re.fullmatch(r"\s*(-?[\d.]+(?:e-?\d+)?)\s*±\s*([\d.]+(?:e-?\d+)?)\s*", str(text))
    if not m:
        raise ValueError(f"not a 'mean ± std' cell: {text!r}")
    return float(m.group(1)), float(m.group(2))


def _interval(text: str) -> tuple[float, float]:
    nums = re.findall(r"-?[\d.]+(?:e-?\d+)?", str(text))
    if len(nums) != 2:
        raise ValueError(f"not a '[min, max]' cell: {text!r}")
    return float(nums[0]), float(nums[1])


def ours_alphatrim(tables: str | Path, experiment: str) -> pd.DataFrame:
    """Alpha-trimming Tables I (ensembles) and II (seed regimes) of one experiment.

    Accuracies are put on the paper's percent scale when our table gives fractions (all
    accuracy means <= 1).
    """
    t = Path(tables)
    rows: list[dict] = []
    t1 = pd.read_csv(t / f"{output_name('table1', experiment)}.csv")
    share = next(c for c in t1.columns if c.startswith("% alpha_hat <="))
    accs = [_pm(v)[0] for v in t1["accuracy mean ± std"]]
    scale = 100.0 if accs and max(accs) <= 1.0 else 1.0
    for r in t1.to_dict("records"):
        row = f"M_ens={int(r['M_ens'])}"
        acc, churn, ece = (_pm(r[c]) for c in ("accuracy mean ± std",
                           "churn w.r.t. ensemble mean ± std", "ECE mean ± std"))  # fmt: skip
        vals = {"% alpha<=0.05": r[share], "accuracy mean": acc[0] * scale,
                "accuracy std": acc[1] * scale, "churn mean": churn[0], "churn std": churn[1],
                "ece mean": ece[0], "ece std": ece[1]}  # fmt: skip
        rows += [{"row": row, "column": k, "value": float(v)} for k, v in vals.items()]
    t2 = pd.read_csv(t / f"{output_name('table2', experiment)}.csv")
    low = next(c for c in t2.columns if c.startswith("accuracy range of runs with"))
    accs = [_pm(v)[0] for v in t2["accuracy mean ± std"]]
    scale = 100.0 if accs and max(accs) <= 1.0 else 1.0
    for r in t2.to_dict("records"):
        row = str(r["source"])
        row = row if row.startswith("S_") else f"S_{row}"
        m, s = _pm(r["accuracy mean ± std"])
        lo, hi = _interval(r["accuracy range"])
        alo, ahi = _interval(r[low]) if pd.notna(r[low]) else (np.nan, np.nan)
        vals = {"accuracy mean": m, "accuracy std": s, "range min": lo, "range max": hi,
                "ensemble accuracy": float(r["ensemble accuracy"]),
                "alpha<=0.05 range min": alo, "alpha<=0.05 range max": ahi}  # fmt: skip
        rows += [{"row": row, "column": k, "value": float(v) * scale} for k, v in vals.items()]
    return pd.DataFrame(rows, columns=OURS_COLUMNS)


READERS: dict[str, Callable[..., pd.DataFrame]] = {
    "laf": ours_laf,
    "pace": ours_pace,
    "alphatrim": ours_alphatrim,
}


def run_facts(
    config: str, wall: str, peak_mem: str, commit: str = "", machine: str = ""
) -> dict[str, str]:
    """The run's facts for the header (commit and machine looked up when not given)."""
    if not commit:
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True, check=True).stdout.strip()  # fmt: skip
        except (OSError, subprocess.CalledProcessError):
            commit = "unknown"
    if not machine:
        machine = f"{platform.machine()}, {os.cpu_count()} CPUs, {platform.platform()}"
    return {"config": f"`{config}`", "commit": commit, "machine": machine,
            "wall time": wall, "peak memory": peak_mem}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("study", choices=sorted(READERS))
    ap.add_argument("--tables", required=True, help="results/<study>/tables of the run")
    ap.add_argument("--experiment", default="mnist_even_odd", help="alphatrim experiment name")
    ap.add_argument("--zoo", default="pace_mnist", help="pace zoo of the run (pace.zoo)")
    ap.add_argument(
        "--paper", default="", help="default docs/paper-vs-ours/<study>-mnist-paper.csv"
    )
    ap.add_argument("--out", default="", help="default docs/paper-vs-ours/<study>-mnist.md")
    ap.add_argument("--config", required=True)
    ap.add_argument("--wall", required=True, help="wall time of the run, as measured")
    ap.add_argument("--peak-mem", required=True, help="peak memory of the run, as measured")
    ap.add_argument("--commit", default="")
    ap.add_argument("--machine", default="")
    ap.add_argument("--why", required=True, help="one sentence: why ours differs from the paper")
    a = ap.parse_args(argv)
    docs = Path("docs/paper-vs-ours")
    paper = load_paper(a.paper or docs / f"{a.study}-mnist-paper.csv")
    reader = READERS[a.study]
    scope = {"alphatrim": (a.experiment,), "pace": (a.zoo,)}.get(a.study, ())
    ours = reader(a.tables, *scope)
    joined = compare(ours, paper)
    out = Path(a.out or docs / f"{a.study}-mnist.md")
    facts = run_facts(a.config, a.wall, a.peak_mem, a.commit, a.machine)
    out.write_text(render(a.study, joined, facts, a.why))
    joined.to_csv(out.with_suffix(".csv"), index=False, float_format="%.6g")
    print(f"wrote {out} and {out.with_suffix('.csv')}: {int(joined['ours'].notna().sum())} "
          f"of {len(joined)} paper numbers matched")  # fmt: skip


if __name__ == "__main__":
    main()
