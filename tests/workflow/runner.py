"""Run the real workflow (the repository's Snakefile) in a scratch directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def snakemake_cmd(workdir: Path, *args: str, configfile: Path | None = None) -> list[str]:
    """The snakemake command line for ``workdir`` with the smoke config unless told otherwise."""
    cfg = configfile or REPO / "config" / "smoke.yaml"
    exe = SNAKEMAKE if Path(SNAKEMAKE).exists() else shutil.which("snakemake") or "snakemake"
    return [
        exe, "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
        "--configfile", str(cfg), "--cores", "2", *args,
    ]


def run_snakemake(
    workdir: Path, *args: str, configfile: Path | None = None, env: dict | None = None,
    timeout: float = 1200, check: bool = True,
) -> subprocess.CompletedProcess:
    """Run snakemake to completion; on failure with ``check`` raise with its output tail."""
    workdir.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        snakemake_cmd(workdir, *args, configfile=configfile),
        capture_output=True, text=True, timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        )
    return proc


def result_tables(workdir: Path) -> dict[str, bytes]:
    """Every csv table under results/, by relative path, as bytes."""
    root = workdir / "results"
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*.csv"))
        if p.name != "software.csv"
    }
