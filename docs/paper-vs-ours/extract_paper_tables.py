"""Extract the papers' MNIST numbers (../shared/papers/*.txt) into docs/paper-vs-ours/*-mnist-paper.csv.

Each csv row is one printed number: study, dataset, paper_table, paper_line (line of the number's
row in the text copy; the copies carry no page breaks, so no page number can be given), row,
column, value, note. Parsed from the text, not typed in, so rerunning reproduces the files:

    python docs/paper-vs-ours/extract_paper_tables.py ../shared/papers docs/paper-vs-ours
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

FIELDS = ["study", "dataset", "paper_table", "paper_line", "row", "column", "value", "note"]


def _find(lines: list[str], prefix: str, start: int = 0) -> int:
    for i in range(start, len(lines)):
        if lines[i].startswith(prefix):
            return i
    raise ValueError(f"no line starting with {prefix!r}")


def _rows_after(lines: list[str], title: str, n: int) -> list[tuple[int, list[str]]]:
    """(1-based line, tab-split cells) of the first n numeric rows after the title ``title``."""
    i = _find(lines, title) + 1
    out = []
    while len(out) < n:
        cells = lines[i].split("\t")
        if len(cells) > 2 and re.fullmatch(r"-?\d+\.\d+", cells[1].strip()):
            out.append((i + 1, cells))
        i += 1
    return out


def laf(lines: list[str]) -> list[dict]:
    rows: list[dict] = []
    for title, metric in [("Table 3.", "spearman"), ("Table 4.", "kendall")]:
        # header lines: "Data Type MNIST ..." and "LaF CRC ..."; then ID + 15 corruptions
        for line, cells in _rows_after(lines, title, 16):
            for col, method in [(1, "LaF"), (2, "CRC")]:
                rows.append(dict(dataset="MNIST", paper_table=title.rstrip("."),
                                 paper_line=line, row=cells[0].strip(),
                                 column=f"{metric} {method}", value=float(cells[col]),
                                 note="ID = clean test set; other rows = MNIST-C corruption, "
                                      "averaged over severities"))  # fmt: skip
    for title, metric in [("Table 6.", "spearman"), ("Table 7.", "kendall")]:
        for line, cells in _rows_after(lines, title, 16):
            name = re.sub(r"</?b>", "", cells[0]).strip()
            for col, method in enumerate(["Random", "SDS", "CES", "LaF"], start=1):
                rows.append(dict(dataset="MNIST-C", paper_table=title.rstrip("."),
                                 paper_line=line, row=name, column=f"{metric} {method}",
                                 value=float(cells[col]),
                                 note="baselines: mean over budgets and 50 repetitions"))  # fmt: skip
    i = _find(lines, "Table 5.")
    k = ""
    for j in range(i + 3, i + 20):
        cells = lines[j].split("\t")
        if len(cells) < 3:
            continue
        k = cells[0].strip() or k
        rows.append(dict(dataset="MNIST", paper_table="Table 5", paper_line=j + 1,
                         row=f"jaccard {k.replace(' ', '')}", column=cells[1].strip(),
                         value=float(cells[2]),
                         note="Jaccard of the top-k models, clean accuracy; 'Our' = LaF"))  # fmt: skip
    return rows


def pace(lines: list[str]) -> list[dict]:
    rows: list[dict] = []
    t1 = _find(lines, "Table 1. DNN Models")
    for j in range(t1 + 1, t1 + 30):
        cells = lines[j].split("\t")
        if cells[0].strip() in {"1", "2", "3", "4", "5", "6", "18"}:
            rows.append(dict(dataset="MNIST" if cells[0].strip() != "18" else "Autogen-MNIST",
                             paper_table="Table 1", paper_line=j + 1,
                             row=f"{cells[0].strip()} {cells[2].strip()}", column="accuracy %",
                             value=float(cells[5]), note="subject accuracy on its test set"))  # fmt: skip
    budgets = list(range(50, 190, 10))
    for title, ids in [
        ("Table 2.", {"1", "2", "3", "4", "5", "6"}),
        ("Table 3. Effectiveness", {"18"}),
    ]:
        i = _find(lines, title)
        subject = ""
        for j in range(i + 4, i + 60):
            cells = lines[j].split("\t")
            if len(cells) < 16:
                continue
            subject = cells[0].strip() or subject
            if subject not in ids:
                continue
            approach = cells[1].strip()
            for b, v in zip(budgets, cells[2:16], strict=True):
                rows.append(dict(dataset="MNIST" if subject != "18" else "Autogen-MNIST",
                                 paper_table=title.split(" Eff")[0].rstrip("."),
                                 paper_line=j + 1, row=f"{subject} {approach}",
                                 column=f"mse n={b}", value=float(v),
                                 note="MSE (%) of the accuracy estimate; random approaches "
                                      "averaged over 50 repetitions"))  # fmt: skip
    return rows


_NUM = r"-?\d+(?:\.\d+)?"


def _first_numbers(text: str) -> list[float]:
    """Numbers of a LaTeX-garbled row: each value is printed once before its markup copies."""
    text = re.sub(r"(\S+)plus-or-minus(\S+)", r"\1 ", text)  # drop the markup duplicate
    return [float(x) for x in re.findall(_NUM, text)]


def alphatrim(lines: list[str]) -> list[dict]:
    """The paper has no MNIST experiment: its CIFAR-10 CNN tables, the structure we reproduce."""
    rows: list[dict] = []
    note = "paper: binary CIFAR-10 CNN (no MNIST experiment in the paper)"
    i = _find(lines, "TABLE I:")
    cols = ["% alpha<=0.05", "accuracy mean", "accuracy std", "churn mean", "churn std",
            "ece mean", "ece std"]  # fmt: skip
    for j in range(i + 3, i + 12):
        m = re.match(r"^(\d+) (\d+\.\d+) (.*)$", lines[j])
        if not m:
            raise ValueError(f"Table I line {j + 1} not understood: {lines[j][:60]}")
        pm = re.findall(rf"({_NUM})±({_NUM})", m.group(3))[:3]
        vals = [float(m.group(2))] + [float(x) for pair in pm for x in pair]
        for c, v in zip(cols, vals, strict=True):
            rows.append(dict(dataset="CIFAR-10 (binary)", paper_table="Table I",
                             paper_line=j + 1, row=f"M_ens={m.group(1)}", column=c, value=v,
                             note=note))  # fmt: skip
    i = _find(lines, "TABLE II:")
    for j in range(i + 3, i + 6):
        src = re.search(r"\\mathrm\{(\w+)\}", lines[j]).group(1)
        pm = re.search(rf"({_NUM})±({_NUM})", lines[j])
        tail = lines[j].split(" ", 1)[1]
        tail = tail[tail.index("[") :]
        nums = [float(x) for x in re.findall(_NUM, tail)]
        vals = dict(zip(["accuracy mean", "accuracy std"], map(float, pm.groups()), strict=True))
        vals.update(zip(["range min", "range max", "ensemble accuracy",
                         "alpha<=0.05 range min", "alpha<=0.05 range max"], nums, strict=True))  # fmt: skip
        for c, v in vals.items():
            rows.append(dict(dataset="CIFAR-10 (binary)", paper_table="Table II",
                             paper_line=j + 1, row=f"S_{src}", column=c, value=v, note=note))  # fmt: skip
    return rows


def main(papers: str, out: str) -> None:
    p, o = Path(papers), Path(out)
    jobs = {
        "laf": ("laf-labeling-free-model-selection.txt", laf),
        "pace": ("pace-practical-accuracy-estimation.txt", pace),
        "alphatrim": ("alpha-trimming-training-variability.txt", alphatrim),
    }
    for study, (fname, fn) in jobs.items():
        lines = (p / fname).read_text().splitlines()
        rows = fn(lines)
        with open(o / f"{study}-mnist-paper.csv", "w", newline="") as fh:
            wr = csv.DictWriter(fh, FIELDS)
            wr.writeheader()
            for r in rows:
                wr.writerow({"study": study, **r})
        print(f"{study}: {len(rows)} numbers from {fname}")


if __name__ == "__main__":
    main(*(sys.argv[1:3] if len(sys.argv) > 2 else ("../shared/papers", "docs/paper-vs-ours")))
