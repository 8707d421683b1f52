"""Run the benchmarks in bench/ and regenerate bench/results.md, the index of their results.

    python bench/run.py                          # run every benchmark (hours on 2 cores), then index
    python bench/run.py inference_vs_bare pace_select   # run these only, then index
    python bench/run.py --skip-slow              # every benchmark but the slow ones
    python bench/run.py --index                  # run nothing: index the results files as they are
    python bench/run.py --list                   # names, targets, expected durations

Each benchmark runs in its own process (``PYTHONPATH=src``, from the repository root), with
its default arguments. Benchmarks that write a results file keep writing it where they always
have; the output of those that only print goes to ``bench/results/<name>.log``, under a header
with the machine, commit, date and load average. The index then reads every results file (or
log) as it stands, so it also lists benchmarks not rerun this time, each with the commit and
date its file states (or, where it states none, the commit that last changed the file).

The index gives, per benchmark: its target (from the issue that set it), the measured value
read from its results file, whether the target is met, machine and commit, and a link. A
benchmark may write ``<results>.json`` beside its markdown with ``target``, ``results`` (a
list of ``{what, value, met}``) and ``machine`` (``cpu``, ``commit``, ``date``); the index
prefers it. Values are read, never typed here.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
INDEX = BENCH / "results.md"


@dataclass
class Measured:
    """What the index shows for one benchmark: the value read, and whether the target holds."""

    value: str
    met: bool | None = None  # None: no threshold to compare with, or not readable


@dataclass(frozen=True)
class Bench:
    """One benchmark: its script and arguments, where its results land, its target."""

    name: str
    script: str
    target: str
    results: str  # path relative to the repository root; a log if the script only prints
    parse: Callable[[str], Measured]
    minutes: float  # rough duration on the 2-core development machine
    args: tuple[str, ...] = ()
    prints_only: bool = False
    needs_gpu: bool = False  # run only where torch sees CUDA (a lent GPU machine); CI has none

    @property
    def slow(self) -> bool:
        return self.minutes > 5


# ---------------------------------------------------------------------------------------------
# parsers: each reads the figures its benchmark wrote (formats as of the scripts in bench/)
# ---------------------------------------------------------------------------------------------


def _num(s: str) -> float:
    return float(s.replace(",", ""))


def _table_rows(text: str) -> list[list[str]]:
    """Cells of every markdown table row (separator rows left out)."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("|") and not re.fullmatch(r"\|[\s:|-]+\|?", line):
            rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows


def parse_json_results(text: str) -> Measured:
    """The convention of ``<results>.json``: ``results`` = [{what, value, met}, ...]."""
    data = json.loads(text)
    parts = [f"{r['what']}: {r['value']}" + (f" ({r['case']})" if r.get("case") else "")
             for r in data["results"]]
    # rows marked "target": false are context (e.g. inference_vs_bare's uint8 and rule rows)
    mets = [r.get("met") for r in data["results"] if r.get("target", True)]
    met = None if any(m is None for m in mets) else all(mets)
    return Measured("; ".join(parts), met)


def parse_target_lines(text: str) -> Measured:
    """Lines that state a target and say ``met`` / ``NOT met`` (pace_select, alpha-hat, ...)."""
    lines = [ln.strip(" -") for ln in text.splitlines() if re.search(r"target", ln, re.I)
             and re.search(r"\bmet\b", ln)]
    if not lines:
        return Measured("no target line in the file")
    met = all(not re.search(r"NOT met", ln) for ln in lines)
    return Measured("; ".join(lines), met)


def parse_laf_study_stream(text: str) -> Measured:
    """Peak RSS of the streamed study at 20 x 100,000 x 1,000 (issue 19 item 2: <= 2 GB)."""
    for cells in _table_rows(text):
        if cells and cells[0] == "20x100000x1000" and "streamed" in cells:
            i = cells.index("streamed")
            wall, peak, load, methods = (_num(c) for c in cells[i + 1 : i + 5])
            return Measured(
                f"20x100000x1000 streamed: peak {peak:.0f} MB, wall {wall:.1f} s "
                f"(loading {load:.1f} s, methods {methods:.1f} s)",
                peak <= 2048 and load <= methods,
            )
    return Measured("no 20x100000x1000 streamed row in the file")


