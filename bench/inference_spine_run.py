"""Benchmark: the spine part of the default run (data, shifts, zoo training, inference, table).

Runs ``snakemake --cores N`` on the default config (config/config.yaml) from scratch in a
temporary working directory, for the spine targets only (``results/infer/<zoo>/accuracy.csv``
and ``.png`` of the spine zoo, default ``digits``), and prints the total wall time and, per job,
wall and CPU seconds from the rules' ``benchmark:`` files (jobs without one are listed by log).
The budget (TEAM.md / issue 2): the spine takes <= 3 minutes of the 15-minute default run on a
2-core CPU.

    python bench/inference_spine_run.py [--cores 2] [--zoo digits] [--keep DIR]
"""

from __future__ import annotations

import argparse
import csv
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--zoo", default="digits")
    ap.add_argument("--configfile", default=str(REPO / "config" / "config.yaml"))
    ap.add_argument("--keep", default="", help="run in this directory and keep it")
    args = ap.parse_args()
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="lf-spine-"))
    work.mkdir(parents=True, exist_ok=True)
    targets = [f"results/infer/{args.zoo}/accuracy.csv", f"results/infer/{args.zoo}/accuracy.png"]
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(REPO / "Snakefile"),
        "-d",
        str(work),
        "--configfile",
        args.configfile,
        "--cores",
        str(args.cores),
        "--quiet",
        "rules",
        "--",
        *targets,
    ]
    print("running:", " ".join(cmd))
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        print(proc.stdout[-4000:], proc.stderr[-4000:])
        raise SystemExit(f"snakemake failed (exit {proc.returncode}); work dir kept: {work}")
    rows = []
    for tsv in sorted((work / "benchmarks").rglob("*.tsv")):
        with tsv.open() as f:
            rec = next(csv.DictReader(f, delimiter="\t"))
        rows.append(
            (str(tsv.relative_to(work / "benchmarks")), float(rec["s"]), float(rec["cpu_time"]))
        )
    print(f"\n{'job (benchmark file)':48s} {'wall s':>8s} {'cpu s':>8s}")
    print("-" * 66)
    for name, s, c in rows:
        print(f"{name:48s} {s:8.1f} {c:8.1f}")
    logs = sorted(p.relative_to(work / "logs") for p in (work / "logs").rglob("*.log"))
    print(
        f"\n{len(logs)} job logs: "
        + ", ".join(str(p) for p in logs[:12])
        + (" ..." if len(logs) > 12 else "")
    )
    print(
        f"\nspine total wall time ({args.cores} cores, from scratch): {wall:.1f} s "
        f"(budget 180 s); sum of benchmarked CPU: {sum(r[2] for r in rows):.1f} s"
    )
    print("(measured on a shared, noisy machine: wall time includes waiting for other sessions)")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
