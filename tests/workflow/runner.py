"""Run the real workflow (the repository's Snakefile) in a scratch directory."""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: The smoke configuration (the same graph as config/config.yaml, tiny), where the Snakemake
#: workflow catalog expects a test config: .test/config/config.yaml.
SMOKE_CONFIG = REPO / ".test" / "config" / "config.yaml"
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def snakemake_cmd(workdir: Path, *args: str, configfile: Path | None = None) -> list[str]:
    """The snakemake command line for ``workdir`` with the smoke config unless told otherwise."""
    cfg = configfile or SMOKE_CONFIG
    exe = SNAKEMAKE if Path(SNAKEMAKE).exists() else shutil.which("snakemake") or "snakemake"
    return [
        exe, "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir),
        "--configfile", str(cfg), "--cores", "2", *args,
    ]


def shared_run(tmp_path_factory, name: str, build) -> Path:
    """``build(workdir)`` once per test session, also across pytest-xdist workers: the first
    worker to ask builds it under a file lock in the session's common temp folder, the others
    wait and reuse it (a failed build is retried by the next one). Callers must not change it.

    A module-scoped fixture alone runs once per worker that gets one of the module's tests, so
    a workflow run behind one was built twice under `-n 2` (issue 22 item 4).
    """
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # shared by the workers of this session
    workdir, done = base / name, base / f"{name}.done"
    with FileLock(str(base / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir(parents=True)
            build(workdir)
            done.touch()
    return workdir


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


# Wall-clock measurements cannot repeat between runs; everything else must, byte for byte.
TIMING_TABLE = re.compile(r"(time|efficiency)", re.I)  # tables that are all timings, by name
TIMING_COLUMN = re.compile(r"^(time_.*|seconds|.* s|.*_s|.*time.*)$", re.I)
NUMBER = re.compile(r"\d+(\.\d+)?")


def _without_timings(path: Path) -> bytes:
    """The table's bytes with wall-clock timing columns dropped and numbers in timing rows masked."""
    raw = path.read_bytes()
    header = raw.split(b"\n", 1)[0].decode()
    rows = list(csv.reader(io.StringIO(raw.decode())))
    if not rows or not any(TIMING_COLUMN.match(c) for c in header.split(",")) and b"time" not in raw:
        return raw
    keep = [i for i, c in enumerate(rows[0]) if not TIMING_COLUMN.match(c)]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        cells = [row[i] for i in keep if i < len(row)]
        if any("time" in c.lower() for c in cells):  # a row that reports timings in its text
            cells = [NUMBER.sub("#", c) for c in cells]
        writer.writerow(cells)
    return out.getvalue().encode()


#: The run summary's provenance columns (labelfree.summary.META_KEYS): they name the config
#: file, its digest, the commit and the machine, which two runs may legitimately differ in.
PROVENANCE_COLUMNS = ("config", "config_digest", "commit", "machine")


def _without_provenance(raw: bytes) -> bytes:
    rows = list(csv.reader(io.StringIO(raw.decode())))
    keep = [i for i, c in enumerate(rows[0]) if c not in PROVENANCE_COLUMNS] if rows else []
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([[r[i] for i in keep if i < len(r)] for r in rows])
    return out.getvalue().encode()


def result_tables(workdir: Path) -> dict[str, bytes]:
    """Every csv table under results/, by relative path, as bytes, wall-clock timings left out.

    software.csv (package versions) and tables that are all timings are skipped; timing columns
    and the numbers of rows that report timings are removed from the others; summary.csv keeps
    its checks but not its provenance columns.
    """
    root = workdir / "results"
    return {
        str(p.relative_to(root)): (
            _without_provenance(_without_timings(p)) if p.name == "summary.csv"
            else _without_timings(p)
        )
        for p in sorted(root.rglob("*.csv"))
        if p.name != "software.csv" and not TIMING_TABLE.search(p.stem)
    }