GRAPH_LIMITS = {"default": 5.0, "noop": 5.0, "paper_laf": 30.0, "zoo10k": 60.0}


def parse_graph_cost(text: str) -> Measured:
    """Issue 23 item 4: dry-run / no-op <= 5 s, paper LaF <= 30 s, zoo10k <= 60 s and 2 GB."""
    parts, met = [], True
    for cells in _table_rows(text):
        if len(cells) >= 5 and cells[1] == "this tree" and cells[0] in GRAPH_LIMITS:
            wall, cpu, rss = _num(cells[2]), _num(cells[3]), _num(cells[4])
            ok = wall <= GRAPH_LIMITS[cells[0]] and (cells[0] != "zoo10k" or rss <= 2048)
            met &= ok
            parts.append(f"{cells[0]} {wall:.1f} s wall / {cpu:.1f} s CPU "
                         f"(limit {GRAPH_LIMITS[cells[0]]:.0f} s)")
    if not parts:
        return Measured("no 'this tree' rows in the file")
    return Measured("; ".join(parts), met)


def parse_methods_scorecard(text: str) -> Measured:
    """Issue 18 item 6: every method under 2 s. The verdict column says ``yes`` (wall < 2 s),
    ``yes (cpu)`` (wall >= 2 s on a loaded machine, CPU < 2 s) or ``no: <cause>``; ``baseline``
    rows are not methods."""
    rows = [c for c in _table_rows(text)
            if len(c) >= 6 and (c[-1].startswith("yes") or c[-1].startswith("no"))]
    if not rows:
        return Measured("no method rows in the file")
    slow = [f"{c[1]} {_num(c[2]):.1f} s wall / {_num(c[3]):.1f} s cpu "
            f"({_num(c[3]) / 4:.1f}x a 2-core budget of 4 cpu s)" for c in rows
            if c[-1].startswith("no")]
    by_cpu = sum(c[-1] == "yes (cpu)" for c in rows)
    skipped = [c for c in _table_rows(text) if c and c[-1].startswith("skipped")]
    value = f"{len(rows) - len(slow)} of {len(rows)} timed methods under 2 s"
    if by_cpu:
        value += f" ({by_cpu} of them on CPU time only: wall >= 2 s under load)"
    if slow:
        value += "; over: " + ", ".join(slow)
    if skipped:
        value += f"; {len(skipped)} not timed"
    return Measured(value, not slow and not skipped)


def parse_answer_coverage(text: str) -> Measured:
    """Issue 33: the answer's intervals cover the true accuracy at their stated level within 5
    points, on every zoo with bounded intervals (zoos without any are listed, not judged); one
    section per run tree (``## <run>``)."""
    level = re.search(r"Stated level (\d+) %", text)
    judged, unjudged, run = [], [], ""
    for line in text.splitlines():
        if line.startswith("## "):
            run = line[3:].strip("` ")
            continue
        cells = _table_rows(line)
        if not cells or len(cells[0]) < 7 or cells[0][0] == "zoo":
            continue
        c = cells[0]
        name = f"{run}: {c[0]}" if run else c[0]
        verdict = c[6].strip("* ")
        if verdict.startswith(("yes", "no")):
            judged.append((name, c[5], verdict.startswith("yes")))
        else:
            unjudged.append(name)
    if not judged:
        return Measured("no zoo with bounded intervals in the file")
    value = (f"{level.group(1) if level else '?'} % intervals, coverage of the bounded ones: "
             + ", ".join(f"{z} {cov} %" for z, cov, _ in judged))
    if unjudged:
        value += f"; not judged (no bounded interval, or no labelled set): {', '.join(unjudged)}"
    return Measured(value, all(ok for *_, ok in judged))


