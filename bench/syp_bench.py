"""Benchmarks of the `syp` study (run by hand: ``python bench/syp_bench.py``).

1. Indicator extraction (spec 2.2-2.3): the library's vectorised per-set computation vs a
   per-sample Python loop (scipy.stats.entropy + scipy.ndimage.laplace per image), same inputs,
   same results (checked), on M meta-sets of N digits-sized images.
2. Oracle training (spec 2.8) with the shapes and settings of a workflow config (default
   config/config.yaml: M = 60 meta-sets of 449 rows, 50 passes = 3,000 iterations, one whole
   meta-set per batch, every oracle variant of Tables 1-5): seconds per variant and seed, and the
   total for the configuration's seeds and two classifiers.

Options: ``--config PATH --rows N --threads T --skip-oracle``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.stats
import torch
from scipy import ndimage

from labelfree.numerics import entropy, softmax
from labelfree.syp import plan as ex
from labelfree.syp.indicators import image_indicators
from labelfree.syp.oracle import train_oracle
from labelfree.syp.run import variant_from_config


def loop_indicators(probs: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Baseline: one sample at a time (what the reference code does per image)."""
    rows = []
    for p, img in zip(probs, x, strict=True):
        h = scipy.stats.entropy(p)
        flat = img.astype(np.float64).ravel()
        v = flat / 256.0
        gray = img.astype(np.float64).mean(axis=2)
        lap = ndimage.laplace(gray, mode="mirror")
        rows.append((h, flat.std(), np.mean(-v * np.log(v + 1e-6)), lap.var()))
    return np.array(rows)


def vector_indicators(probs: np.ndarray, x: np.ndarray) -> np.ndarray:
    img = image_indicators(x, "clean")
    return np.column_stack([entropy(probs), img])


def bench_indicators(m: int, n: int) -> None:
    g = np.random.default_rng(0)
    sets = [
        (softmax(g.normal(size=(n, 10)) * 3), g.integers(0, 256, (n, 16, 16, 1)).astype(np.uint8))
        for _ in range(m)
    ]
    t0 = time.perf_counter()
    vec = [vector_indicators(p, x) for p, x in sets]
    t_vec = time.perf_counter() - t0
    t0 = time.perf_counter()
    loop = [loop_indicators(p, x) for p, x in sets]
    t_loop = time.perf_counter() - t0
    for a, b in zip(vec, loop, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    print(f"\nIndicator extraction, {m} sets x {n} images of 16x16 (results identical):")
    print("| method | seconds | images/s | speed-up |")
    print("|---|---|---|---|")
    print(f"| per-sample loop (baseline) | {t_loop:.3f} | {m * n / t_loop:,.0f} | 1.0x |")
    print(
        f"| vectorised (labelfree.syp) | {t_vec:.3f} | {m * n / t_vec:,.0f} | {t_loop / t_vec:.1f}x |"
    )


def default_syp_config(path: str = "config/config.yaml") -> dict:
    """The validated `syp` section of a workflow config (schema defaults filled in)."""
    from pathlib import Path

    import yaml

    from labelfree.config import validate_config

    cfg = validate_config(yaml.safe_load(Path(path).read_text()), "config/schema.yaml")
    return cfg["syp"]


def bench_oracle(cfg: dict, n: int, threads: int) -> None:
    """Train every oracle variant of ``cfg`` once (one seed) on random rows of the real shapes."""
    from labelfree.syp.oracle import count_parameters

    torch.set_num_threads(threads)
    m = int(cfg["meta_sets"]["count"])
    passes = float(cfg["oracle"]["passes"])
    seeds = len(cfg["seeds"])
    g = np.random.default_rng(1)
    groups = np.repeat(np.arange(m), n)
    specs = ex.variant_overrides(cfg)
    print(
        f"\nOracle training, {m} meta-sets x {n} rows, {passes:g} passes "
        f"({int(round(passes * m))} iterations, batch = one whole meta-set), {threads} thread(s):"
    )
    print("| variant | features | params | seconds / seed | ms / iteration |")
    print("|---|---|---|---|---|")
    total = 0.0
    for name, spec in specs.items():
        v = variant_from_config(name, spec, cfg["oracle"])
        x = g.random((m * n, len(v.columns))).astype(np.float32)
        c = (g.random(m * n) < 0.7).astype(np.float32)
        res = train_oracle(x, c, groups, v.oracle, seed=0, threads=threads)
        total += res.seconds
        print(
            f"| {name} | {len(v.columns)} | {count_parameters(res.model):,} | {res.seconds:.2f} | "
            f"{1e3 * res.seconds / res.iters:.2f} |"
        )
    print(
        f"\nOne seed of every variant for one classifier: {total:.1f} s; the configuration's "
        f"{seeds} seeds x 2 classifiers: {total * seeds * 2:.1f} s CPU = {total * seeds:.1f} s "
        "wall on 2 cores (one job per classifier, in parallel)."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="config/config.yaml", help="workflow config to time")
    ap.add_argument("--rows", type=int, default=449, help="rows per meta-set (source split size)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--skip-oracle", action="store_true")
    args = ap.parse_args()
    cfg = default_syp_config(args.config)
    bench_indicators(int(cfg["meta_sets"]["count"]), args.rows)
    if not args.skip_oracle:
        bench_oracle(cfg, args.rows, args.threads)


if __name__ == "__main__":
    main()
