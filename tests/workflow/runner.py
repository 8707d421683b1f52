"""Run the real workflow (the repository's Snakefile) in a scratch directory."""

from __future__ import annotations

import atexit
import csv
import io
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
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


def shared_value(tmp_path_factory, name: str, compute):
    """``compute()`` (JSON-serialisable) once per test session, also across pytest-xdist
    workers: as ``shared_run``, the first worker to ask computes it under a file lock and
    stores it; the others read it. For module fixtures whose tests xdist may hand to both
    workers (each would otherwise compute the fixture again)."""
    def build(folder: Path) -> None:
        (folder / "value.json").write_text(json.dumps(compute()))

    return json.loads((shared_run(tmp_path_factory, name, build) / "value.json").read_text())


def run_snakemake(
    workdir: Path, *args: str, configfile: Path | None = None, env: dict | None = None,
    timeout: float = 1200, check: bool = True,
) -> subprocess.CompletedProcess:
    """Run snakemake to completion; on failure with ``check`` raise with its output tail."""
    workdir.mkdir(parents=True, exist_ok=True)
    cmd = snakemake_cmd(workdir, *args, configfile=configfile)
    full_env = {**os.environ, **(env or {})}
    if _Forks.wanted(cmd):
        proc = _Forks.get().run(cmd, full_env, timeout)
    else:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        )
    return proc


class _Forks:
    """Client of tests/workflow/snakemake_forks.py: runs a `snakemake` command line as a fork of
    a server that imported Snakemake once, instead of a fresh process (about 1.7 s CPU less per
    call; issue 22 item 4). The child runs the `snakemake` script's code with the same argv,
    environment and working directory; its output and exit status come back as from
    subprocess.run (CompletedProcess, TimeoutExpired after killing it).
    One server per pytest process, started on first use.
    """

    _instance: _Forks | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.env = dict(os.environ)
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("snakemake_forks.py"))],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=self.env,
        )
        self.buf = b""
        atexit.register(self.close)

    def close(self) -> None:
        """End the server (it exits at the end of its input) and reap it."""
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    @classmethod
    def get(cls) -> _Forks:
        if cls._instance is None or cls._instance.proc.poll() is not None:
            cls._instance = cls()
        return cls._instance

    @staticmethod
    def wanted(cmd: list[str]) -> bool:
        """Only for the `snakemake` of this interpreter; LABELFREE_TEST_NO_FORKS=1 turns it off."""
        return cmd[0] == SNAKEMAKE and not os.environ.get("LABELFREE_TEST_NO_FORKS")

    def fits(self, env: dict[str, str]) -> bool:
        """Nothing that shapes the interpreter itself (PYTHON* variables: its path, site, ...)
        differs from the server's; otherwise the command runs as a fresh process."""
        def python(e: dict[str, str]) -> dict[str, str]:
            return {k: v for k, v in e.items() if k.startswith("PYTHON")}
        return python(env) == python(self.env)

    def _read_int(self, timeout: float | None) -> int | None:
        """The server's next line as an int; None if it sends none within ``timeout``."""
        fd = self.proc.stdout.fileno()
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RuntimeError("tests/workflow/snakemake_forks.py exited")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return int(line)

    def run(self, cmd: list[str], env: dict[str, str], timeout: float
            ) -> subprocess.CompletedProcess:
        if not self.fits(env):
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        with self._lock, tempfile.TemporaryDirectory(prefix="snakemake-fork-") as tmp:
            out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
            req = {"argv": cmd, "env": env, "cwd": os.getcwd(), "stdout": str(out),
                   "stderr": str(err)}
            self.proc.stdin.write(json.dumps(req).encode() + b"\n")
            self.proc.stdin.flush()
            pid = self._read_int(120)
            if pid is None:
                raise RuntimeError("tests/workflow/snakemake_forks.py does not answer")
            rc = self._read_int(timeout)
            if rc is None:  # as subprocess.run: kill the process, then raise
                os.kill(pid, signal.SIGKILL)
                self._read_int(None)
                raise subprocess.TimeoutExpired(cmd, timeout, output=out.read_text(),
                                                stderr=err.read_text())
            return subprocess.CompletedProcess(cmd, rc, out.read_text(), err.read_text())


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