def parse_metamorphic_memory(text: str) -> Measured:
    """Peak RSS of the streamed steps does not grow with the dataset (largest vs smallest)."""
    by_step: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for cells in _table_rows(text):
        if len(cells) >= 6 and cells[0].isdigit() and "old path" not in cells[2]:
            by_step.setdefault((cells[2], cells[3]), []).append((int(cells[0]), _num(cells[5])))
    if not by_step:
        return Measured("no rows in the file")
    parts, met = [], True
    for (step, chunk), vals in by_step.items():
        vals.sort()
        growth = vals[-1][1] / vals[0][1]
        met &= growth <= 1.1
        parts.append(f"{step} (chunk {chunk}): x{growth:.2f} from {vals[0][0]} to {vals[-1][0]} sources")
    return Measured("; ".join(parts), met)


def parse_laf_rank(text: str) -> Measured:
    """Issue 3: (a) < 1 s, (b) < 20 s and < 2 GB, >= 20x the loop, identical ranks."""
    parts, met = [], True
    for line in text.splitlines():
        f = line.split()
        if len(f) == 12 and f[0] in ("a", "b") and f[9].endswith("x"):
            t, peak, target, speed, same = _num(f[4]), _num(f[5]), _num(f[6]), _num(f[9][:-1]), f[10]
            ok = t < target and speed >= 20 and same == "True" and (f[0] == "a" or peak < 2048)
            met &= ok
            parts.append(f"({f[0]}) {t:.2f} s, {peak:.0f} MB, {speed:.1f}x the loop, ranks equal {same}")
    return Measured("; ".join(parts), met) if parts else Measured("no result rows in the log")


def parse_spine(text: str) -> Measured:
    m = re.search(r"spine total wall time \((\d+) cores, from scratch\): ([\d.]+) s", text)
    if not m:
        return Measured("no total in the log")
    return Measured(f"{_num(m.group(2)):.0f} s wall on {m.group(1)} cores", _num(m.group(2)) <= 180)


def parse_syp(text: str) -> Measured:
    m = re.search(r"seeds x 2 classifiers: ([\d.]+) s CPU = ([\d.]+) s\s+wall", text)
    if not m:
        return Measured("no oracle total in the log")
    wall = _num(m.group(2))
    return Measured(f"oracle training of the default config: {wall:.0f} s wall on 2 cores "
                    f"({_num(m.group(1)):.0f} s CPU)", wall < 180)


def parse_speedup_table(text: str) -> Measured:
    """No threshold: the speed-ups of the table's ``speed-up`` column, as printed."""
    rows = _table_rows(text)
    for i, head in enumerate(rows):
        if "speed-up" in head:
            col = head.index("speed-up")
            got = [r for r in rows[i + 1 :] if len(r) == len(head) and r[col].endswith("x")]
            if got:
                return Measured("speed-up " + ", ".join(
                    f"{' '.join(r[:2])} {r[col]}" for r in got))
    return Measured("no speed-up column in the log")


