"""Benchmark: coverage and width of the answer's prediction intervals on every zoo of a run tree.

For each zoo of ``RUN/results/infer`` the stored logits and the test sets' labels go through the
same library functions the workflow's ``answer`` rule calls (``labelfree.answer.build``): the
estimator chosen on the zoo's other labelled shifted sets, its split-conformal interval at
``--level`` with the set as the exchangeable unit (too few held-out sets: 0-100 %). Coverage is the share of (labelled shifted set, model) rows whose interval holds the
true accuracy, each set left out of its own calibration (``labelfree.answer.coverage``); width
is the mean interval width in accuracy points (finite intervals only; the share of 0-100 %
intervals, too few held-out sets for the level, is reported apart). Target: coverage within 5
points of the stated level. Beside it: the binomial SE of that coverage over sets, the coverage
per kind of shift (test-set group), whether the run wrote the zoo's answer page; zoos of one
model in a table of their own; a zoo whose labels are all multi-label is out of scope.

    python bench/answer_coverage.py RUN [RUN ...] [--level 0.9] [--zoos Z ...] [--names N ...]
        [--out bench/results/answer_coverage]

The run trees are read only (copy them first if a workflow may still write in them). Writes
``<out>.md`` and ``<out>.json`` with the machine, the git commit and the date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from labelfree import answer, store
from labelfree.provenance import cpu_model

SOURCE = "id"
#: The note of a zoo whose labelled sets are all multi-label (multi-hot): out of the answer's scope.
MULTILABEL = ("out of scope: multi-label (multi-hot) labels, no single-label accuracy to "
              "estimate or cover")


def zoo_arrays(run: Path, zoo: str):
    """Models, logits per test set (zoo's file order, ``id`` first), labels and kinds of a zoo
    from a run tree, or a reason it cannot be read."""
    root = run / "results" / "infer" / zoo
    models = sorted(d.name for d in root.iterdir() if d.is_dir() and any(d.glob("*.npz")))
    if not models:
        return None, "no inference files"
    groups: dict[str, list[str]] = {}
    for f in sorted((root / models[0]).glob("*.npz")):
        with np.load(f, allow_pickle=False) as z:
            groups[f.stem] = [str(t) for t in z["testsets"]]
    groups = dict(sorted(groups.items(), key=lambda kv: kv[0] != SOURCE))
    meta = json.loads((run / "results" / "zoo" / zoo / models[0] / "meta.json").read_text())
    pred = meta.get("source") == "predictions"
    sets = [t for ts in groups.values() for t in ts]
    dirs = [d for d in sorted((run / "results" / "testsets").iterdir())
            if all((d / f"{t}.npz").exists() for t in sets)]
    if not dirs:
        return None, "no test-set folder holds all its sets"
    logits, labels, kinds, multilabel = {}, {}, {}, []
    for g, ts in groups.items():
        for t in ts:
            if t in logits:
                continue
            logits[t] = store.stack_logits([root / m / f"{g}.npz" for m in models], t)
            y = store.read_labels(dirs[0] / f"{t}.npz")
            labels[t] = y if y is not None and y.ndim == 1 else None
            if y is not None and y.ndim != 1:
                multilabel.append(t)
            kinds[t] = ("source" if t == SOURCE else "shifted") if pred else (
                "source" if g == SOURCE else g)
    return (models, logits, labels, kinds, multilabel), ""


def one_zoo(run: Path, zoo: str, level: float, max_mae: float) -> dict:
    arrays, why = zoo_arrays(run, zoo)
    if arrays is None:
        return {"zoo": zoo, "note": why}
    models, logits, labels, kinds, multilabel = arrays
    answered = (run / "results" / "answer" / zoo / "answer.md").exists()
    if not any(y is not None for y in labels.values()):
        note = (MULTILABEL if multilabel else "no labelled test set")
        return {"zoo": zoo, "models": len(models), "note": note, "answered": answered}
    t0 = time.perf_counter()
    table, *_ = answer.build(zoo, models, logits, labels, SOURCE if SOURCE in logits else None,
                             budget=10, seed=0, n_boot=10, kinds=kinds, level=level,
                             max_mae=max_mae)
    seconds = time.perf_counter() - t0
    cov, n = answer.coverage(table)
    rows = table[table["covered"].notna()]
    finite = rows[np.isfinite(rows["halfwidth"])]
    width = 100 * (finite["interval_high"] - finite["interval_low"])
    per_set = rows.groupby("testset", sort=False).agg(
        estimator=("estimator", "first"), covered=("covered", "mean"),
        evidence_mae=("evidence_mae", "first"), halfwidth=("halfwidth", "first"),
        evidence_sets=("evidence_sets", "first"))
    per_set["kind"] = [kinds.get(t, "") for t in per_set.index]
    return {
        "zoo": zoo, "models": len(models), "testsets": len(logits),
        "labelled_shifted_sets": int(rows["testset"].nunique()), "rows": n,
        "coverage": cov, "mean_width_points": float(width.mean()) if len(width) else float("nan"),
        "share_unbounded": float(1 - len(finite) / len(rows)) if len(rows) else float("nan"),
        "trusted_sets": int(table.groupby("testset")["trusted"].first().sum()),
        "estimators": per_set["estimator"].value_counts().to_dict(),
        "seconds": seconds, "answered": answered,
        "note": "" if n else "no labelled shifted set: coverage not measurable",
        "min_sets": answer.min_cases(level),
        "per_set": per_set.reset_index().to_dict("records"),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="*", type=Path)
    ap.add_argument("--level", type=float, default=0.9)
    ap.add_argument("--max-mae", type=float, default=0.10)
    ap.add_argument("--out", default="bench/results/answer_coverage")
    ap.add_argument("--zoos", nargs="*", default=None, help="only these zoos (default: all)")
    ap.add_argument("--names", nargs="*", default=None,
                    help="a name per run tree for the results (default: its path)")
    ap.add_argument("--from-json", type=Path, help="re-render the markdown of a saved result")
    a = ap.parse_args()
    if a.from_json:
        Path(f"{a.out}.md").write_text(markdown(json.loads(a.from_json.read_text())))
        return
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    out = {"machine": f"{cpu_model()}, {platform.machine()}", "commit": commit,
           "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "level": a.level,
           "max_mae": a.max_mae, "runs": {}}
    if a.names and len(a.names) != len(a.runs):
        ap.error(f"--names gives {len(a.names)} names for {len(a.runs)} run trees")
    for run, name in zip(a.runs, a.names or [str(r) for r in a.runs], strict=True):
        zoos = sorted(d.name for d in (run / "results" / "infer").iterdir() if d.is_dir()
                      and (not a.zoos or d.name in a.zoos))
        out["runs"][name] = []
        for z in zoos:
            out["runs"][name].append(one_zoo(run, z, a.level, a.max_mae))
            print(f"{name} {z}: {out['runs'][name][-1].get('seconds', 0):.0f} s",
                  file=sys.stderr, flush=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(f"{a.out}.json").write_text(json.dumps(out, indent=1, default=float) + "\n")
    Path(f"{a.out}.md").write_text(markdown(out))
    print(markdown(out))


HEADER = ("| zoo | models | labelled shifted sets | (set, model) rows | coverage % | "
          "bounded only % | within 5 points | binomial SE, points (sets as units) | "
          "mean width (points, bounded) | unbounded % | trusted sets | estimators chosen | "
          "answer page in the run | coverage % by kind of shift (sets) | note |")


def markdown(out: dict) -> str:
    lvl = 100 * out["level"]
    lines = ["# Answer intervals: coverage and width", "",
             f"Machine: {out['machine']}; commit {out['commit']}; {out['date']}. Stated level "
             f"{lvl:.0f} % (split-conformal over the zoo's other labelled shifted sets, each set "
             "one exchangeable unit and left out of its own calibration; "
             "`bench/answer_coverage.py`). Target: coverage within 5 points of the level.", ""]
    if out.get("note"):
        lines += [out["note"], ""]
    lines += ["Coverage counts every labelled shifted (set, model) row; an interval of 0-100 % "
              "(too few held-out labelled shifted sets for the level: the answer then says no "
              "label-free estimate is trustworthy and recommends labelling PACE's picks) covers "
              "trivially, so the coverage of the bounded intervals alone is given beside it, and "
              "the verdict is on the bounded ones where there are any.", "",
              f"Binomial SE: how far the measured coverage of an exactly calibrated {lvl:.0f} % "
              "interval strays by chance, sqrt(level (1 - level) / n) over the n labelled "
              "shifted sets with bounded intervals (the set is the unit: a shift moves every "
              "model's error on it together; with several models per set the spread is smaller, "
              "with sets that are not independent, such as one corruption at five severities, "
              "larger). Zoos of one model are listed apart: each set is one "
              "row, the coverage moves in steps of 100 / n points, and their answers estimate "
              "only (nothing to rank).", ""]
    for run, zoos in out["runs"].items():
        lines += [f"## `{run}`", ""]
        many = [z for z in zoos if z.get("models", 0) != 1]
        one = [z for z in zoos if z.get("models", 0) == 1]
        for title, group in (("Zoos of several models", many),
                             ("One-model zoos (estimation only)", one)):
            if not group:
                continue
            lines += [f"### {title}", "", HEADER, "|" + "---|" * HEADER.count(" | ") + "---|"]
            lines += [_row(z, lvl) for z in group]
            lines.append("")
    return "\n".join(lines)


def _pts(v: float) -> str:
    return "—" if v != v else f"{100 * v:.1f}"


def _answered(z: dict) -> str:
    return {True: "yes", False: "no"}.get(z.get("answered"), "—")


def _row(z: dict, lvl: float) -> str:
    if "coverage" not in z:
        return (f"| {z['zoo']} | {z.get('models', '—')} | — | — | — | — | — | — | — | — | — | "
                f"— | {_answered(z)} | — | {z['note']} |")
    bounded = [r["covered"] for r in z["per_set"] if np.isfinite(r["halfwidth"])]
    bcov = float(np.mean(bounded)) if bounded else float("nan")  # equal models per set
    judged = bcov if bounded else float("nan")
    ok = ("— (no bounded interval)" if judged != judged else "yes"
          if abs(100 * judged - lvl) <= 5 else
          "no (over)" if 100 * judged > lvl else "**no (under)**")
    level = lvl / 100
    se = (f"{100 * np.sqrt(level * (1 - level) / len(bounded)):.1f}" if bounded else "—")
    if bounded and z["models"] == 1:
        se += f" (1 row = {100 / len(bounded):.1f} points)"
    est = ", ".join(f"{k} {v}" for k, v in z["estimators"].items())
    note = z["note"]
    if not bounded and z.get("min_sets"):
        held = max(int(r["evidence_sets"]) for r in z["per_set"])
        note = (f"at most {held} held-out labelled shifted sets per set, {z['min_sets']} needed "
                f"for a bounded {lvl:.0f} % interval" + (f"; {note}" if note else ""))
    width = z["mean_width_points"]
    return (f"| {z['zoo']} | {z['models']} | {z['labelled_shifted_sets']} | {z['rows']} | "
            f"{_pts(z['coverage'])} | {_pts(bcov)} | {ok} | {se} | "
            f"{'—' if width != width else f'{width:.1f}'} | {100 * z['share_unbounded']:.0f} | "
            f"{z['trusted_sets']}/{z['testsets']} | {est} | {_answered(z)} | {_by_kind(z)} | "
            f"{note} |")


def _by_kind(z: dict) -> str:
    """Coverage per kind of shift (the zoo's test-set group), most sets first: where a zoo's
    misses concentrate (a kind no other labelled set resembles)."""
    by: dict[str, list[float]] = {}
    for r in z["per_set"]:
        by.setdefault(r.get("kind") or "?", []).append(r["covered"])
    parts = sorted(by.items(), key=lambda kv: -len(kv[1]))
    return "; ".join(f"{k} {100 * np.mean(v):.0f} ({len(v)})" for k, v in parts)


if __name__ == "__main__":
    main()
