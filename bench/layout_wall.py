"""Wall time of the default run's spine, this tree beside the layout before per-model jobs
(issue 23 item 1: "the default run's wall time stays within 5 % of today's").

The spine is what the layout changed: data, shifts, training and inference of the default
config's three largest zoos (`digits`, `laf_tight`, `laf_spread`: 60 models, each on the ID set,
every corruption and every natural shift), up to `results/infer/<zoo>/accuracy.csv`. Both trees
run from scratch with their own Snakefile and `config/config.yaml` (these zoos are identical in
both), `--cores 2`, alternating which goes first in each repetition so a drift in the machine's
load falls on both. Figures: wall time, and CPU time (user + sys of snakemake and its jobs, from
wait4). Target: median wall ratio this tree / baseline <= 1.05. Writes
bench/results/layout_wall.md.

    python bench/layout_wall.py [--reps 2] [--baseline e447a7b]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from graph_cost import run_timed  # bench/ is the script's folder, first on sys.path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
ZOOS = ("digits", "laf_tight", "laf_spread")
TARGET = 1.05


def run_spine(tree: Path, work: Path) -> tuple[float, float]:
    """Wall s and CPU s of one from-scratch spine run of ``tree`` in ``work``."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    targets = [f"results/infer/{z}/accuracy.csv" for z in ZOOS]
    cmd = [SNAKEMAKE, "-s", str(tree / "Snakefile"), "-d", str(work), "--configfile",
           str(tree / "config" / "config.yaml"), "--cores", "2", "--quiet", "all", "--", *targets]
    wall, cpu, _, rc = run_timed(cmd, work, {**os.environ, "PYTHONPATH": str(tree / "src")})
    if rc != 0:  # run_timed has printed the tail of its stderr
        raise SystemExit(f"{tree}: snakemake failed (exit {rc})")
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--baseline", default="e447a7b", help="commit of the layout before")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "layout_wall.md"))
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="layout-wall-"))
    baseline = scratch / "baseline"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(baseline),
                    args.baseline], check=True, capture_output=True)
    git = ["git", "-C", str(REPO)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    rows: list[tuple[int, str, float, float, float]] = []
    try:
        for rep in range(args.reps):
            order = [("baseline", baseline), ("this tree", REPO)]
            for label, tree in order if rep % 2 == 0 else order[::-1]:
                load = os.getloadavg()[0]
                wall, cpu = run_spine(tree, scratch / "work")
                rows.append((rep, label, wall, cpu, load))
                print(f"rep {rep} {label:10s} wall {wall:7.1f} s  cpu {cpu:7.1f} s  "
                      f"load {load:.1f}", flush=True)
    finally:
        subprocess.run([*git, "worktree", "remove", "--force", str(baseline)],
                       capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    from labelfree.provenance import cpu_model

    def med(label: str, col: int) -> float:
        return statistics.median(r[col] for r in rows if r[1] == label)

    ratio = med("this tree", 2) / med("baseline", 2)
    cpu_ratio = med("this tree", 3) / med("baseline", 3)
    lines = [
        "# Default run's spine: this tree beside the layout before per-model jobs "
        "(bench/layout_wall.py)",
        "",
        f"Machine: {cpu_model()}, {os.cpu_count()} cores, {platform.platform()}; this tree "
        f"{head}{' (+ uncommitted changes)' if dirty else ''}, baseline {args.baseline}; "
        f"started {started}. Zoos {', '.join(ZOOS)} from scratch to their accuracy tables, "
        "`--cores 2`; the order alternates between repetitions. Wall time depends on the "
        "machine's load (shown per row).",
        "",
        "| rep | layout | wall s | CPU s | load avg at start |",
        "|---|---|---|---|---|",
        *[f"| {r} | {lab} | {w:.1f} | {c:.1f} | {ld:.1f} |" for r, lab, w, c, ld in rows],
        "",
        f"Median wall ratio this tree / baseline: **{ratio:.3f}** (target <= {TARGET}: "
        f"{'met' if ratio <= TARGET else 'NOT met'}); median CPU ratio: {cpu_ratio:.3f}.",
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