BENCHES = (
    Bench("inference_vs_bare", "inference_vs_bare.py",
          "inference at >= 0.9 of a bare `model(x)` loop on ready tensors, every local "
          "architecture, CPU (issue 19 item 3)",
          "bench/results/inference_vs_bare.json", parse_json_results, 6),
    Bench("inference_vs_bare_cuda", "inference_vs_bare.py",
          "inference at >= 0.9 of a bare `model(x)` loop on ready tensors on a GPU, float16 "
          "autocast in both, images per second (issue 19 item 3)",
          "bench/results/cuda/inference_vs_bare.json", parse_json_results, 2,
          args=("--device", "cuda", "--out", "bench/results/cuda"), needs_gpu=True),
    Bench("inference_vs_bare_timm", "inference_vs_bare.py",
          "inference of timm models (sheet rows `source: timm`, their own preprocessing) at "
          ">= 0.9 of a bare `model(x)` loop on ready tensors, CPU",
          "bench/results/inference_vs_bare_timm.json", parse_json_results, 3,
          args=("--cases", "test_", "--repeats", "5", "--out",
                "bench/results/inference_vs_bare_timm")),
    Bench("pace_select", "pace_select.py",
          "PACE select, 10,000 x 128, automatic rule: <= 5 s on 2 cores, identical selections "
          "(issue 19 item 1)", "bench/results_pace_select.md", parse_target_lines, 4),
    Bench("laf_study_stream", "laf_study_stream.py",
          "LaF study job, 20 models x 100,000 inputs x 1,000 classes: <= 2 GB peak, time "
          "dominated by the methods (issue 19 item 2)", "bench/laf_study_stream.md",
          parse_laf_study_stream, 15),
    Bench("alphatrim_alpha_hat", "alphatrim_alpha_hat.py",
          "alpha-hat, 100 candidates, N = 4,000, B = 100, 13 levels: < 10 s (issue 19 item 4)",
          "bench/alphatrim_alpha_hat_results.md", parse_target_lines, 2),
    Bench("graph_cost", "graph_cost.py",
          "dry-run and no-op rerun <= 5 s, paper LaF dry-run <= 30 s, 10,000-model zoo <= 60 s "
          "and 2 GB (issue 23 item 4)", "bench/results/graph_cost.md", parse_graph_cost, 30),
    Bench("layout_wall", "layout_wall.py",
          "default run's spine (60 models from scratch) within 5 % of the layout before "
          "per-model jobs, wall time, same run (issue 23 item 1)",
          "bench/results/layout_wall.md", parse_target_lines, 12),
    Bench("methods_scorecard", "methods_scorecard.py",
          "every registered method on 10,000 x 1,000 x 20 models in < 2 s (issue 18 item 6)",
          "bench/results/methods_scorecard.md", parse_methods_scorecard, 8),
    Bench("methods_scorecard_cot", "methods_scorecard.py",
          "COT, COTT and CODA on 10,000 x 1,000 x 20 models in <= 2 s each (issue 35 item 2); "
          "the file also records the floors of the present algorithms",
          "bench/results/methods_scorecard_cot.md", parse_methods_scorecard, 8,
          args=("--only", "COT", "COTT", "CODA", "--out",
                "bench/results/methods_scorecard_cot.md")),
    Bench("methods_scorecard_default", "methods_scorecard.py",
          "every registered method on one test set of the default scorecard (20 models x 1,078 "
          "digits x 10 classes, budgets 10/20/40, 5 runs) in < 2 s: COT, COTT and CODA cheap "
          "enough to run by default (issue 18)",
          "bench/results/methods_scorecard_default.md", parse_methods_scorecard, 1,
          args=("--n", "1078", "--k", "10", "--d", "32", "--budgets", "10", "20", "40",
                "--runs", "5", "--emd-models", "0", "--what", "one test set of the default "
                "scorecard (config/config.yaml scorecard: digits zoos of 20 models)",
                "--out", "bench/results/methods_scorecard_default.md")),
    Bench("answer_coverage", "answer_coverage.py",
          "the answer's 90 % prediction intervals cover the true accuracy within 5 points on "
          "every zoo of the default run and on a prediction zoo (issue 33; reads the run in "
          "results/ of this checkout: run README command one first)",
          "bench/results/answer_coverage.md", parse_answer_coverage, 3,
          args=(".", "--names", "default run", "--out", "bench/results/answer_coverage")),
    Bench("metamorphic_memory", "metamorphic_memory.py",
          "peak memory of the streamed data_prepare and metamorphic steps independent of the "
          "dataset size (x1.1 at most from the smallest to the largest; issue 16)",
          "bench/results/metamorphic_memory.md", parse_metamorphic_memory, 12),
    Bench("laf_rank", "laf_rank.py",
          "LaF rank: (a) 10k x 30 x 10 < 1 s, (b) 100k x 20 x 1000 < 20 s and < 2 GB, >= 20x the "
          "per-class loop, identical ranks (issue 3)", "bench/results/laf_rank.log",
          parse_laf_rank, 10, prints_only=True),
    Bench("cluster_dryrun", "cluster_dryrun.py",
          "paper-scale LaF graph builds and dry-runs in < 60 s (issue 8)",
          "bench/results/cluster_dryrun.log", parse_target_lines, 3, prints_only=True),
    Bench("inference_spine_run", "inference_spine_run.py",
          "spine of the default run (data, shifts, zoo, inference) <= 180 s on 2 cores (issue 2)",
          "bench/results/inference_spine_run.log", parse_spine, 5, prints_only=True),
    Bench("syp_bench", "syp_bench.py",
          "SYP oracle training of the default configuration < 3 min on 2 cores (issue 5)",
          "bench/results/syp_bench.log", parse_syp, 5, prints_only=True),
    Bench("metamorphic_followups", "metamorphic_followups.py",
          "follow-ups per second, vectorised vs a per-image loop (issue 7: report, no threshold)",
          "bench/results/metamorphic_followups.log", parse_speedup_table, 1, prints_only=True),
    Bench("avx2_emulated", "avx2_emulated.py",
          "issue 22: with the layout fix no convolution gets a PyTorch channels_last tensor on a "
          "CPU without AVX-512 (emulated by qemu-user; shows the kernels, not the crash)",
          "bench/results/avx2_emulated.json", parse_json_results, 12),
    Bench("shifts_corruptions", "shifts_corruptions.py",
          "75 corruption sets vectorised vs a per-image loop (report, no threshold)",
          "bench/results/shifts_corruptions.log", parse_speedup_table, 5, prints_only=True),
)


