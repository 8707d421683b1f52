"""Each study's claims table: the paper's headline claims, our value, the verdict and its cause.

A study's report module declares its paper's headline claims in ``CLAIMS`` (one dict per
claim) and the checks that are no paper claim in ``NOT_CLAIMS``; this module matches the rows of
the study's checks table(s) to them, computes each claim's verdict from its rows' ``holds``, and
writes the markdown table into ``docs/<study>.md`` between ``<!-- claims:begin -->`` and
``<!-- claims:end -->``. A claim entry holds:

- ``id``: short and stable (``RQ2``, ``T3``); ``claim``: the paper's statement and where it is
  (section, table, figure);
- ``checks``: :func:`fnmatch.fnmatch` patterns over a row's key (its ``check``; ``check: what``
  where the table has a ``what`` column, as metamorphic's does), or none;
- ``untestable``: why the claim cannot be tested here (then ``checks`` is empty);
- ``cause``: for a claim that does not hold, the experiment or reading that shows why (a doc
  section that gives the experiment and its results); shown only when the verdict, on the run
  or on the real-data run, is a failure, so a claim that comes to hold loses it by itself. A
  failure without a cause says "not investigated";
- ``real``: evidence on real data stated by hand (what the real-data checks table, when the
  study has one, cannot say), with its doc.

Every row of a checks table must match a claim or a ``NOT_CLAIMS`` pattern, or :func:`match`
raises: a new check cannot be left out of the claims table. Verdicts: ``holds`` when every row
holds; ``does not hold`` when a row fails (with ``k of n rows hold`` when some do); ``cannot be
tested here`` when the run has no row for it (with the reason) or every row is ``no data``.
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from labelfree.store import read_table

BEGIN, END = "<!-- claims:begin -->", "<!-- claims:end -->"
REAL_HEAD = "real data"
STUDIES = ("laf", "pace", "syp", "alphatrim", "metamorphic")
TRUE = ("true", "1", "yes", "1.0")
NO_DATA = ("no data", "nan", "")

#: Each study's checks tables inside a result tree (glob patterns under ``results/<study>/``).
TABLES = {
    "laf": "tables/extra-all-checks.csv",
    "pace": "tables/extra-*-checks.csv",
    "syp": "tables/extra-*-checks.csv",
    "alphatrim": "tables/extra-*-checks.csv",
    "metamorphic": "tables/extra-all-checks.csv",
}

#: Committed real-data runs whose checks tables give each claim a real-data verdict:
#: (checks table, what the run was, its doc).
REAL = {
    "laf": ("docs/paper-vs-ours/laf-mnist-converged/extra-all-checks.csv",
            "real MNIST, the LaF authors' 30 MNIST networks trained to convergence (on a GPU), "
            "`config/paper/laf-mnist-converged.yaml`",
            "docs/paper-vs-ours/laf-mnist-converged.md"),
    "pace": ("docs/paper-vs-ours/pace-mnist/pace_checks.csv",
             "real MNIST, our 14 subjects, `config/paper/pace-mnist-reduced.yaml`",
             "docs/paper-vs-ours/pace-mnist.md"),
    "alphatrim": ("docs/paper-vs-ours/alphatrim-mnist/mnist_even_odd-checks.csv",
                  "real MNIST even/odd (the paper has no MNIST run; its setting is binary "
                  "CIFAR-10), `config/paper/alphatrim-mnist-reduced.yaml`",
                  "docs/paper-vs-ours/alphatrim-mnist.md"),
}


@dataclass(frozen=True)
class Verdict:
    """One claim's verdict over its rows: ``verdict`` text, ``ours`` (the rows' values), the
    number of rows that hold / fail / have no data."""

    verdict: str
    ours: str
    n_hold: int
    n_fail: int
    n_nodata: int

    @property
    def fails(self) -> bool:
        return self.verdict.startswith("does not hold")


def _state(v: object) -> str:
    s = str(v).strip().lower()
    return "hold" if s in TRUE else "nodata" if s in NO_DATA else "fail"


def _fmt(v: object) -> str:
    """4 significant digits for numbers (also when read back as text), text as is."""
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            return v
    if isinstance(v, float):
        return "nan" if pd.isna(v) else f"{v:.4g}"
    return str(v)


def keys(table: pd.DataFrame) -> pd.Series:
    """A row's key for the claims' patterns: ``check``, or ``check: what`` with a ``what``."""
    check = table["check"].astype(str).str.strip()
    if "what" in table.columns:
        return check + ": " + table["what"].astype(str).str.strip()
    return check


def _labels(table: pd.DataFrame) -> pd.Series:
    """What tells a check's repeated rows apart: the table's label (several tables), then its
    ``model`` or ``scope`` column."""
    parts = [table[c].astype(str) for c in ("table", "model", "scope") if c in table.columns]
    if not parts:
        return pd.Series([""] * len(table), index=table.index)
    out = parts[0]
    for p in parts[1:]:
        out = out + " " + p
    return out.str.strip()


def _short_keys(k: pd.Series, width: int = 48) -> pd.Series | None:
    """Names for a claim's rows when they come from several checks: each key without the words
    all keys share at the start, cut at ``width`` characters; None for a single check."""
    distinct = list(dict.fromkeys(k))
    if len(distinct) < 2:
        return None
    words = [d.split(" ") for d in distinct]
    n = 0
    while all(len(w) > n + 1 and w[n] == words[0][n] for w in words):
        n += 1

    def short(key: str) -> str:
        rest = " ".join(key.split(" ")[n:])
        return rest if len(rest) <= width else rest[: width - 1].rsplit(" ", 1)[0] + "…"

    return k.map(short) + ":"


def match(table: pd.DataFrame, claims: Sequence[Mapping], not_claims: Mapping[str, str],
          where: str = "checks table", strict: bool = True) -> pd.Series:
    """The claim id of every row of ``table`` (the first claim whose pattern matches its key;
    ``""`` for a row that is no paper claim). With ``strict``, a row that matches nothing raises
    ``ValueError`` naming it, so a new check cannot be left out of the claims table."""
    ids = []
    for key in keys(table):
        hit = next((c["id"] for c in claims
                    if any(fnmatch.fnmatchcase(key, p) for p in c.get("checks", ()))), None)
        if hit is None and any(fnmatch.fnmatchcase(key, p) for p in not_claims):
            hit = ""
        if hit is None:
            if strict:
                raise ValueError(f"{where}: check {key!r} matches no claim and no NOT_CLAIMS "
                                 "pattern; add it to the study report module's CLAIMS")
            hit = ""
        ids.append(hit)
    return pd.Series(ids, index=table.index, dtype=object)


def verdict(rows: pd.DataFrame, untestable: str | None = None) -> Verdict:
    """The verdict of one claim over its matched rows (columns ``value``, ``holds`` and
    optionally a label column)."""
    if rows.empty:
        why = untestable or "this run has no row for it"
        return Verdict(f"cannot be tested here: {why}", "", 0, 0, 0)
    states = [_state(v) for v in rows["holds"]]
    n_hold, n_fail, n_nodata = (states.count(s) for s in ("hold", "fail", "nodata"))
    labels = _labels(rows)
    names = _short_keys(keys(rows))
    labels = (labels + " " + names).str.strip() if names is not None else labels
    marks = {"hold": "", "fail": " (fails)", "nodata": " (no data)"}
    vals = [f"{lab + ' ' if lab else ''}{_fmt(v)}{marks[s] if len(rows) > 1 else ''}"
            for lab, v, s in zip(labels, rows["value"], states, strict=True)]
    ours = "; ".join(vals)
    if n_fail:
        text = "does not hold" + (f" ({n_hold} of {len(rows)} rows hold)" if n_hold else "")
    elif n_hold:
        text = "holds" + (f" ({n_nodata} of {len(rows)} rows without data)" if n_nodata else "")
    else:
        text = "cannot be tested here: no data in this run"
    return Verdict(text, ours, n_hold, n_fail, n_nodata)


def read_checks(paths: Mapping[str, str | Path]) -> pd.DataFrame:
    """Several checks tables as one, with a ``table`` label column when there is more than one
    (label -> path)."""
    frames = []
    for label, path in paths.items():
        df = read_table(path)
        if len(paths) > 1:
            df = df.assign(table=label)
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def tree_tables(study: str, tree: str | Path) -> dict[str, Path]:
    """A result tree's checks tables of ``study``, labelled by their scope
    (``extra-<scope>-checks.csv``)."""
    found = sorted((Path(tree) / "results" / study).glob(TABLES[study]))
    if not found:
        raise FileNotFoundError(f"{tree}: no {study} checks table (results/{study}/{TABLES[study]})")
    return {p.name.removeprefix("extra-").removesuffix("-checks.csv"): p for p in found}


def _cell(s: object) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def render(claims: Sequence[Mapping], not_claims: Mapping[str, str], table: pd.DataFrame,
           provenance: str, real: pd.DataFrame | None = None, real_what: str = "",
           real_doc: str = "") -> str:
    """The claims block (markers included): one row per claim, then the checks that are no
    paper claim and why."""
    ids = match(table, claims, not_claims)
    real_ids = match(real, claims, not_claims, strict=False) if real is not None else None
    head = ["claim", "paper", "checks", "ours", "verdict"]
    if real is not None or any(c.get("real") for c in claims):
        head.append(REAL_HEAD)
    head.append("cause of the failure")
    lines = [BEGIN, provenance, ""]
    if real is not None:
        lines += [f"Real data: {real_what} ({real_doc}; its checks table, matched to the "
                  "claims as the run's are).", ""]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in claims:
        checks = ", ".join(f"`{p}`" for p in c.get("checks", ())) or "none"
        v = verdict(table[ids == c["id"]], c.get("untestable"))
        cells = [f"**{c['id']}**", c["claim"], checks, v.ours or "—", v.verdict]
        fails = v.fails
        if REAL_HEAD in head:
            parts = []
            rows = real[real_ids == c["id"]] if real_ids is not None else real
            if rows is not None and not rows.empty:
                rv = verdict(rows)
                fails = fails or rv.fails
                parts.append(f"{rv.verdict} ({rv.ours})")
            if c.get("real"):
                parts.append(c["real"])
            cells.append("; ".join(parts) or "—")
        cells.append((c.get("cause") or "not investigated") if fails else "")
        lines.append("| " + " | ".join(_cell(x) for x in cells) + " |")
    if not_claims:
        lines += ["", "Checks that are no paper claim: "
                  + "; ".join(f"`{p}`: {why}" for p, why in not_claims.items()) + "."]
    lines.append(END)
    return "\n".join(lines) + "\n"


def embed(doc: str, block: str) -> str:
    """``doc`` with the text between the claims markers replaced by ``block``."""
    if doc.count(BEGIN) != 1 or doc.count(END) != 1:
        raise ValueError(f"the doc must hold exactly one {BEGIN} ... {END} pair")
    head, rest = doc.split(BEGIN, 1)
    return head + block.rstrip("\n") + rest.split(END, 1)[1]


def embedded(doc: str) -> str:
    """The claims block a doc holds now (markers included)."""
    return BEGIN + doc.split(BEGIN, 1)[1].split(END, 1)[0] + END + "\n"


def study_claims(study: str) -> tuple[tuple[Mapping, ...], Mapping[str, str]]:
    """``CLAIMS`` and ``NOT_CLAIMS`` of ``labelfree.<study>.report``."""
    mod = importlib.import_module(f"labelfree.{study}.report")
    return tuple(mod.CLAIMS), dict(mod.NOT_CLAIMS)


def provenance_line(study: str, tree: str | Path, note: str = "") -> str:
    """Where the checks came from: the tree's ``results/summary.csv`` names the config, commit
    and machine of its run."""
    summary = Path(tree) / "results" / "summary.csv"
    run = ""
    if summary.exists():
        df = pd.read_csv(summary, dtype=str)
        r = df.iloc[0]
        run = (f" of config `{r['config']}` at commit `{r['commit']}` on {r['machine']}")
    line = (f"Generated by `python tools/claims.py {study} <tree>` from the checks of a run"
            f"{run}.")
    return line + (f" {note}" if note else "")


def write_doc(study: str, tree: str | Path, doc: str | Path, note: str = "",
              repo: str | Path = ".") -> str:
    """Render the claims table of ``study`` from result tree ``tree`` into ``doc``; returns the
    block."""
    claims, not_claims = study_claims(study)
    table = read_checks(tree_tables(study, tree))
    real = real_what = real_doc = None
    if study in REAL:
        path, real_what, real_doc = REAL[study]
        real = read_table(Path(repo) / path)
    block = render(claims, not_claims, table, provenance_line(study, tree, note), real,
                   real_what or "", real_doc or "")
    p = Path(doc)
    p.write_text(embed(p.read_text(), block))
    return block


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="tools/claims.py",
        description="Write a study's claims table into docs/<study>.md from a result tree.")
    ap.add_argument("study", choices=STUDIES + ("all",))
    ap.add_argument("tree", help="a run's directory (holding results/)")
    ap.add_argument("--docs", default="docs", help="folder of the study docs (default docs)")
    ap.add_argument("--note", action="append", default=[],
                    help="STUDY=TEXT: a sentence added to that study's provenance line")
    args = ap.parse_args(argv)
    notes = dict(n.split("=", 1) for n in args.note)
    studies = STUDIES if args.study == "all" else (args.study,)
    for s in studies:
        write_doc(s, args.tree, Path(args.docs) / f"{s}.md", notes.get(s, ""))
        print(f"{args.docs}/{s}.md: claims table written", file=sys.stderr)
    return 0
