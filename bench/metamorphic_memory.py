"""Benchmark: peak memory of a paper-shaped metamorphic run grows with the chunk, not the dataset.

    python bench/metamorphic_memory.py [--sizes 256 512 1024] [--chunks 32 128] [--side 342]
        [--part 256] [--prepare-sizes 256 1024 2048] [--prepare-chunks 32 128]
        [--out bench/results/metamorphic_memory.md] [--tmp DIR]

Synthetic ImageNet-shaped sources (uint8 side x side RGB, the paper config's stored size 342, two
random boxes each, stored with the data layer's ``box_distance``) are written as a dataset split;
then, each in a fresh subprocess whose peak RSS (``ru_maxrss``) is read:

- ``write_testsets`` (rule metamorphic_testsets): base + c3 follow-ups, ``chunk`` sources at a time, in
  parts of ``--part`` sources (what inference loads per test set);
- ``inference``: one part read with ``read_image_set`` and run through a small conv model with
  ``labelfree.inference.predict`` (what ``infer_zoo`` does per test set with its cache off);
- ``whole`` (the old path): ``make_followup_set`` on the whole set in memory;
- ``prepare`` (rule data_prepare, issue 16): ``prepare_dataset`` on a synthetic ImageNet val tree
  (``--prepare-sizes`` JPEGs of 500x375, ImageNet's most common size, each with a Pascal VOC box
  XML) stored at ``--side``, decoding ``chunk`` images at a time into the split ``.npz``;
- ``prepare_whole`` (its old path): the split decoded whole (``LazySplit.materialise``), then
  ``write_image_set``.

Writes a markdown table with the machine and commit to ``--out``.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CHILD = r"""
import resource, sys, time
import numpy as np
mode, split, out, chunk, part = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
t0 = time.perf_counter()
if mode.startswith("prepare"):
    from labelfree.data.registry import build_dataset, prepare_dataset
    side = int(sys.argv[6])
    cfg = {"source": "imagenet_val", "splits": {"val": 1.0}, "test_split": "val",
           "options": {"images_dir": split + "/img", "boxes_dir": split + "/box", "size": side}}
    if mode == "prepare":
        prepare_dataset("bench", cfg, 0, out, chunk=chunk)
    else:  # the old path: the whole split decoded, then written
        from labelfree.store import write_image_set
        s = build_dataset("bench", cfg, 0)[0]["val"].materialise()
        write_image_set(out + "/val.npz", s.x, s.y, **dict(s.extras))
elif mode == "write":
    from labelfree.metamorphic import run as ex
    from labelfree.metamorphic.run import npz_rows
    n = len(npz_rows(split)["y"])
    bcfg = {"split": "val", "region": "box", "coloursets": ["c3"], "parts": max(1, n // part), "options": {}}
    study = {"bbox_pad_px": 5, "mask_pad_px": 0, "chunk": chunk, "reencode": "none", "coloursets": {}}
    ex.write_testsets("bench", {"val": bcfg}, study, 0, out, {"val": split})
elif mode == "infer":
    import torch
    from labelfree.inference import predict
    from labelfree.store import read_image_set
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 7, stride=4), torch.nn.ReLU(),
                                torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 10))
    import glob
    s = read_image_set(sorted(glob.glob(out + "/metamorphic-val-c3*.npz"))[0])  # one part
    predict(model, s.x, "imagenet", batch_size=64, device="cpu", amp=False)
elif mode == "whole":
    from labelfree.metamorphic import followups as fu
    from labelfree.store import read_image_set
    s = read_image_set(split)
    region = s.extras["box_distance"] <= 5
    fu.make_followup_set(s.x, region, fu.COLOURSETS["c3"], region.reshape(len(region), -1).any(1))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, time.perf_counter() - t0)
