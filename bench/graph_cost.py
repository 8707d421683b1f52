"""Graph cost of the workflow (issue 23, item 4): dry-run and no-op rerun times and peak memory,
this tree beside a baseline commit (default e447a7b, the layout before per-model jobs), in the
same run on the same machine.

Cases (each a fresh `snakemake --dry-run` process in a scratch directory):

- default: config/config.yaml, nothing built yet;
- noop: config/config.yaml with every output present (empty files made from `--summary`, then
  `--touch` in job order), i.e. the check a rerun with nothing to do makes;
- paper_laf: config/paper/laf-cifar10.yaml (30 models, one per job in this tree);
- zoo10k: .test/config/config.yaml (the smoke config) with the `digits` zoo replaced by 10,000 MLPs (a grid of seeds), one
  model per job in this tree (`bundle: model`); the baseline has one job per zoo.

For every case: wall time, CPU time (user + sys of the snakemake process and its children) and
peak RSS (os.wait4). Writes a markdown table with the machine, load average and commits.

    python bench/graph_cost.py [--cases default noop paper_laf zoo10k] [--baseline e447a7b]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))
CASES = ("default", "noop", "paper_laf", "zoo10k")


def run_timed(
    cmd: list[str], cwd: Path, env: dict[str, str], timeout: float = 1e9
) -> tuple[float, float, float, int]:
    """Wall s, CPU s (user + sys), peak RSS MB and return code of one process tree; a process
    still running after ``timeout`` s is killed (return code -9)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    _, status, usage = os.wait4(proc.pid, 0)
    timer.cancel()
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode != 0:
        sys.stderr.write(err[-3000:])
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode


def _create_outputs(base: list[str], work: Path, env: dict[str, str]) -> None:
    """Every output of the run as an empty file, then `--touch` in job order (inputs older than
    outputs), with no job run: what a finished run looks like to the next dry-run."""
    summary = subprocess.run([*base, "--summary"], cwd=work, env=env, capture_output=True,
                             text=True, check=True).stdout
    for line in summary.splitlines()[1:]:
        path = line.split("\t", 1)[0].strip()
        if path and not path.startswith(("/", "..")):
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).touch()
    subprocess.run([*base, "--touch", "--quiet"], cwd=work, env=env, capture_output=True,
                   check=True)


def _zoo10k_config(tree: Path, out: Path, per_model: bool) -> Path:
    # the smoke config: .test/config/config.yaml since it moved there, config/smoke.yaml before
    smoke = tree / ".test" / "config" / "config.yaml"
    cfg = yaml.safe_load((smoke if smoke.exists() else tree / "config" / "smoke.yaml").read_text())
    cfg["zoos"]["digits"]["grid"] = [
        {"arch": "mlp", "width": 16, "epochs": 1, "batch_size": 32, "seed": list(range(10_000))}
    ]
    if per_model:
        cfg["zoos"]["digits"]["bundle"] = "model"
    out.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return out


def measure(
    tree: Path, case: str, scratch: Path, per_model: bool, timeout: float
) -> dict[str, float]:
    """Run one case against the Snakefile of ``tree``; return its figures."""
    work = scratch / f"{tree.name}-{case}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    if case in ("default", "noop"):
        cfg = tree / "config" / "config.yaml"
    elif case == "paper_laf":
        cfg = tree / "config" / "paper" / "laf-cifar10.yaml"
    else:
        cfg = _zoo10k_config(tree, scratch / f"{tree.name}-zoo10k.yaml", per_model)
    base = [SNAKEMAKE, "-s", str(tree / "Snakefile"), "-d", str(work), "--configfile", str(cfg),
            "--cores", "2"]
    if case == "noop":
        _create_outputs(base, work, env)
    wall, cpu, rss, rc = run_timed([*base, "--dry-run", "--quiet"], work, env, timeout)
    n_files = sum(1 for p in work.rglob("*") if p.is_file() and ".snakemake" not in p.parts)
    shutil.rmtree(work, ignore_errors=True)
    return {"wall": wall, "cpu": cpu, "rss": rss, "rc": rc, "files": n_files}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    ap.add_argument("--baseline", default="e447a7b", help="commit of today's layout")
    ap.add_argument("--timeout", type=float, default=900, help="s per dry-run, then killed")
    ap.add_argument("--layouts", nargs="+", default=["baseline", "this tree"],
                    choices=["baseline", "this tree"])
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "graph_cost.md"))
    args = ap.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="graph-cost-"))
    baseline = scratch / "baseline"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(baseline),
                    args.baseline], check=True, capture_output=True)
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    rows = []
    try:
        for case in args.cases:
            for label, tree, per_model in (("baseline", baseline, False), ("this tree", REPO, True)):
                if label not in args.layouts:
                    continue
                load = os.getloadavg()[0]
                r = measure(tree, case, scratch, per_model, args.timeout)
                rows.append((case, label, r, load))
                print(f"{case:10s} {label:10s} wall {r['wall']:7.1f} s  cpu {r['cpu']:7.1f} s  "
                      f"rss {r['rss']:7.0f} MB  rc {r['rc']}  load {load:.1f}", flush=True)
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(baseline)],
                       capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    from labelfree.provenance import cpu_model

    lines = [
        "# Graph cost (bench/graph_cost.py)",
        "",
        f"Machine: {cpu_model()}, {os.cpu_count()} cores, {platform.platform()}; "
        f"this tree {head}{' (+ uncommitted changes)' if dirty else ''}, baseline "
        f"{args.baseline}; `snakemake --dry-run --cores 2`. Wall time depends on the machine's "
        "load (shown per row); CPU time (user + sys) is what an idle machine would see.",
        "",
        "rc -9: killed after the timeout (the figures are then lower bounds).",
        "",
        "| case | layout | wall s | CPU s | peak RSS MB | load avg | rc |",
        "|---|---|---|---|---|---|---|",
    ]
    for case, label, r, load in rows:
        lines.append(f"| {case} | {label} | {r['wall']:.1f} | {r['cpu']:.1f} | {r['rss']:.0f} | "
                     f"{load:.1f} | {r['rc']} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
