"""Time README command one's run (`snakemake --cores all`) from a fresh clone, and record it.

Clones this repository's HEAD into a scratch folder (nothing of the working tree's results or
Snakemake metadata comes along), runs the default configuration there under `/usr/bin/time -v`,
then a second, no-op `snakemake --cores all` (nothing left to do: it must plan nothing), and
writes:

- docs/default-run/time.txt: `/usr/bin/time -v`'s lines of both runs, the jobs run, machine,
  commit, load average before and after;
- docs/default-run/summary.{md,csv}, summary-methods.csv: the run's results/summary.*;
- README.md: the summary block (`labelfree.summary`) and the one line between
  `<!-- default-run:begin -->` and `<!-- default-run:end -->`, with the 5-minute target.

The run's library is the clone's own `src/` (PYTHONPATH), so an editable install of another
checkout does not leak in. Usage: `python bench/default_run.py [--keep DIR] [--cores N]`.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUN_DOCS = REPO / "docs" / "default-run"
README = REPO / "README.md"
BEGIN, END = "<!-- default-run:begin -->", "<!-- default-run:end -->"
TARGET_S = 5 * 60
NOOP_TARGET_S = 5.0
TIME_FIELDS = (
    "Command being timed", "User time (seconds)", "System time (seconds)",
    "Percent of CPU this job got", "Elapsed (wall clock) time (h:mm:ss or m:ss)",
    "Maximum resident set size (kbytes)",
)


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          check=True).stdout.strip()


def _seconds(report: str, name: str) -> float:
    match = re.search(rf"{re.escape(name)}: (.+)", report)
    if not match:
        raise RuntimeError(f"/usr/bin/time printed no {name!r}")
    value = match.group(1).strip()
    parts = [float(p) for p in value.split(":")]
    return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))


def _timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess, str]:
    """Run ``cmd`` under /usr/bin/time -v; its report goes to a file, so the command's own stderr
    (Snakemake's log) stays whole."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        proc = subprocess.run(["/usr/bin/time", "-v", "-o", report.name, *cmd], cwd=cwd, env=env,
                              capture_output=True, text=True)
        return proc, Path(report.name).read_text()


def _jobs_run(log: str) -> int:
    """Jobs Snakemake finished, from its own 'N of M steps (100%) done' lines."""
    done = re.findall(r"(\d+) of (\d+) steps \(\d+%\) done", log)
    return int(done[-1][0]) if done else 0


def _lines(report: str) -> list[str]:
    return [f"\t{ln.strip()}" for ln in report.splitlines()
            if any(ln.strip().startswith(f) for f in TIME_FIELDS)]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="clone into this folder and keep it")
    parser.add_argument("--cores", default="all")
    args = parser.parse_args(argv)
    commit = _git("rev-parse", "--short=12", "HEAD")
    if _git("status", "--porcelain", "--untracked-files=no"):
        print("default_run: the working tree has uncommitted changes; the clone runs HEAD "
              f"({commit}) without them", file=sys.stderr)
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="labelfree-default-"))
    if scratch.exists():
        shutil.rmtree(scratch)
    subprocess.run(["git", "clone", "-q", "--no-local", str(REPO), str(scratch)], check=True)
    env = dict(os.environ, PYTHONPATH=str(scratch / "src"))
    snakemake = [shutil.which("snakemake") or "snakemake", "--cores", args.cores]

    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"default_run: {' '.join(snakemake)} in {scratch} (commit {commit})", file=sys.stderr)
    run, report = _timed(snakemake, scratch, env)
    load_after = os.getloadavg()
    if run.returncode:
        print(run.stderr[-4000:], file=sys.stderr)
        return run.returncode
    noop, noop_report = _timed(snakemake, scratch, env)
    planned = _jobs_run(noop.stderr)

    wall, noop_wall = (_seconds(r, "Elapsed (wall clock) time (h:mm:ss or m:ss)")
                       for r in (report, noop_report))
    cpu = _seconds(report, "User time (seconds)") + _seconds(report, "System time (seconds)")
    machine = f"{_cpu_model()}, {os.cpu_count()} cores"
    met = "meets" if wall <= TARGET_S else "misses"
    noop_met = "meets" if noop_wall <= NOOP_TARGET_S and planned == 0 else "misses"
    line = (f"Default run from a fresh clone: {wall / 60:.1f} min wall ({cpu / 60:.1f} min CPU, "
            f"{_jobs_run(run.stderr)} jobs), {met} the 5-minute target; no-op rerun "
            f"{noop_wall:.1f} s ({planned} jobs), {noop_met} the 5 s target; {machine}; "
            f"commit {commit}; load average {load_before[0]:.2f} before, {load_after[0]:.2f} "
            f"after; {started}.")
    RUN_DOCS.mkdir(parents=True, exist_ok=True)
    (RUN_DOCS / "time.txt").write_text("\n".join([
        "# README command one's run, timed by bench/default_run.py", f"# {line}",
        "run:", *_lines(report), "no-op rerun:", *_lines(noop_report), ""]))
    for name in ("summary.md", "summary.csv", "summary-methods.csv"):
        shutil.copyfile(scratch / "results" / name, RUN_DOCS / name)
    subprocess.run([sys.executable, "-m", "labelfree.summary", str(RUN_DOCS / "summary.md"),
                    str(README)], check=True, env=env)
    text = README.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        README.write_text(f"{head}{BEGIN}\n{line}\n{END}{rest.split(END, 1)[1]}")
    print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
