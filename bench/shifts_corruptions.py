"""Benchmark: all 75 corruption sets (15 corruptions x 5 severities, laf spec 5.2) on the digits
test split (1,079 images, 8x8x1, mnist table) and on 1,000 CIFAR-size images (32x32x3, cifar
table), vectorised over the batch vs a per-image loop of the same function in the same run.

    python bench/shifts_corruptions.py [--baseline-images 200] [--full-baseline]

The per-image baseline calls ``corrupt`` on one image at a time. Its cost is linear in the
number of images, so by default it is timed on the first ``--baseline-images`` images and
scaled to the full batch (say so when quoting it); ``--full-baseline`` times every image.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import ndimage
from sklearn.datasets import load_digits

from labelfree.shifts.corruptions import corrupt
from labelfree.shifts.params import CORRUPTIONS


def digits_test(n: int = 1079) -> np.ndarray:
    d = load_digits().images
    idx = np.random.default_rng(0).permutation(len(d))[:n]
    return np.clip(d[idx] * 16, 0, 255).astype(np.uint8)[..., None]


def cifar_like(n: int = 1000) -> np.ndarray:
    """Coloured, textured 32x32 renderings of digits (CIFAR-size stand-ins, offline)."""
    g = np.random.default_rng(1)
    d = load_digits().images[g.integers(0, 1797, n)] / 16.0
    up = np.clip(ndimage.zoom(d, (1, 4, 4), order=1), 0, 1)[..., None]
    fg = g.uniform(0.5, 1.0, (n, 1, 1, 3))
    bg = g.uniform(0.0, 0.4, (n, 1, 1, 3))
    tex = ndimage.gaussian_filter(g.uniform(-0.15, 0.15, (n, 32, 32, 3)), (0, 1, 1, 0))
    return np.round(np.clip(bg + (fg - bg) * up + tex, 0, 1) * 255).astype(np.uint8)


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def run(name: str, x: np.ndarray, n_base: int) -> list[tuple[str, float, float]]:
    rows = []
    for c in CORRUPTIONS:
        vec = sum(timed(lambda s=s, c=c: corrupt(x, c, s, s)) for s in range(1, 6))
        xb = x[:n_base]
        loop = sum(
            timed(lambda s=s, c=c, xb=xb: [corrupt(xb[i : i + 1], c, s, s) for i in range(len(xb))])
            for s in range(1, 6)
        )
        loop *= len(x) / len(xb)
        rows.append((c, vec, loop))
        print(
            f"{name:8s} {c:18s} vectorised {vec:7.3f} s   per-image loop {loop:8.2f} s"
            f"   x{loop / vec:6.1f}",
            flush=True,
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline-images", type=int, default=200)
    ap.add_argument("--full-baseline", action="store_true")
    args = ap.parse_args()
    sets = {"digits": digits_test(), "cifar32": cifar_like()}
    summary = []
    for name, x in sets.items():
        n_base = len(x) if args.full_baseline else min(len(x), args.baseline_images)
        print(f"\n{name}: {x.shape}, per-image baseline timed on {n_base} images", flush=True)
        rows = run(name, x, n_base)
        vec = sum(r[1] for r in rows)
        loop = sum(r[2] for r in rows)
        summary.append((name, x.shape, vec, loop))
    print("\n| images | shape | 75 sets, vectorised (s) | per-image loop (s) | speed-up |")
    print("|---|---|---|---|---|")
    for name, shape, vec, loop in summary:
        print(f"| {name} | {shape} | {vec:.2f} | {loop:.1f} | {loop / vec:.1f}x |")


if __name__ == "__main__":
    main()
