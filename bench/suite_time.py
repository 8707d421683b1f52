"""Time README command two's test step (`pytest`) and record it (issue 22 item 4).

Runs the whole suite under `/usr/bin/time`, then writes docs/test-suite-time.txt (pytest's
summary line, wall and CPU time, the slowest tests, machine, commit, load average before and
after) and the one-line block between `<!-- suite-time:begin -->` and `<!-- suite-time:end -->`
in README.md, so the figure README states always comes from a run. The target (at most 10 minutes
on 2 cores) is compared in the same line. Usage: `python bench/suite_time.py [pytest args]`.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "test-suite-time.txt"
README = REPO / "README.md"
BEGIN, END = "<!-- suite-time:begin -->", "<!-- suite-time:end -->"
TARGET_S = 10 * 60


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _commit() -> str:
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                         text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                           capture_output=True, text=True).stdout.strip()
    return sha + ("+uncommitted changes" if dirty else "")


def _time_field(report: str, name: str) -> float:
    match = re.search(rf"{re.escape(name)}: (.+)", report)
    if not match:
        raise RuntimeError(f"/usr/bin/time printed no {name!r}")
    value = match.group(1).strip()
    if ":" in value:  # h:mm:ss or m:ss.ss
        parts = [float(p) for p in value.split(":")]
        return sum(p * 60 ** i for i, p in enumerate(reversed(parts)))
    return float(value)


def main(args: list[str]) -> int:
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    proc = subprocess.run(
        ["/usr/bin/time", "-v", sys.executable, "-m", "pytest", "--durations=25", *args],
        cwd=REPO, capture_output=True, text=True,
    )
    load_after = os.getloadavg()
    out, report = proc.stdout, proc.stderr
    wall = _time_field(report, "Elapsed (wall clock) time (h:mm:ss or m:ss)")
    user, system = _time_field(report, "User time (seconds)"), _time_field(report, "System time (seconds)")
    summary = [ln for ln in out.splitlines() if re.match(r"^=+ .*(passed|failed|error).* =+$", ln)]
    slowest = out[out.find("slowest"):].split("\n=")[0] if "slowest" in out else ""
    machine = f"{_cpu_model()}, {os.cpu_count()} cores, {platform.platform()}"
    met = "meets" if wall <= TARGET_S and proc.returncode == 0 else "misses"
    line = (
        f"Last measured: {wall / 60:.1f} min wall ({(user + system) / 60:.1f} min CPU), pytest exit "
        f"{proc.returncode}, {met} the {TARGET_S // 60}-minute target; {machine}; commit {_commit()}; "
        f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after; {started}."
    )
    OUT.write_text(
        f"# pytest (README command two's test step), timed by bench/suite_time.py\n"
        f"# {line}\n{summary[-1] if summary else '(no pytest summary line)'}\n"
        f"wall {wall:.1f} s, user {user:.1f} s, sys {system:.1f} s\n\n{slowest}\n"
    )
    text = README.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        README.write_text(f"{head}{BEGIN}\n{line}\n{END}{rest.split(END, 1)[1]}")
    print(line)
    if proc.returncode:
        print(out[-4000:], file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
