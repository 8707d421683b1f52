"""Benchmark: build and dry-run the paper-scale LaF graph (issue 8 target: under 60 s).

Merges config/paper/laf-{mnist,fashion_mnist,cifar10}.yaml into one run (3 datasets x 76 test
sets x 30 models), times `snakemake --dry-run` on it, counts the jobs it would submit, and in the
same run does the same for the default config as the baseline. Run by hand:

    python bench/cluster_dryrun.py
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from labelfree.zoo.sheet import build_sheet

REPO = Path(__file__).resolve().parents[1]
PAPER = [REPO / "config" / "paper" / f"laf-{d}.yaml" for d in ("mnist", "fashion_mnist", "cifar10")]


def paper_scale_config() -> dict:
    """One config holding the three LaF paper runs side by side."""
    merged: dict = {}
    for path in PAPER:
        cfg = yaml.safe_load(path.read_text())
        for key in ("datasets", "zoos"):
            merged.setdefault(key, {}).update(cfg[key])
        laf = merged.setdefault("laf", dict(cfg["laf"], zoos=[]))
        laf["zoos"] = [*laf["zoos"], *cfg["laf"]["zoos"]]
        for key, value in cfg.items():
            merged.setdefault(key, value)
    return merged


def dry_run(configfile: Path, workdir: Path) -> tuple[float, int, str]:
    """Wall seconds of `snakemake -n`, the number of jobs it plans, and its job table."""
    cmd = [
        str(Path(sys.executable).with_name("snakemake")),
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(configfile),
        "--dry-run",
        "--cores",
        "1",
    ]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"dry run of {configfile} failed:\n{proc.stderr[-3000:]}")
    out = proc.stdout + proc.stderr
    total = re.search(r"^total\s+(\d+)", out, re.M)
    table = out[out.find("Job stats:") : out.find("total")] if "Job stats:" in out else ""
    return wall, int(total.group(1)) if total else 0, table


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        paper = tmp_path / "paper-laf.yaml"
        paper.write_text(yaml.safe_dump(paper_scale_config()))
        cfg = paper_scale_config()
        sizes = {z: len(build_sheet(z, zc, REPO)) for z, zc in cfg["zoos"].items()}
        rows = [
            (
                "default config (baseline)",
                *dry_run(REPO / "config" / "config.yaml", tmp_path / "a"),
            ),
            ("paper-scale LaF (3 datasets)", *dry_run(paper, tmp_path / "b")),
        ]
    print(f"paper-scale zoos (models each): {sizes}; test sets per zoo: id + 75 corruptions")
    print(f"{'graph':32s} {'dry-run wall [s]':>17s} {'jobs':>6s}")
    for name, wall, jobs, _ in rows:
        print(f"{name:32s} {wall:17.1f} {jobs:6d}")
    print("\npaper-scale job table:\n" + rows[1][3])
    target = 60.0
    print(
        f"target: paper-scale dry run under {target:.0f} s -> "
        f"{'met' if rows[1][1] < target else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