# ---------------------------------------------------------------------------------------------
# running
# ---------------------------------------------------------------------------------------------


def git(*args: str) -> str:
    out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
    return out.stdout.strip()


def machine_line() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.platform()}"


def run(bench: Bench) -> int:
    """Run one benchmark in its own process; a print-only one's output goes to its log."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src") + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, str(BENCH / bench.script), *bench.args]
    dirty = "+dirty" if git("status", "--porcelain", "--", "src", "bench/*.py") else ""
    header = (
        f"# {bench.name} (bench/{bench.script}), run by bench/run.py\n"
        f"- command: {' '.join(['python', 'bench/' + bench.script, *bench.args])}\n"
        f"- machine: {machine_line()}\n"
        f"- commit {git('rev-parse', '--short', 'HEAD')}{dirty}, "
        f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n"
        f"- load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}\n\n"
    )
    print(f"running {bench.name} (about {bench.minutes:g} min on 2 cores) ...", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if bench.prints_only:
        log = REPO / bench.results
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(
            header + proc.stdout + (f"\n## stderr\n{proc.stderr[-4000:]}" if proc.returncode else "")
            + f"\n- exit status {proc.returncode}, {wall:.0f} s wall\n"
        )
    print(f"  {bench.name}: exit {proc.returncode}, {wall:.0f} s", flush=True)
    if proc.returncode:
        print(proc.stderr[-2000:], file=sys.stderr)
    return proc.returncode


# ---------------------------------------------------------------------------------------------
# the index
# ---------------------------------------------------------------------------------------------


def provenance(path: Path, text: str) -> str:
    """Machine, commit and date the results file states, else the commit that last changed it."""
    if path.suffix == ".json":
        m = json.loads(text).get("machine", {})
        return f"{m.get('cpu', '?')}; commit {m.get('commit', '?')}, {m.get('date', '?')}"
    commit = re.search(r"(?:commit|this tree):?\s+`?([0-9a-f]{7,40}(?:\+dirty)?)", text)
    date = re.search(r"(20\d\d-\d\d-\d\d(?: \d\d:\d\d(?: UTC)?)?)", text)
    cpu = re.search(r"(AMD [^,;\n]+|Intel[^,;\n]+|x86_64|aarch64|arm64)", text)
    last = git("log", "-1", "--format=%h on %cs", "--", str(path.relative_to(REPO)))
    last = f"file last committed in {last}" if last else "file not committed"
    if commit or date:
        return (f"{cpu.group(1).strip() if cpu else 'machine not stated'}; "
                f"commit {commit.group(1) if commit else 'not stated'}, "
                f"{date.group(1) if date else 'date not stated (' + last + ')'}")
    return f"not stated in the file; {last}"


def entry(bench: Bench) -> tuple[str, str, str, str]:
    """(value, met, provenance, link) of one benchmark, read from its results file."""
    path = REPO / bench.results
    link = f"[{path.name}]({path.relative_to(BENCH).as_posix()})"
    if not path.exists():
        return (f"not measured: no {bench.results}; run `python bench/run.py {bench.name}`",
                "—", "—", "—")
    text = path.read_text()
    try:
        got = bench.parse(text)
    except (ValueError, IndexError, KeyError, json.JSONDecodeError) as exc:
        got = Measured(f"could not read the figures ({type(exc).__name__}: {exc}); see the file")
    if path.suffix == ".json" and path.with_suffix(".md").exists():
        link = f"[{path.with_suffix('.md').name}]({path.with_suffix('.md').relative_to(BENCH).as_posix()})"
    met = {True: "yes", False: "**no**", None: "—"}[got.met]
    return got.value.replace("|", "/"), met, provenance(path, text), link


def write_index(ran: dict[str, int]) -> None:
    lines = [
        "# Benchmarks: targets and measured values",
        "",
        "Generated by `python bench/run.py` (do not edit by hand) at commit "
        f"{git('rev-parse', '--short', 'HEAD')}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, on {machine_line()}. "
        "Each row reads its benchmark's results file as it stands; `measured` says on which "
        "machine, at which commit and when that file was written (a benchmark not rerun by "
        "this call keeps its older figures). Absolute times depend on the machine and its "
        "load; each benchmark compares against its baseline in the same run.",
        "",
        "| benchmark | target | measured value | met | measured | results | this call |",
        "|---|---|---|---|---|---|---|",
    ]
    for b in BENCHES:
        value, met, prov, link = entry(b)
        status = ("ran" if ran[b.name] == 0 else f"**failed (exit {ran[b.name]})**") if b.name in ran else "not run"
        lines.append(f"| `{b.name}` | {b.target} | {value} | {met} | {prov} | {link} | {status} |")
    INDEX.write_text("\n".join(lines) + "\n")
    print(f"wrote {INDEX}")
    write_readme_block()


README = REPO / "README.md"
README_BEGIN, README_END = "<!-- bench:begin -->", "<!-- bench:end -->"
README_VALUE_CHARS = 400  # longer measured values stay in bench/results.md only


def write_readme_block() -> None:
    """README's speed block: each measured benchmark, met or not, and its figures when short,
    read from the results files as the index is (so README never states a typed number)."""
    text = README.read_text()
    if README_BEGIN not in text or README_END not in text:
        return
    rows = [f"Generated by `python bench/run.py` at {git('rev-parse', '--short', 'HEAD')} "
            "from the results files; machine, commit and date of each in "
            "[bench/results.md](bench/results.md).", ""]
    for b in BENCHES:
        value, met, prov, _link = entry(b)
        if met == "—" and value.startswith("not measured"):
            continue
        # a long value: its first statement (each parser puts the target's figure first)
        short = value if len(value) <= README_VALUE_CHARS else value.split("; ")[0] + "; more in bench/results.md"
        rows.append(f"- `{b.name}`, target met: {met.strip('*')}. {short}")
    head, rest = text.split(README_BEGIN, 1)
    tail = rest.split(README_END, 1)[1]
    README.write_text(head + README_BEGIN + "\n" + "\n".join(rows) + "\n" + README_END + tail)
    print(f"wrote {README} ({README_BEGIN})")


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    ap.add_argument("--index", action="store_true", help="run nothing, only regenerate the index")
    ap.add_argument("--skip-slow", action="store_true", help="leave out benchmarks over 5 min")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args(argv)
    known = {b.name: b for b in BENCHES}
    if args.list:
        for b in BENCHES:
            print(f"{b.name:24s} ~{b.minutes:g} min  {b.target}")
        return 0
    unknown = [n for n in args.names if n not in known]
    if unknown:
        ap.error(f"unknown benchmark(s) {unknown}; known: {sorted(known)}")
    todo = [] if args.index else [known[n] for n in args.names] or list(BENCHES)
    if args.skip_slow:
        todo = [b for b in todo if not b.slow]
    if any(b.needs_gpu for b in todo) and not _cuda():
        print("no CUDA device: leaving out " + ", ".join(b.name for b in todo if b.needs_gpu))
        todo = [b for b in todo if not b.needs_gpu or args.names]
    ran = {b.name: run(b) for b in todo}
    write_index(ran)
    return max(ran.values(), default=0)


if __name__ == "__main__":
    raise SystemExit(main())
