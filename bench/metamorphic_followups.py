"""Benchmark: MR-1/MR-2 follow-ups per second, vectorised vs a per-image loop (issue 7, Performance).

    python bench/metamorphic_followups.py [--n32 2000] [--n224 64] [--repeat 3]

For 32x32 and 224x224 RGB images and box or mask regions, times
(a) region construction: `box_masks` over the batch vs one box at a time,
(b) follow-ups: `make_followup_set` (3 colours, obj + bg) vs `fill_loop`'s per-image, per-colour
loop baseline, and prints follow-ups per second (one follow-up = one filled image) and the speed-up.
Both paths produce identical bytes (checked here). Best of --repeat runs.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from labelfree.metamorphic import followups as fu
from labelfree.metamorphic import regions as rg


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _inputs(n: int, size: int, kind: str, seed: int = 0):
    r = np.random.default_rng(seed)
    x = r.integers(0, 256, (n, size, size, 3), dtype=np.uint8)
    lo = r.integers(0, size // 2, (n, 2))
    hi = lo + r.integers(size // 8, size // 2, (n, 2))
    boxes = np.concatenate([lo, np.minimum(hi, size)], axis=1)
    if kind == "box":
        region_src = boxes
    else:  # a blobby mask: an ellipse per image
        yy, xx = np.mgrid[0:size, 0:size]
        cy, cx = (lo + hi)[:, 1] / 2, (lo + hi)[:, 0] / 2
        ry, rx = (hi - lo)[:, 1] / 2 + 1, (hi - lo)[:, 0] / 2 + 1
        region_src = ((yy[None] - cy[:, None, None]) / ry[:, None, None]) ** 2 + (
            (xx[None] - cx[:, None, None]) / rx[:, None, None]
        ) ** 2 <= 1
    return x, region_src


def run(n32: int, n224: int, repeat: int) -> list[dict]:
    rows = []
    colours = fu.COLOURSETS["c3"]
    cols = fu.colour_array(colours)
    for size, n in ((32, n32), (224, n224)):
        for kind in ("box", "mask"):
            x, src = _inputs(n, size, kind)
            if kind == "box":
                region = rg.box_masks(src, size, size)
                t_reg_vec = _best(lambda src=src, size=size: rg.box_masks(src, size, size), repeat)
                t_reg_loop = _best(
                    lambda src=src, size=size: [rg.box_masks(b[None], size, size) for b in src],
                    repeat,
                )
            else:  # masks are the region as given (mask_pad_px = 0): nothing to build
                region = src
                t_reg_vec = t_reg_loop = float("nan")
            t_vec = _best(
                lambda x=x, region=region: fu.make_followup_set(x, region, colours), repeat
            )

            def loop(x=x, region=region):
                return fu.fill_loop(x, region, cols, "obj"), fu.fill_loop(x, region, cols, "bg")

            t_loop = _best(loop, max(1, repeat - 1))
            xs, _, _ = fu.make_followup_set(x, region, colours)
            o, b = loop()
            k = len(cols)
            assert np.array_equal(xs[n : (1 + k) * n], o.reshape(-1, *x.shape[1:]))
            assert np.array_equal(xs[(1 + k) * n :], b.reshape(-1, *x.shape[1:]))
            n_fu = 2 * k * n
            rows.append(
                {
                    "image": f"{size}x{size}",
                    "region": kind,
                    "sources": n,
                    "follow-ups": n_fu,
                    "vectorised fu/s": n_fu / t_vec,
                    "loop fu/s": n_fu / t_loop,
                    "speed-up": t_loop / t_vec,
                    "regions/s vec": n / t_reg_vec,
                    "regions/s loop": n / t_reg_loop,
                }
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n32", type=int, default=2000)
    ap.add_argument("--n224", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    rows = run(a.n32, a.n224, a.repeat)
    head = [
        "image",
        "region",
        "sources",
        "follow-ups",
        "vectorised fu/s",
        "loop fu/s",
        "speed-up",
        "regions/s vec",
        "regions/s loop",
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        cells = [
            "-"
            if isinstance(r[h], float) and r[h] != r[h]
            else f"{r[h]:,.0f}"
            if isinstance(r[h], float) and h != "speed-up"
            else (f"{r[h]:.1f}x" if h == "speed-up" else str(r[h]))
            for h in head
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
