"""Benchmark of the LaF study job (load logits, LaF and every baseline) with streamed softmax.

Issue 19 item 2 / issue 15: the study used to stack every model's softmax, (n, m, K) float32
(8 GB at 20 models x 100,000 inputs x 1,000 classes), before any method ran. Now one model's
outputs are in memory at a time. This script, in one run:

1. writes synthetic inference artefacts (one logits file per model, as the workflow does) for a
   zoo of ``--models`` models on test sets of ``--inputs`` inputs and ``--classes`` classes;
2. runs ``labelfree.laf.run.run_study`` with the study's default parameters (config schema
   defaults: 50 repetitions, CES 10 per guide, Table A1 budgets, RQ4) in a fresh subprocess,
   once with this tree's code and once with "today's code" (the tree at ``--base``, exported by
   ``git archive``) where it fits in memory, and records wall time, peak RSS
   (``ru_maxrss``) and the study's own timings (loading vs methods);
3. checks that both wrote identical raw results (every file, timing columns left out).

    python bench/laf_study_stream.py                         # compare + full size, writes results
    python bench/laf_study_stream.py --sizes 20x3000x100     # one quick comparison

Results go to ``bench/laf_study_stream.md`` with the machine and the commit.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "laf_study_stream.md"
BASE = "e447a7b"  # the commit before streaming ("today's code" of issue 19)
RAW = ["metrics.csv.gz", "testsets.csv", "models.csv", "rq4.csv", "ces_guides.npz"]


def make_zoo(root: Path, n: int, m: int, K: int, testsets: list[str]) -> list[dict]:
    """Logits files of n models (accuracies 0.45-0.95) on each test set, and the labels."""
    from labelfree import store

    specs = []
    for t_i, name in enumerate(testsets):
        r = np.random.default_rng([t_i, m, K])
        y = r.integers(0, K, m)
        lab = root / "testsets" / f"{name}.npz"
        store.write_image_set(lab, np.zeros((m, 1, 1, 1), np.uint8), y)
        paths = []
        for j, acc in enumerate(np.linspace(0.45, 0.95, n) - 0.15 * t_i):
            rj = np.random.default_rng([t_i, j, m, K])
            right = rj.random(m) < acc
            pred = np.where(right, y, (y + rj.integers(1, K, m)) % K)
            logits = rj.standard_normal((m, K), dtype=np.float32)
            logits[np.arange(m), pred] += 3.0
            path = root / "infer" / name / f"m{j}.npz"
            store.write_inference(path, {name: {"logits": logits}})
            # the layout before per-model group files (what the code at --base reads)
            np.savez(root / "infer" / name / f"m{j}.old.npz", logits=logits)
            del logits
            paths.append(str(path))
        origin = "id" if name == "id" else "natural" if name.startswith("natural") else "corruptions"
        specs.append({"name": name, "infer": paths, "labels": str(lab), "origin": origin})
    return specs


def old_layout(specs: list[dict]) -> list[dict]:
    """The same zoo as the code at --base reads it: one plain ``logits`` npz per model and set."""
    return [{**s, "infer": [p.replace(".npz", ".old.npz") for p in s["infer"]]} for s in specs]


def child(args: dict) -> None:
    """Run one study in this process (imports whichever labelfree PYTHONPATH gives) and print
    a JSON line with wall time and peak RSS."""
    from labelfree.config import validate_config
    from labelfree.laf.run import SetInputs, StudyParams, run_study

    cfg = validate_config({}, REPO / "config" / "schema.yaml")["laf"]
    params = StudyParams.from_config(cfg)
    # the set's workflow group (SetInputs.origin), for the code versions that take it
    takes_origin = "origin" in getattr(SetInputs, "__dataclass_fields__", {})
    sets = [
        SetInputs(s["name"], tuple(s["infer"]), s["labels"],
                  *([s["origin"]] if takes_origin else []))
        for s in args["sets"]
    ]
    names = [f"m{j}" for j in range(len(sets[0].infer))]
    t0 = time.perf_counter()
    run_study("bench", "d", names, sets, params, 0, args["out"])
    wall = time.perf_counter() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"wall_s": wall, "peak_rss_mb": rss_mb}))


def run_child(src: Path, sets: list[dict], out: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    arg = json.dumps({"sets": sets, "out": str(out)})
    proc = subprocess.run(
        [sys.executable, __file__, "--child", arg], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"}
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    import pandas as pd

    ts = pd.read_csv(out / "testsets.csv")
    times = {c[5:]: float(ts[c].sum()) for c in ts.columns if c.startswith("time_")}
    res["times"] = times
    return res


def raw_identical(a: Path, b: Path) -> tuple[bool, list[str]]:
    """Every raw file equal, timing columns (time_*) of testsets.csv left out."""
    import pandas as pd

    diff = []
    for name in RAW:
        pa, pb = a / name, b / name
        if name.endswith(".npz"):
            za, zb = np.load(pa), np.load(pb)
            same = sorted(za.files) == sorted(zb.files) and all(
                np.array_equal(za[k], zb[k], equal_nan=True) for k in za.files
            )
        elif name == "testsets.csv":
            da, db = pd.read_csv(pa), pd.read_csv(pb)
            keep = [c for c in da.columns if not c.startswith("time_")]
            same = keep == [c for c in db.columns if not c.startswith("time_")] and da[keep].equals(
                db[keep]
            )
        elif name.endswith(".gz"):
            same = gzip.decompress(pa.read_bytes()) == gzip.decompress(pb.read_bytes())
        else:
            same = pa.read_bytes() == pb.read_bytes()
        if not same:
            diff.append(name)
    return not diff, diff


def machine() -> str:
    from labelfree.provenance import cpu_model

    cpu = cpu_model()
    try:
        mem = Path("/proc/meminfo").read_text().splitlines()[0].split()[1]
        mem_gb = int(mem) / 1024**2
    except OSError:
        mem_gb = float("nan")
    load = os.getloadavg()[0]
    return f"{cpu}, {os.cpu_count()} cores, {mem_gb:.0f} GB RAM, load average {load:.1f} at start"


def commit() -> str:
    def git(*a):
        return subprocess.run(
            ["git", "-C", str(REPO), *a], capture_output=True, text=True
        ).stdout.strip()

    dirty = " (uncommitted changes)" if git("status", "--porcelain", "src", "bench") else ""
    return git("rev-parse", "--short", "HEAD") + dirty


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument(
        "--sizes",
        nargs="+",
        default=["20x5000x100", "20x100000x1000"],
        help="models x inputs x classes, each run with both codes unless too large for the old",
    )
    ap.add_argument("--testsets", nargs="+", default=["id", "gaussian_noise-5"])
    ap.add_argument("--big-testsets", nargs="+", default=["id"], help="test sets at >= 1e8 cells")
    ap.add_argument("--old-limit-gb", type=float, default=6.0, help="skip the old code above")
    ap.add_argument("--base", default=BASE)
    ap.add_argument("--scratch", default=None, help="directory for the zoo (default: a temp dir)")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    if a.child:
        child(json.loads(a.child))
        return
    head = machine()
    rows = []
    with tempfile.TemporaryDirectory(dir=a.scratch, prefix="laf_stream_") as tmp:
        tmp = Path(tmp)
        old_src = tmp / "old"
        old_src.mkdir()
        tar = subprocess.run(
            ["git", "-C", str(REPO), "archive", a.base, "src"], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(old_src)], input=tar, check=True)
        for size in a.sizes:
            n, m, K = (int(v) for v in size.split("x"))
            sets = a.big_testsets if m * K >= 10**8 else a.testsets
            t0 = time.perf_counter()
            zoo = make_zoo(tmp / size, n, m, K, sets)
            gen = time.perf_counter() - t0
            # Today's code holds every model's logits and their float32 softmax: 2 x n m K x 4 B.
            old_gb = 2 * n * m * K * 4 / 1e9
            res = {"size": size, "sets": sets, "gen_s": gen, "old_need_gb": old_gb}
            res["new"] = run_child(REPO / "src", zoo, tmp / size / "new")
            if old_gb <= a.old_limit_gb:
                res["old"] = run_child(old_src / "src", old_layout(zoo), tmp / size / "old")
                if "error" not in res["old"] and "error" not in res["new"]:
                    res["identical"], res["differ"] = raw_identical(
                        tmp / size / "new", tmp / size / "old"
                    )
            print(json.dumps(res), flush=True)
            rows.append(res)
            shutil.rmtree(tmp / size / "infer")
    if not a.no_write:
        write_results(rows, head)


def _fmt(r: dict | None) -> tuple[str, ...]:
    if r is None:
        return "not run", "", "", "", ""
    if "error" in r:
        return r["error"], "", "", "", ""
    t = r["times"]
    load = t.get("load", float("nan"))
    methods = sum(v for k, v in t.items() if k != "load")
    rest = r["wall_s"] - methods - (0.0 if np.isnan(load) else load)
    return (
        f"{r['wall_s']:.1f}",
        f"{r['peak_rss_mb']:.0f}",
        "not separated" if np.isnan(load) else f"{load:.1f}",
        f"{methods:.1f}",
        f"{rest:.1f}",
    )


def write_results(rows: list[dict], head: str) -> None:
    lines = [
        "# LaF study job: streamed softmax vs the stacked (n, m, K) array",
        "",
        "Generated by `python bench/laf_study_stream.py` (do not edit by hand).",
        "",
        f"- machine: {head}",
        f"- commit: {commit()}; today's code = `{BASE}` (before streaming), same run",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        "- job: `run_study` with the config schema's `laf` defaults (LaF + 2 ablations, CRC x 2,",
        "  Random and SDS 50 repetitions x 33 budgets + Table A1 budgets on `id`, CES 10",
        "  repetitions x 20 guides, RQ4 on `id`), one subprocess per run, BLAS on 1 thread;",
        "  peak = `ru_maxrss` of that process; load = reading logits and softmax (first pass and",
        "  CES guides); methods = the study's per-method timings (LaF, ablations, CRC, Random,",
        "  SDS, CES net of guide loading); rest = wall - load - methods: RQ4's LaF fits on",
        "  subsets (untimed by the study), metrics rows and writing the raw files.",
        "",
        "| models x inputs x classes | test sets | code | wall s | peak RSS MB | load s "
        "| methods s | rest s | raw results identical |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ident = {True: "yes", False: f"NO: {r.get('differ')}"}.get(r.get("identical"), "—")
        for code in ("old", "new"):
            if code == "old" and "old" not in r:
                cells = (f"not run (needs ~{r['old_need_gb']:.0f} GB)", "", "", "", "")
            else:
                cells = _fmt(r.get(code))
            label = "today's (stacked)" if code == "old" else "streamed"
            lines.append(
                f"| {r['size']} | {', '.join(r['sets'])} | {label} | "
                + " | ".join(cells)
                + f" | {ident if code == 'new' else ''} |"
            )
    RESULTS.write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