"""


def make_split(path: Path, n: int, side: int, seed: int = 0) -> None:
    """Synthetic sources written chunk by chunk (the parent never holds them whole)."""
    from labelfree.data.imagenet import box_distance
    from labelfree.metamorphic.run import NpzStreamWriter

    r = np.random.default_rng(seed)
    lo = r.integers(0, side // 2, (n, 2, 2))
    hi = lo + r.integers(side // 10, side // 2, (n, 2, 2))
    boxes = np.concatenate([lo, hi], axis=2).astype(np.float64)  # (n, 2 boxes, xyxy)
    step = 64
    with NpzStreamWriter(path) as w:
        w.add_chunks("x", (n, side, side, 3), np.uint8,
                     (r.integers(0, 256, (min(step, n - s), side, side, 3), dtype=np.uint8)
                      for s in range(0, n, step)))
        w.add("y", r.integers(0, 1000, n).astype(np.int64))
        w.add_chunks("box_distance", (n, side, side), np.uint8,
                     (np.stack([box_distance(boxes[i], side, side, side) for i in range(s, min(s + step, n))])
                      for s in range(0, n, step)))
        w.add("area_ratio", np.full(n, 0.1, dtype=np.float32))


def make_jpegs(folder: Path, n: int, seed: int = 0, width: int = 500, height: int = 375) -> None:
    """An ImageNet val tree: ``img/`` n JPEGs (smooth stripes plus noise, quality 90, about 100 kB
    each) and ``box/`` one Pascal VOC XML each (one or two boxes of one of 10 synsets)."""
    from PIL import Image

    (folder / "img").mkdir(parents=True)
    (folder / "box").mkdir()
    r = np.random.default_rng(seed)
    cols = np.arange(width)[None, :, None]
    for k in range(1, n + 1):
        stripes = np.sin(cols / r.uniform(10, 60) + r.uniform(0, 6)) * r.uniform(40, 120, 3) + 128
        img = np.clip(stripes + r.normal(0, 20, (height, width, 3)), 0, 255).astype(np.uint8)
        Image.fromarray(img).save(folder / "img" / f"ILSVRC2012_val_{k:08d}.JPEG", quality=90)
        objs = ""
        for _ in range(int(r.integers(1, 3))):
            x1, y1 = int(r.integers(0, width // 2)), int(r.integers(0, height // 2))
            x2, y2 = x1 + int(r.integers(20, width // 2)), y1 + int(r.integers(20, height // 2))
            objs += (f"<object><name>n{k % 10:08d}</name><bndbox><xmin>{x1}</xmin><ymin>{y1}</ymin>"
                     f"<xmax>{x2}</xmax><ymax>{y2}</ymax></bndbox></object>")
        (folder / "box" / f"ILSVRC2012_val_{k:08d}.xml").write_text(
            f"<annotation><size><width>{width}</width><height>{height}</height></size>{objs}</annotation>")


def link_tree(src: Path, dst: Path, n: int) -> None:
    """The first n images and XMLs of ``src`` as symbolic links under ``dst`` (a smaller split)."""
    for sub, suffix in (("img", ".JPEG"), ("box", ".xml")):
        (dst / sub).mkdir(parents=True)
        for k in range(1, n + 1):
            name = f"ILSVRC2012_val_{k:08d}{suffix}"
            os.symlink(src / sub / name, dst / sub / name)


def child(mode: str, split: Path, out: Path, chunk: int, part: int, *extra: str) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    res = subprocess.run([sys.executable, "-c", CHILD, mode, str(split), str(out), str(chunk), str(part), *extra],
                         capture_output=True, text=True, env=env, check=True)
    mib, secs = res.stdout.split()[-2:]
    return float(mib), float(secs)


def machine() -> str:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip()
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {mem:.0f} GiB, "
            f"{platform.system()} {platform.release()}, Python {platform.python_version()}, "
            f"commit {commit}, {time.strftime('%Y-%m-%d')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    ap.add_argument("--chunks", type=int, nargs="+", default=[32, 128])
    ap.add_argument("--side", type=int, default=342)
    ap.add_argument("--part", type=int, default=256)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "metamorphic_memory.md"))
    ap.add_argument("--tmp", default=None)
    ap.add_argument("--prepare-sizes", type=int, nargs="+", default=[256, 1024, 2048])
    ap.add_argument("--prepare-chunks", type=int, nargs="+", default=[32, 128])
    ap.add_argument("--no-whole", action="store_true", help="skip the in-memory baselines")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(dir=a.tmp) as tmp:
        jpegs = Path(tmp) / "jpegs"
        make_jpegs(jpegs, max(a.prepare_sizes))
        for n in sorted(a.prepare_sizes):
            tree = Path(tmp) / f"tree{n}"
            link_tree(jpegs, tree, n)
            gb = n * a.side * a.side * 5 / 1e9  # x (3 bytes a pixel), masks and box_distance (1 each)
            for chunk in a.prepare_chunks:
                out = Path(tmp) / f"data{n}_{chunk}"
                mib, secs = child("prepare", tree, out, chunk, 0, str(a.side))
                rows.append((n, f"{gb:.2f}", "data_prepare (streamed)", chunk, "-", mib, secs))
                print(rows[-1], flush=True)
                subprocess.run(["rm", "-rf", str(out)], check=True)
            if not a.no_whole:
                out = Path(tmp) / f"data{n}_whole"
                out.mkdir()
                mib, secs = child("prepare_whole", tree, out, 0, 0, str(a.side))
                rows.append((n, f"{gb:.2f}", "data_prepare, whole split in memory (old path)", "-", "-",
                             mib, secs))
                print(rows[-1], flush=True)
                subprocess.run(["rm", "-rf", str(out)], check=True)
            subprocess.run(["rm", "-rf", str(tree)], check=True)
        subprocess.run(["rm", "-rf", str(jpegs)], check=True)
        for n in a.sizes:
            split = Path(tmp) / f"split{n}.npz"
            make_split(split, n, a.side)
            gb = 7 * n * a.side * a.side * 3 / 1e9
            for chunk in a.chunks:
                out = Path(tmp) / f"ts{n}_{chunk}"
                mib, secs = child("write", split, out, chunk, a.part)
                rows.append((n, f"{gb:.2f}", "write_testsets (streamed)", chunk, a.part, mib, secs))
                print(rows[-1], flush=True)
                if chunk == a.chunks[-1]:
                    mib, secs = child("infer", split, out, chunk, a.part)
                    rows.append((n, f"{gb:.2f}", "inference on one part", "-", a.part, mib, secs))
                    print(rows[-1], flush=True)
                subprocess.run(["rm", "-rf", str(out)], check=True)
            if not a.no_whole:
                mib, secs = child("whole", split, Path(tmp), 0, 0)
                rows.append((n, f"{gb:.2f}", "whole set in memory (old path)", "-", "-", mib, secs))
                print(rows[-1], flush=True)
            split.unlink()
    head = ["sources", "set held whole (GB)", "step", "chunk", "part", "peak RSS (MiB)", "wall (s)"]
    lines = [
        "# Peak memory of data_prepare and the metamorphic test-set and inference steps "
        "(bench/metamorphic_memory.py)",
        "",
        f"Machine: {machine()}.",
        f"data_prepare: a synthetic ImageNet val tree of 500x375 JPEGs (one or two boxes each) "
        f"prepared at {a.side}x{a.side} (the ImageNet paper config's stored size); the set held "
        "whole is the split's images, masks and box_distance. Metamorphic steps: synthetic "
        f"{a.side}x{a.side} RGB sources, two boxes each, bbox_pad_px 5, colour set c3 (7 "
        "variants); the set held whole is the c3 follow-up set. Peak RSS of a fresh subprocess "
        "(ru_maxrss; includes the interpreter, numpy, pandas and PIL and, for inference, torch).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    lines += ["| " + " | ".join(f"{v:.1f}" if isinstance(v, float) else str(v) for v in r) + " |" for r in rows]
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
