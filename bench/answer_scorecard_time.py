"""Benchmark: a zoo's scorecard and answer jobs, before and after a change, on copies of one
result tree.

    nice python bench/answer_scorecard_time.py run --tree /tmp/dr2 --before /tmp/base \\
        --after . --zoos pace_digits digits laf_tight laf_spread
    python bench/answer_scorecard_time.py collect --before-dir /tmp/b --after-dir /tmp/a \\
        --before-label main --after-label answerfast --note "..."

``run`` copies ``--tree`` twice (``cp -a``, mtimes kept) and runs two pipelines at once, the
before checkout on the first copy and the after checkout on the second, each going through the
zoos in the same order: per zoo ``--forcerun scorecard answer`` on the zoo's ``answer.csv`` (its
scorecard job, then its answer job; ``PYTHONPATH`` = that checkout's ``src``). Both pipelines run
side by side, so on a shared machine they see the same load; CPU seconds are the comparison that
load does not move. A before checkout whose answer rule has no ``benchmark:`` file gets none
timed: add one there (it changes no output). ``collect`` reads the jobs' Snakemake benchmark
files (wall seconds, CPU seconds) and compares the zoo's answer files and scorecard csv tables of
the two copies byte for byte. Results go to ``bench/results/answer_scorecard_time.md``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

from labelfree.provenance import cpu_model

OUT = Path(__file__).resolve().parent / "results" / "answer_scorecard_time.md"
ANSWER_FILES = ("answer.csv", "answer.md", "label-these.csv")


def _pipeline(checkout: Path, tree: Path, zoos: list[str]) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(checkout.resolve() / "src"))
    jobs = " && ".join(
        f"snakemake --snakefile {checkout.resolve() / 'Snakefile'} --directory {tree} --cores 1 "
        f"--rerun-triggers mtime --rerun-incomplete --forcerun scorecard answer -- "
        f"results/answer/{z}/answer.csv" for z in zoos)
    return subprocess.Popen(["bash", "-c", jobs], env=env, cwd=checkout,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _bench(tree: Path, rule: str, zoo: str) -> dict[str, float] | None:
    f = tree / "benchmarks" / rule / f"{zoo}.tsv"
    if not f.exists():
        return None
    head, row = f.read_text().splitlines()[:2]
    d = dict(zip(head.split("\t"), row.split("\t"), strict=True))
    return {"wall": float(d["s"]), "cpu": float(d["cpu_time"])}


def _outputs(tree: Path, zoo: str) -> dict[str, bytes]:
    files = {f"answer/{n}": tree / "results" / "answer" / zoo / n for n in ANSWER_FILES}
    files.update({f"scorecard/{p.name}": p for p in
                  (tree / "results" / "scorecard" / "tables").glob(f"extra-{zoo}-*.csv")})
    return {k: p.read_bytes() for k, p in sorted(files.items()) if p.exists()}


def collect(a: argparse.Namespace) -> None:
    rows, tot = [], {"b": [0.0, 0.0], "n": [0.0, 0.0]}
    for zoo in a.zoos:
        cells = []
        for rule in ("scorecard", "answer"):
            b, n = _bench(a.before_dir, rule, zoo), _bench(a.after_dir, rule, zoo)
            if b is None or n is None:
                cells.append("not timed")
                continue
            for k, v in (("b", b), ("n", n)):
                tot[k][0] += v["wall"]
                tot[k][1] += v["cpu"]
            cells.append(f"{b['wall']:.1f} / {b['cpu']:.1f} -> {n['wall']:.1f} / {n['cpu']:.1f} "
                         f"(CPU x{n['cpu'] / b['cpu']:.2f})")
        ob, on = _outputs(a.before_dir, zoo), _outputs(a.after_dir, zoo)
        diff = sorted(set(ob) ^ set(on) | {k for k in ob if k in on and on[k] != ob[k]})
        same = f"{sum(1 for k in ob if on.get(k) == ob[k])} identical"
        rows.append(f"| {zoo} | {cells[0]} | {cells[1]} | {same}"
                    + (f", differ: {', '.join(diff)}" if diff else "") + " |")
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# bench/answer_scorecard_time.py results", "",
        f"- machine: {cpu_model()}, {os.cpu_count()} cores visible, {platform.system()} "
        f"{platform.release()}; date: {date}",
        f"- before: {a.before_label}; after: {a.after_label}",
        "- cells: job wall s / CPU s of the job's Snakemake benchmark file, before -> after",
        "- outputs: the zoo's answer.csv, answer.md, label-these.csv and scorecard csv tables, "
        "byte for byte",
    ] + ([f"- {a.note}"] if a.note else []) + [
        "", "| zoo | scorecard | answer | outputs |", "|---|---|---|---|", *rows, "",
        f"Sum of the timed jobs: wall {tot['b'][0]:.1f} -> {tot['n'][0]:.1f} s, CPU "
        f"{tot['b'][1]:.1f} -> {tot['n'][1]:.1f} s.", ""]
    a.out.write_text("\n".join(lines))
    print("\n".join(lines))


def run(a: argparse.Namespace) -> None:
    dirs = {}
    for side in ("before", "after"):
        d = Path(f"{a.scratch}-{side}")
        if d.exists():
            shutil.rmtree(d)
        subprocess.run(["cp", "-a", str(a.tree), str(d)], check=True)
        dirs[side] = d
    procs = [_pipeline(a.before, dirs["before"], a.zoos), _pipeline(a.after, dirs["after"], a.zoos)]
    codes = [p.wait() for p in procs]
    print(f"before rc {codes[0]}, after rc {codes[1]}; trees {dirs['before']} {dirs['after']}")
    if any(codes):
        sys.exit(1)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tree", type=Path, required=True)
    r.add_argument("--before", type=Path, required=True)
    r.add_argument("--after", type=Path, required=True)
    r.add_argument("--scratch", default="/tmp/answer-scorecard-time")
    r.add_argument("--zoos", nargs="+", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--before-dir", type=Path, required=True)
    c.add_argument("--after-dir", type=Path, required=True)
    c.add_argument("--before-label", default="before")
    c.add_argument("--after-label", default="after")
    c.add_argument("--note", default="")
    c.add_argument("--out", type=Path, default=OUT)
    c.add_argument("--zoos", nargs="+",
                   default=["pace_digits", "digits", "laf_tight", "laf_spread"])
    a = p.parse_args()
    run(a) if a.cmd == "run" else collect(a)


if __name__ == "__main__":
    main()
