"""Benchmark: PACE ``select`` on 10,000 inputs x 128-d features, budgets 50 and 180.

Compares, in the same run and on the same features:
  pace-auto     labelfree.pace.select with the automatic reduction rule (cluster the 128-d
                features, re-cluster after FastICA-2 if the clustering is poor), spec 2.4
  pace-ica2     labelfree.pace.select with FastICA-2 always applied (the paper's choice for
                high-dimensional subjects)
  dense-mmd     the same pipeline, but prototypes by a naive MMD-critic that materialises the dense
                kernel over the whole processed test set (as the reference MMD-critic code does for
                its input) and ART with a dense N x N distance matrix: the baseline the library avoids
  srs           simple random sampling (no computation)
Each configuration runs in its own subprocess so that its peak RSS is its own.

    python bench/pace_select.py            # the table
    python bench/pace_select.py --n 5000   # smaller pool
Target (issue 4): < 5 s per selection on a 2-core CPU and peak memory < 2 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def features(n: int, d: int = 128, seed: int = 0) -> np.ndarray:
    """LHL-like activations: 10 latent classes in 16-d, random 128-d ReLU layer, noise."""
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 10, n)
    centres = rng.normal(0, 3, (10, 16))
    z = centres[lab] + rng.normal(0, 1.0, (n, 16))
    w = rng.normal(0, 1 / 4, (16, d))
    return np.maximum(z @ w + rng.normal(0, 0.3, (n, d)), 0).astype(np.float32)


def dense_pipeline(x: np.ndarray, budget: int) -> np.ndarray:
    """Baseline: same processing/clustering, dense kernel + dense distances (O(N^2) memory)."""
    from labelfree.pace.allocate import allocate
    from labelfree.pace.core import PaceConfig, process
    from labelfree.pace.mmd import l2_rows

    cfg = PaceConfig(reduce="always", n_max=180, min_cluster_size=80)
    xp, c, _, _ = process(x, cfg)
    xn = l2_rows(xp)
    sq = (xn**2).sum(1)
    kern = np.exp(-cfg.gamma * np.maximum(sq[:, None] + sq[None, :] - 2 * xn @ xn.T, 0))  # N x N
    d_all = np.sqrt(np.maximum((xp**2).sum(1)[:, None] + (xp**2).sum(1)[None] - 2 * xp @ xp.T, 0))
    sizes = c.group_sizes()
    noise = np.flatnonzero(c.labels < 0)
    alloc = allocate(budget, sizes, len(noise), cfg.alpha, cfg.rounding)
    picks = []
    for g, q in enumerate(alloc.quotas):
        m = np.flatnonzero(c.labels == g)
        k = kern[np.ix_(m, m)]
        colsum = k.sum(0)
        sel: list[int] = []
        for _ in range(q):  # MMD-critic style: recompute the objective term from the kernel
            ksel = k[sel].sum(0) if sel else np.zeros(len(m))
            score = 2 * colsum / len(m) - (2 * ksel + 1) / (len(sel) + 1)
            score[sel] = -np.inf
            sel.append(int(np.argmax(score)))
        picks += m[sel].tolist()
    if len(noise):
        dm = d_all[np.ix_(noise, noise)]
        first = int(np.argmax(c.outlier_scores[noise]))
        art = [first]
        for _ in range(alloc.n_minority - 1):
            mind = dm[:, art].min(1)
            mind[art] = -1
            art.append(int(np.argmax(mind)))
        picks += noise[art].tolist()
    return np.asarray(picks)


def run_one(method: str, n: int, budget: int) -> dict:
    import hdbscan  # noqa: F401  (imports are not part of the selection time)
    import sklearn.decomposition  # noqa: F401

    from labelfree.pace import select

    x = features(n)
    t = time.perf_counter()
    info: dict = {}
    if method == "pace-auto":
        r = select(x, budget, reduce="auto")
        size, info = r.size, {k: round(v, 3) for k, v in r.timings.items()}
        info["reduced"] = r.reduced
        info["groups"] = len(r.group_sizes)
    elif method == "pace-ica2":
        r = select(x, budget, reduce="always")
        size, info = r.size, {k: round(v, 3) for k, v in r.timings.items()}
        info["groups"] = len(r.group_sizes)
    elif method == "dense-mmd":
        size = len(dense_pipeline(x, budget))
    elif method == "srs":
        size = len(np.random.default_rng(0).choice(n, budget, replace=False))
    else:
        raise SystemExit(f"unknown method {method}")
    wall = time.perf_counter() - t
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "method": method,
        "n": n,
        "budget": budget,
        "size": size,
        "seconds": wall,
        "peak_mb": peak_mb,
        "stages": info,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--one", nargs=2, metavar=("METHOD", "BUDGET"))
    ap.add_argument("--methods", default="srs,pace-ica2,pace-auto,dense-mmd")
    ap.add_argument(
        "--blas-threads",
        default="1",
        help="BLAS threads per run (1: the matrices are thin; threads only contend)",
    )
    args = ap.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one[0], args.n, int(args.one[1]))))
        return
    rows = []
    for method in args.methods.split(","):
        for budget in (50, 180):
            out = subprocess.run(
                [sys.executable, __file__, "--n", str(args.n), "--one", method, str(budget)],
                capture_output=True,
                text=True,
                check=True,
                env={
                    **os.environ,
                    "OMP_NUM_THREADS": args.blas_threads,
                    "OPENBLAS_NUM_THREADS": args.blas_threads,
                    "MKL_NUM_THREADS": args.blas_threads,
                },
            )
            rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
            r = rows[-1]
            print(
                f"{r['method']:<10} n={r['budget']:>3} size={r['size']:>3} "
                f"{r['seconds']:7.2f} s  peak {r['peak_mb']:7.0f} MB  {r['stages']}",
                flush=True,
            )
    print("\n| method | budget | seconds | peak MB |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['method']} | {r['budget']} | {r['seconds']:.2f} | {r['peak_mb']:.0f} |")


if __name__ == "__main__":
    main()
