"""Benchmark: alpha-hat of 100 candidates against a reference of 100 runs (issue 6, spec 2.5-2.6).

N_test = 8000 (N = 4000), B = 100 bootstraps, the 13-level grid. Target: < 10 s on a 2-core CPU,
peak memory < 2 GB. Baseline in the same run: a straightforward loop over candidates, replicates
and grid levels that follows spec 2.5 literally (sort of the union grid per candidate and
replicate, one closed-form evaluation per alpha, scan until accepted), timed on a subset and
extrapolated; both must pick identical levels on that subset.

    python bench/alphatrim_alpha_hat.py [--candidates 100] [--reference 100] [--n-test 8000]
        [--out bench/alphatrim_alpha_hat_results.md]

Writes the figures with the machine (CPU model, cores) and the git commit to ``--out``
(issue 19 item 4).
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import time
import tracemalloc
from pathlib import Path

import numpy as np

from labelfree.alphatrim.bootstrap import DEFAULT_GRID, _replicate, alpha_hat
from labelfree.alphatrim.kernel import ReferenceCDF
from labelfree.provenance import cpu_model


def synthetic_zoo(k: int, n_test: int, seed: int) -> np.ndarray:
    """Logit-gap-like zoo: a shared per-point signal, per-model scale and noise, clipped to 15."""
    rng = np.random.default_rng(seed)
    base = rng.normal(0, 4, size=n_test)
    scale = 1 + 0.15 * rng.normal(size=(k, 1))
    return np.clip(base * scale + rng.normal(0, 1.0, size=(k, n_test)), -15, 15)


def baseline_levels(ref: np.ndarray, cand: np.ndarray, b: int, seed: int, gamma: float) -> list:
    """Spec 2.5/2.6 literally for replicate b: union grid, per-alpha closed form, linear scan."""
    n = ref.shape[1] // 2
    rep = _replicate(ref, n, seed, b, "pooled_resample")
    r = rep.ref  # same reference sample as the vectorised run
    out = []
    for c in cand:
        cs = c[rep.i_cand]
        ref_sample = np.repeat(r.knots, np.diff(np.r_[0, np.rint(r.heights * r.n)]).astype(int))
        z = np.sort(np.concatenate([ref_sample, cs]))
        f0 = ReferenceCDF.from_sample(ref_sample)(z)
        t = np.searchsorted(np.sort(cs), z, side="right") / cs.size
        t_prev = np.r_[0.0, t[:-1]]
        level = 0.5
        for alpha in DEFAULT_GRID:
            k, lo = 1 / (1 - alpha), -alpha / (1 - alpha)
            xu, xl = f0 - k * t_prev, f0 - k * t
            u = np.r_[np.maximum.accumulate(xu[::-1])[::-1], lo]
            low = np.r_[0.0, np.minimum.accumulate(xl)]
            g = np.clip((u + low) / 2, lo, 0)
            d = max((xu - g[:-1]).max(), (g[1:] - xl).max())
            if d <= gamma:
                level = alpha
                break
        out.append(level)
    return out


def _load() -> list[str]:
    try:
        return Path("/proc/loadavg").read_text().split()[:3]
    except OSError:
        return ["?"]


def _commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True, cwd=Path(__file__).parent)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, cwd=Path(__file__).parent)
        return out.stdout.strip() + (" (dirty)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--candidates", type=int, default=100)
    ap.add_argument("--reference", type=int, default=100)
    ap.add_argument("--n-test", type=int, default=8000)
    ap.add_argument("--boot", type=int, default=100)
    ap.add_argument("--baseline-candidates", type=int, default=20)
    ap.add_argument("--baseline-boot", type=int, default=10)
    ap.add_argument("--out", default="bench/alphatrim_alpha_hat_results.md")
    args = ap.parse_args()

    load0 = " ".join(_load())
    zoo = synthetic_zoo(args.reference + args.candidates, args.n_test, seed=0)
    ref, cand = zoo[: args.reference], zoo[args.reference :]
    rows = []
    results = {}
    for n_jobs in (1, 2):
        t0, c0 = time.perf_counter(), time.process_time()
        res = alpha_hat(ref, cand, n_boot=args.boot, seed=1, n_jobs=n_jobs)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        results[n_jobs] = res
        rows.append((f"vectorised, {n_jobs} thread(s)", dt, dc))
    # peak memory in a separate run (tracemalloc slows NumPy down, so it is not timed)
    tracemalloc.start()
    alpha_hat(ref, cand, n_boot=args.boot, seed=1, n_jobs=2)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    assert np.array_equal(results[1].alpha_boot, results[2].alpha_boot)

    bc, bb = args.baseline_candidates, args.baseline_boot
    t0, c0 = time.perf_counter(), time.process_time()
    base = np.array([baseline_levels(ref, cand[:bc], b, 1, results[1].gamma) for b in range(bb)]).T
    dt_base, dc_base = time.perf_counter() - t0, time.process_time() - c0
    same = np.array_equal(base, results[1].alpha_boot[:bc, :bb])
    scale = (args.candidates * args.boot) / (bc * bb)
    rows.append((f"baseline loop ({bc} cand x {bb} boot), measured", dt_base, dc_base))
    rows.append(("baseline loop, extrapolated to the full problem", dt_base * scale, dc_base * scale))

    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    lines = [
        f"alpha-hat: {args.candidates} candidates x reference of {args.reference} runs, "
        f"N_test = {args.n_test} (N = {args.n_test // 2}), B = {args.boot}, "
        f"{len(DEFAULT_GRID)} alphas, gamma = {results[1].gamma:.6f}",
        "",
        f"| {'method':<52} | {'wall [s]':>10} | {'CPU [s]':>10} |",
        f"| {'-' * 52} | {'-' * 10}: | {'-' * 10}: |",
    ]
    lines += [f"| {name:<52} | {t:>10.2f} | {cpu:>10.2f} |" for name, t, cpu in rows]
    best = min(rows[0][1], rows[1][1])
    lines += [
        "",
        f"- target (issue 19 item 4): < 10 s wall on 2 cores; measured {best:.2f} s "
        f"({'met' if best < 10 else 'NOT met'})",
        f"- peak NumPy memory (tracemalloc, 2 threads): {peak:.0f} MiB; process peak RSS "
        f"{maxrss:.0f} MiB",
        f"- speed-up, CPU time, vectorised vs extrapolated loop: "
        f"{dc_base * scale / rows[0][2]:.1f}x",
        f"- baseline and vectorised levels identical on the subset: {same}",
    ]
    a = results[1].alpha_hat
    lines.append(
        f"- alpha-hat over candidates: median {np.median(a):.4f}, max {a.max():.4f}, "
        f"share <= 0.05: {(a <= 0.05).mean():.2f}; mean KS rejection rate "
        f"{results[1].ks_reject_rate.mean():.2f}"
    )
    print("\n".join(lines))
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(
            "# bench/alphatrim_alpha_hat.py\n\n"
            f"- machine: {cpu_model()}, {os.cpu_count()} logical CPUs visible "
            f"({len(os.sched_getaffinity(0))} usable), {platform.platform()}\n"
            f"- commit: {_commit()}\n- date: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}\n"
            f"- load average before / after the run: {load0} / {' '.join(_load())} (a shared "
            "machine: wall times above the load-free figure when the load exceeds the cores)\n\n"
            + "\n".join(lines) + "\n"
        )
    if not same:
        raise SystemExit("baseline and vectorised alpha levels differ")


if __name__ == "__main__":
    main()
