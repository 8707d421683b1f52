"""Benchmark: the scorecard job of every zoo, before and after a change, on copies of one result tree.

    nice python bench/scorecard_zoo_time.py run --tree /work/after/default \\
        --before /path/to/old/checkout --after . --zoos digits syp     # interleaved jobs
    python bench/scorecard_zoo_time.py collect --before-dir /tmp/a --after-dir /tmp/b \\
        --before-label r2 --after-label score --note "..."             # tables of two finished runs

``run`` copies ``--tree`` twice (``cp -a``, mtimes kept), then per zoo runs the ``scorecard`` job
of the before checkout on the first copy and of the after checkout on the second, one after the
other (interleaved, so both see the same load), each through its own Snakefile with
``--forcerun scorecard`` (``PYTHONPATH`` = that checkout's ``src``); ``--threads N`` runs the
after jobs with ``--cores N --set-threads scorecard=N``. ``collect`` reads the jobs'
Snakemake benchmark files (wall seconds, CPU seconds, mean load) and compares every scorecard
csv table of the two copies byte for byte, and the method-outputs npz member by member. Results go to ``bench/results/scorecard_zoo_time.md``.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from labelfree.provenance import cpu_model

OUT = Path(__file__).resolve().parent / "results" / "scorecard_zoo_time.md"
ZOOS = ["alphatrim_backbone", "digits", "laf_spread", "laf_tight", "metamorphic_biased",
        "metamorphic_multilabel", "metamorphic_shortcut", "metamorphic_unbiased", "pace_digits",
        "syp"]


def _job(checkout: Path, tree: Path, zoo: str, threads: int = 1) -> int:
    env = dict(os.environ, PYTHONPATH=str(checkout.resolve() / "src"))
    cmd = ["snakemake", "--snakefile", str(checkout.resolve() / "Snakefile"), "--directory",
           str(tree), "--cores", str(threads), "--rerun-triggers", "mtime", "--forcerun",
           "scorecard"] + (["--set-threads", f"scorecard={threads}"] if threads > 1 else []) + [
           "--", f"results/scorecard/tables/extra-{zoo}-estimation.csv"]
    return subprocess.run(cmd, env=env, cwd=checkout, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode


def _bench(tree: Path, zoo: str, since: float = 0.0) -> dict[str, float] | None:
    """The job's benchmark row; None when missing or not rerun since ``since`` (a copy keeps
    the tree's own files of the zoos not yet rerun)."""
    f = tree / "benchmarks" / "scorecard" / f"{zoo}.tsv"
    if not f.exists() or f.stat().st_mtime < since:
        return None
    head, row = f.read_text().splitlines()[:2]
    d = dict(zip(head.split("\t"), row.split("\t"), strict=True))
    return {"wall": float(d["s"]), "cpu": float(d["cpu_time"]), "load": float(d["mean_load"])}


def _tables(tree: Path, zoo: str) -> dict[str, bytes]:
    """The zoo's csv tables, and its method-outputs npz member by member (an npz is a zip whose
    entries carry their write time, so the members' bytes are compared, not the file's)."""
    out = {p.name: p.read_bytes()
           for p in sorted((tree / "results" / "scorecard" / "tables").glob(f"extra-{zoo}-*.csv"))}
    npz = tree / "results" / "scorecard" / "method-outputs" / f"{zoo}.npz"
    if npz.exists():
        with zipfile.ZipFile(npz) as z:
            out.update({f"{npz.name}:{n}": z.read(n) for n in sorted(z.namelist())})
    return out


def collect(a: argparse.Namespace) -> None:
    rows = []
    for zoo in a.zoos:
        b, n = _bench(a.before_dir, zoo, a.since), _bench(a.after_dir, zoo, a.since)
        if b is None or n is None:
            continue
        tb, tn = _tables(a.before_dir, zoo), _tables(a.after_dir, zoo)
        same = [k for k in tb if tn.get(k) == tb[k]]
        diff = sorted(set(tb) ^ set(tn) | {k for k in tb if k in tn and tn[k] != tb[k]})
        rows.append((zoo, b, n, f"{len(same)} identical" + (f", differ: {', '.join(diff)}"
                                                             if diff else "")))
    date = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# bench/scorecard_zoo_time.py results", "",
        f"- machine: {cpu_model()}, {os.cpu_count()} cores visible, {platform.system()} "
        f"{platform.release()}; date: {date}",
        f"- before: {a.before_label}; after: {a.after_label}",
        "- wall / cpu: the scorecard job's Snakemake benchmark file (seconds: job wall, CPU of the "
        "job's processes), load: its mean load (percent of one core)",
        "- tables: the zoo's scorecard csv tables byte for byte, and its method-outputs npz member "
        "by member (its zip entries carry their write time), before vs after",
    ] + ([f"- {a.note}"] if a.note else []) + [
        "",
        "| zoo | wall before s | wall after s | wall ratio | cpu before s | cpu after s | cpu ratio "
        "| load before | load after | tables |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for zoo, b, n, tables in rows:
        lines.append(f"| {zoo} | {b['wall']:.1f} | {n['wall']:.1f} | {n['wall'] / b['wall']:.2f} "
                     f"| {b['cpu']:.1f} | {n['cpu']:.1f} | {n['cpu'] / max(b['cpu'], 1e-9):.2f} "
                     f"| {b['load']:.0f} | {n['load']:.0f} | {tables} |")
    a.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def run(a: argparse.Namespace) -> None:
    a.before_dir, a.after_dir = a.work / "before", a.work / "after"
    a.since = datetime.datetime.now().timestamp()
    a.work.mkdir(parents=True, exist_ok=True)
    for d in (a.before_dir, a.after_dir):
        if d.exists():
            shutil.rmtree(d)
        subprocess.run(["cp", "-a", str(a.tree), str(d)], check=True)
    for zoo in a.zoos:
        for checkout, d, t in ((a.before, a.before_dir, 1), (a.after, a.after_dir, a.threads)):
            rc = _job(checkout, d, zoo, t)
            print(f"{zoo} {checkout}: rc {rc}", file=sys.stderr, flush=True)
    a.note = a.note or "jobs interleaved per zoo (before, then after), same machine"
    collect(a)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tree", type=Path, required=True, help="finished result tree (copied)")
    r.add_argument("--before", type=Path, required=True, help="checkout before the change")
    r.add_argument("--after", type=Path, default=Path("."), help="checkout after the change")
    r.add_argument("--work", type=Path, default=Path("/tmp/scorecard_zoo_time"))
    r.add_argument("--threads", type=int, default=1,
                   help="threads of the after checkout's scorecard jobs (--set-threads)")
    c = sub.add_parser("collect")
    c.add_argument("--before-dir", type=Path, required=True)
    c.add_argument("--after-dir", type=Path, required=True)
    c.add_argument("--since", type=lambda t: datetime.datetime.fromisoformat(t).timestamp(),
                   default=0.0, help="ISO time: only jobs rerun after it")
    for p in (r, c):
        p.add_argument("--zoos", nargs="+", default=ZOOS)
        p.add_argument("--before-label", default="before")
        p.add_argument("--after-label", default="after")
        p.add_argument("--note", default="")
        p.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    run(a) if a.cmd == "run" else collect(a)


if __name__ == "__main__":
    main()
