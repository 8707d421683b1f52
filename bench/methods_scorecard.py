"""Benchmark: every registered method on 10,000 inputs x 1,000 classes x 20 models (issue 18 item 6).

    nice -n 19 python bench/methods_scorecard.py                 # all but COT, COTT, CODA at full size
    nice -n 19 python bench/methods_scorecard.py --all              # also COT, COTT, CODA
    python bench/methods_scorecard.py --all --n 2000 --k 100 --out bench/x.md   # another size

Probabilities are float32 (M, N, K) = 800 MB for the default size, from a seeded generator in
which model m is right with probability 0.5 + 0.02 m; a source set of the same size feeds the
methods that need one; features (N, D=256) per model feed Dispersion and FD. Each method is timed
once through the registry (wall clock, ``time.perf_counter``), after a warm-up call on a tiny zoo.
Results are written to ``bench/methods_scorecard_results.md`` with the machine, commit, load and the
threads the methods may use (``labelfree.methods._common.n_workers``: models on threads).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

from labelfree.methods import call, methods, missing
from labelfree.methods._common import n_workers
from labelfree.provenance import cpu_model

SLOW = {"COT", "COTT", "CODA"}
# what bounds a method that misses 2 s (statements of cost, no figures: those are in the table)
WHY = {
    "COT": "one exact n x K transport per model (POT ot.emd network simplex)",
    "COTT": "two exact transports per model (source threshold and target)",
    "NuclearNorm": "per model a K x K Gram (N K^2 multiply-adds) and its float64 eigenvalues",
    "FD": "per model two D x D covariances and two D x D eigendecompositions",
    "PACE": "HDBSCAN of the N x D guide features (labelfree.pace)",
    "PACE+labels": "PACE's selection (HDBSCAN)",
    "CODA": "set-up: M products (N x K)(K x K) for the class marginals; then per label the EIG "
            "of every disagreement item",
    "ModelPicker": "sequential stream: one step per input for the 320 tuning runs",
    "LaF": "labelfree.laf.core.rank",
}
OUT = Path(__file__).with_name("methods_scorecard_results.md")


def make_zoo(M: int, N: int, K: int, D: int, seed: int) -> tuple[np.ndarray, np.ndarray, list]:
    """(M, N, K) float32 probabilities, labels (N,), features list of M (N, D) float32."""
    r = np.random.default_rng(seed)
    y = r.integers(0, K, N)
    P = np.empty((M, N, K), dtype=np.float32)
    for m in range(M):
        z = r.standard_normal((N, K), dtype=np.float32)
        right = r.random(N) < 0.5 + 0.02 * m
        cls = np.where(right, y, r.integers(0, K, N))
        z[np.arange(N), cls] += 4.0
        z -= z.max(axis=1, keepdims=True)
        np.exp(z, out=z)
        z /= z.sum(axis=1, keepdims=True)
        P[m] = z
    feats = [r.standard_normal((N, D), dtype=np.float32) + y[:, None] % 7 for _ in range(M)]
    return P, y, feats


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=20)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--k", type=int, default=1_000)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--budget", type=int, default=80)
    ap.add_argument("--all", action="store_true", help="also run the slow methods")
    ap.add_argument("--only", nargs="*", help="run only these method names")
    ap.add_argument("--out", type=Path, default=OUT, help="results file (markdown)")
    a = ap.parse_args()
    P, y, feats = make_zoo(a.m, a.n, a.k, a.d, 0)
    Ps, ys, sfeats = make_zoo(a.m, a.n, a.k, a.d, 1)
    ctx = dict(source_probs=Ps, source_labels=ys, features=feats, source_features=sfeats)
    tiny = dict(source_probs=Ps[:, :200, :], source_labels=ys[:200],
                features=[f[:200] for f in feats], source_features=[f[:200] for f in sfeats])
    rows = []
    for m in methods():
        if m.kind == "rank" and ("estimate", m.name) in {(x.kind, x.name) for x in methods()}:
            continue  # an estimator's ranking is its estimate: timed once
        if a.only and m.name not in a.only:
            continue
        if m.name in SLOW and not a.all and not a.only:
            rows.append((m.kind, m.name, None, None, None, "skipped (slow; --all)"))
            continue
        if missing(m, ctx):
            continue

        def run(P_, c, b=a.budget, m=m):
            if m.kind in ("rank", "estimate"):
                return call(m.kind, m.name, P_, **c)
            if m.kind == "select":
                return call("select", m.name, P_, b, 0, **c)
            return call("fewlabel", m.name, P_, y[: P_.shape[1]], [b], 0, 1, **c)

        run(P[:, :200], tiny, b=min(a.budget, 10))  # warm-up (imports, caches)
        load = os.getloadavg()[0]
        t0, c0 = time.perf_counter(), time.process_time()
        run(P, ctx)
        dt, cpu_s = time.perf_counter() - t0, time.process_time() - c0
        rows.append((m.kind, m.name, dt, cpu_s, load,
                     "yes" if dt < 2.0 else f"no: {WHY.get(m.name, 'see profile')}"))
        print(f"{m.kind:9s} {m.name:18s} {dt:8.3f} s wall {cpu_s:8.3f} s cpu load {load:.1f}",
              flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=Path(__file__).parent).stdout.strip()
    cpu = cpu_model()
    lines = [
        "# bench/methods_scorecard.py results", "",
        f"- size: {a.m} models x {a.n} inputs x {a.k} classes (float32), source set of the same "
        f"size, features D={a.d}; few-label budget {a.budget}, 1 run",
        f"- machine: {cpu}, {os.cpu_count()} cores visible, {platform.system()} "
        f"{platform.release()}, numpy {np.__version__}; methods may use {n_workers()} threads "
        f"(models on threads where the registry says so)",
        f"- commit: {commit}",
        "- wall = elapsed seconds; cpu = process CPU seconds (all threads); load = 1-minute load",
        "  average when the method started (the machine is shared: wall times above ~2 x cpu/2",
        "  mean the method waited for a core)",
        "- run under `nice -n 19` on a shared 2-core machine: wall is not representative there;",
        "  compare cpu s (a method on 2 threads meets 2 s wall on 2 idle cores when cpu s < 4)", "",
        "| kind | method | wall s | cpu s | load | wall < 2 s (else what bounds it) |",
        "|---|---|---:|---:|---:|---|",
    ]

    def f(v):
        return "" if v is None else f"{v:.3f}"

    for kind, name, dt, cpu_s, load, status in rows:
        lines.append(f"| {kind} | {name} | {f(dt)} | {f(cpu_s)} | "
                     f"{'' if load is None else f'{load:.1f}'} | {status} |")
    a.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
