"""Peak memory of the chunked follow-up writer grows with the chunk, not the dataset (issue 16,
metamorphic bullet 4 and "Done when"; bench/metamorphic_memory.py measures the RSS at paper
shape, bench/results/metamorphic_memory.md).

``write_testsets`` (rule metamorphic_testsets) reads sources, computes regions and writes the base and
the c3 follow-ups ``chunk`` sources at a time. The measurements run in one fresh interpreter with
``tracemalloc`` on, which sees every numpy array buffer (numpy reports its allocations to it), so
the peak above what was held before the call is what the writer allocated, not the
interpreter's RSS. Expected, from the design: 4x
the sources at the same chunk leaves the peak about unchanged (the run is measured after a
first, identical run has done the lazy imports); 4x the chunk raises it severalfold;
either stays far below the follow-up set held whole (7 variants x sources x H x W x 3 bytes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from labelfree.data.imagenet import box_distance
from labelfree.metamorphic.run import NpzStreamWriter

SIDE = 64
CHILD = r"""
import sys, tracemalloc
tracemalloc.start()
from labelfree.metamorphic import run as ex
tmp, runs = sys.argv[1], [tuple(map(int, a.split(":"))) for a in sys.argv[2:]]
study = {"bbox_pad_px": 5, "mask_pad_px": 0, "reencode": "none", "coloursets": {}}
for k, (n, chunk) in enumerate([runs[0], *runs]):  # run 0 again first: the lazy imports
    bcfg = {"split": "val", "region": "box", "coloursets": ["c3"], "parts": max(1, n // 32),
            "options": {}}
    tracemalloc.reset_peak()
    held = tracemalloc.get_traced_memory()[0]  # module state allocated since start()
    ex.write_testsets("t", {"val": bcfg}, {**study, "chunk": chunk}, 0, f"{tmp}/ts{k}",
                      {"val": f"{tmp}/split{n}.npz"})
    if k:
        print(tracemalloc.get_traced_memory()[1] - held)
"""


def _split(path: Path, n: int) -> None:
    """n random SIDE x SIDE RGB sources with two boxes each (the ImageNet store's layout)."""
    r = np.random.default_rng(0)
    lo = r.integers(0, SIDE // 2, (n, 2, 2))
    boxes = np.concatenate([lo, lo + r.integers(SIDE // 10, SIDE // 2, (n, 2, 2))], axis=2)
    with NpzStreamWriter(path) as w:
        w.add("x", r.integers(0, 256, (n, SIDE, SIDE, 3), dtype=np.uint8), 64)
        w.add("y", r.integers(0, 1000, n).astype(np.int64))
        w.add("box_distance", np.stack([box_distance(b.astype(float), SIDE, SIDE, SIDE)
                                        for b in boxes]), 64)
        w.add("area_ratio", np.full(n, 0.1, dtype=np.float32))


def _peaks(tmp: Path, runs: list[tuple[int, int]]) -> list[int]:
    """Peak bytes the writer allocated for each (sources, chunk), in one fresh interpreter."""
    for n in {n for n, _ in runs}:
        _split(tmp / f"split{n}.npz", n)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp), *(f"{n}:{c}" for n, c in runs)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [int(v) for v in proc.stdout.split()]


@pytest.mark.slow
def test_writer_peak_grows_with_the_chunk_not_the_dataset(tmp_path):
    small, large, large_chunk = _peaks(tmp_path, [(32, 4), (128, 4), (128, 16)])
    whole = 7 * 128 * SIDE * SIDE * 3  # the c3 follow-up set of 128 sources held whole
    assert large < 1.25 * small, (small, large)  # 4x the sources, same chunk
    assert large_chunk > 2.5 * large, (large, large_chunk)  # 4x the chunk
    assert large_chunk < whole / 4, (large_chunk, whole)


ORIG_CHILD = r"""
import sys, tracemalloc
tracemalloc.start()
from labelfree.metamorphic import run as ex
tmp, runs = sys.argv[1], [tuple(map(int, a.split(":"))) for a in sys.argv[2:]]
study = {"bbox_pad_px": 5, "mask_pad_px": 0, "reencode": "none", "coloursets": {}, "fill_at": "original"}
for k, (n, chunk) in enumerate([runs[0], *runs]):  # run 0 again first: the lazy imports
    bcfg = {"split": "val", "region": "box", "coloursets": ["c3"], "parts": 1, "options": {}}
    tracemalloc.reset_peak()
    held = tracemalloc.get_traced_memory()[0]
    ex.write_testsets("t", {"val": bcfg}, {**study, "chunk": chunk}, 0, f"{tmp}/ots{k}",
                      {"val": f"{tmp}/o{n}/val.npz"}, {"val": f"{tmp}/o{n}/meta.json"})
    if k:
        print(tracemalloc.get_traced_memory()[1] - held)
"""
ORIG_H, ORIG_W, STORE = 150, 200, 96


def _originals(folder: Path, n: int) -> None:
    """n ImageNet-shaped originals (ORIG_H x ORIG_W PNGs, one box each) prepared by the data layer
    at STORE (its split .npz and meta.json index)."""
    from PIL import Image

    from labelfree.data.registry import prepare_dataset

    img, box = folder / "val", folder / "bbox"
    img.mkdir(parents=True)
    box.mkdir()
    r = np.random.default_rng(n)
    for k in range(1, n + 1):
        Image.fromarray(r.integers(0, 256, (ORIG_H, ORIG_W, 3), dtype=np.uint8)).save(
            img / f"ILSVRC2012_val_{k:08d}.png")
        (box / f"ILSVRC2012_val_{k:08d}.xml").write_text(
            f"<annotation><size><width>{ORIG_W}</width><height>{ORIG_H}</height></size><object>"
            f"<name>n{k % 3:08d}</name><bndbox><xmin>40</xmin><ymin>30</ymin><xmax>120</xmax>"
            "<ymax>110</ymax></bndbox></object></annotation>")
    cfg = {"source": "imagenet_val", "splits": {"val": 1.0}, "test_split": "val",
           "options": {"images_dir": str(img), "boxes_dir": str(box), "size": STORE}}
    prepare_dataset("o", cfg, 0, folder)


@pytest.mark.slow
def test_original_fill_peak_grows_with_the_chunk_not_the_dataset(tmp_path):
    """fill_at: original (spec 2.2): each source is decoded, filled and resized alone and its
    variants spooled to disk, so the peak stays flat in the number of sources; the chunk only
    sizes the reads that stream the spool into the .npz."""
    runs = [(24, 4), (96, 4), (96, 32)]
    for n in {n for n, _ in runs}:
        _originals(tmp_path / f"o{n}", n)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-c", ORIG_CHILD, str(tmp_path), *(f"{n}:{c}" for n, c in runs)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    small, large, large_chunk = (int(v) for v in proc.stdout.split())
    whole = 7 * 96 * STORE * STORE * 3  # the c3 follow-up set of 96 sources held whole
    assert large < 1.25 * small, (small, large)  # 4x the sources, same chunk
    assert large_chunk > 1.5 * large, (large, large_chunk)  # 8x the chunk
    assert large_chunk < whole / 4, (large_chunk, whole)
