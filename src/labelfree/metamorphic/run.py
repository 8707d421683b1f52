"""The study's computations over artefacts, what the workflow scripts call: the follow-up test
sets of a dataset (:func:`write_testsets`, rule ``metamorphic_testsets_<dataset>``) and the
verdicts of every model of a zoo (:func:`zoo_verdicts`, rule ``metamorphic_verdicts``, zoo by zoo);
the tables, figures and checks are :mod:`labelfree.metamorphic.report`'s.

Test-set names (results/testsets/{dataset}/..., :mod:`labelfree.metamorphic.plan`):
``metamorphic-{base}`` the source scenes with their annotations, hidden instances and region R;
``metamorphic-{base}-{colourset}`` the follow-up set ``[orig, obj-*, bg-*]`` stacked
variant-major; ``metamorphic-{base}-cf`` the counterfactual re-renders (docs/metamorphic.md,
reading R10), k per source, stacked re-render-major.

Bounded memory: at paper scale a follow-up set is 7 x 50,000 ImageNet images (about 69 GB at
256 px), so it is never held whole. Sources are read a chunk of rows at a time from the split's
``.npz`` (:class:`NpzRows`: plain reads at the member's offset, no memory map whose touched pages
would stay resident) and follow-ups are written a chunk at a time into an ``.npz`` member by member
(:class:`NpzStreamWriter`). The files are ordinary uncompressed ``.npz`` archives (what
:func:`labelfree.store.save_npz` writes), readable by :func:`labelfree.store.read_image_set`
(docs/metamorphic.md, "Memory of a paper-shaped run"). ``cfg`` is the validated ``metamorphic``
section of the config.
"""

from __future__ import annotations

import logging
import os
import struct
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labelfree.data import digitscenes as ds
from labelfree.data.lazy import enclosing_box
from labelfree.joblog import progress
from labelfree.metamorphic import analysis as an
from labelfree.metamorphic import followups as fu
from labelfree.metamorphic import oracle as orc
from labelfree.metamorphic import originals as og
from labelfree.metamorphic import regions as rg
from labelfree.metamorphic.plan import FILL_AT, ExperimentError, base_name, cf_name, followup_names
from labelfree.numerics import softmax
from labelfree.seeds import derive_seed
from labelfree.store import read_logits, write_image_set

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# bounded-memory reading and writing of large image sets
# --------------------------------------------------------------------------------------------


class ChunkedError(ValueError):
    """A member is missing, compressed or written with the wrong number of rows."""


class NpzRows:
    """Rows of one array of an uncompressed ``.npz``, read on demand: ``a[i:j]`` reads rows i..j-1.

    Supports ``len``, ``shape``, ``dtype`` and slicing with step 1 (what chunked loops need).
    """

    def __init__(self, path: str | os.PathLike[str], key: str) -> None:
        self.path = Path(path)
        with zipfile.ZipFile(self.path) as zf:
            try:
                info = zf.getinfo(f"{key}.npy")
            except KeyError:
                raise ChunkedError(f"{self.path}: no array {key!r}; has {sorted(zf.namelist())}") from None
        if info.compress_type != zipfile.ZIP_STORED:
            raise ChunkedError(f"{self.path}: array {key!r} is compressed; chunked reads need np.savez")
        with open(self.path, "rb") as f:
            f.seek(info.header_offset)
            local = f.read(30)
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            f.seek(info.header_offset + 30 + name_len + extra_len)
            version = np.lib.format.read_magic(f)
            reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                      else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = reader(f)
            self.offset = f.tell()
        if fortran and len(shape) > 1:
            raise ChunkedError(f"{self.path}: array {key!r} is Fortran-ordered")
        self.shape: tuple[int, ...] = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.row_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, sl: slice) -> np.ndarray:
        if not isinstance(sl, slice) or sl.step not in (None, 1):
            raise ChunkedError("NpzRows supports row slices a[i:j] only")
        start, stop, _ = sl.indices(len(self))
        n = max(0, stop - start)
        out = np.empty((n, *self.shape[1:]), dtype=self.dtype)
        if n:
            with open(self.path, "rb") as f:
                f.seek(self.offset + start * self.row_bytes)
                f.readinto(memoryview(out.reshape(-1).view(np.uint8)))
        return out


def npz_rows(path: str | os.PathLike[str]) -> dict[str, NpzRows]:
    """Every array of an uncompressed ``.npz`` as :class:`NpzRows` (nothing is read yet)."""
    with zipfile.ZipFile(path) as zf:
        keys = [n[:-4] for n in zf.namelist() if n.endswith(".npy")]
    return {k: NpzRows(path, k) for k in keys}


class NpzStreamWriter:
    """Write an ``.npz`` one member at a time, each member one chunk of rows at a time.

    Atomic: the archive is written to ``<path>.tmp`` and renamed on :meth:`close`; use as a
    context manager (an exception removes the partial file).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(self.path.name + ".tmp")
        self._zf = zipfile.ZipFile(self._tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True)

    def add_chunks(
        self, name: str, shape: tuple[int, ...], dtype: np.dtype | type, chunks: Iterable[np.ndarray]
    ) -> None:
        """Member ``name`` of ``shape``/``dtype`` from row chunks whose lengths sum to shape[0]."""
        dt = np.dtype(dtype)
        header = {"descr": np.lib.format.dtype_to_descr(dt), "fortran_order": False,
                  "shape": tuple(int(s) for s in shape)}
        rows = 0
        with self._zf.open(f"{name}.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_2_0(f, header)
            for c in chunks:
                c = np.ascontiguousarray(c, dtype=dt)
                if c.shape[1:] != tuple(shape[1:]):
                    raise ChunkedError(f"{self.path}: {name} chunk {c.shape} does not fit {shape}")
                f.write(memoryview(c.reshape(-1).view(np.uint8)))
                rows += len(c)
        if rows != (shape[0] if shape else 1):
            raise ChunkedError(f"{self.path}: {name} got {rows} rows, declared {shape}")

    def add(self, name: str, array: np.ndarray | NpzRows, rows: int = 256) -> None:
        """Member ``name`` copied from an array or :class:`NpzRows`, ``rows`` rows at a time."""
        if not isinstance(array, NpzRows):
            array = np.asarray(array)
            if array.ndim == 0:
                self.add_chunks(name, (), array.dtype, [array.reshape(1)])
                return
        n = len(array)
        self.add_chunks(name, tuple(array.shape), array.dtype,
                        (array[i : min(i + rows, n)] for i in range(0, n, rows)))

    def close(self) -> None:
        self._zf.close()
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        self._zf.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> NpzStreamWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

# --------------------------------------------------------------------------------------------
# test sets (rule metamorphic_testsets_<dataset>)
# --------------------------------------------------------------------------------------------

#: Arrays of a base that only the test-set writer needs (verdicts read the rest).
_PIXEL_KEYS = ("x", "region", "masks", "box_distance", "boxes", "inst_masks")


def _sources(
    base: str, bcfg: Mapping[str, Any], seed: int, split_path: str | None
) -> dict[str, Any]:
    """Source arrays of one base: the dataset split read row-chunk by row-chunk (``split``
    bases: :class:`NpzRows`, nothing held whole) or DigitScenes
    scenes generated in memory, seeded by (seed, "metamorphic", base) only."""
    if bcfg.get("split"):
        if split_path is None:
            raise ExperimentError(f"metamorphic.testsets.{base}.split: no dataset split path given")
        rows = npz_rows(split_path)
        keep = ("x", "y", "boxes", "masks", "box_distance", "area_ratio")
        return {k: rows[k] for k in keep if k in rows}
    opts = ds.check_options(bcfg["options"], f"metamorphic.testsets.{base}.options")
    return ds.generate(opts["n"], derive_seed(seed, "metamorphic", base), opts, training=False)


def _region(arrays: Mapping[str, Any], sl: slice, mode: str, pad: int) -> np.ndarray:
    """R of rows ``sl``: boxes padded by ``bbox_pad_px`` or masks dilated by ``mask_pad_px``
    (docs/metamorphic.md, readings R1, R2)."""
    sub = {k: arrays[k][sl] for k in ("boxes", "masks", "box_distance") if k in arrays}
    h, w = arrays["x"].shape[1:3]
    return rg.regions_from_image_set(sub, (h, w), mode, pad)


def part_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """Source ranges [lo, hi) of ``parts`` near-equal follow-up parts of ``n`` sources."""
    if parts < 1 or parts > max(n, 1):
        raise ExperimentError(f"parts={parts} must be in 1..{max(n, 1)} (the number of sources)")
    return [(k * n // parts, (k + 1) * n // parts) for k in range(parts)]


def make_base(
    base: str, bcfg: Mapping[str, Any], cfg: Mapping[str, Any], seed: int, split_path: str | None = None
) -> dict[str, np.ndarray]:
    """Source images of one base with the region R, its area ratio and has_region, in memory
    (small sets and tests; :func:`write_testsets` streams the same arrays in chunks)."""
    a = {k: (v[0 : len(v)] if isinstance(v, NpzRows) else v)
         for k, v in _sources(base, bcfg, seed, split_path).items()}
    mode = bcfg["region"]
    pad = cfg["bbox_pad_px"] if mode == "box" else cfg["mask_pad_px"]
    region = _region(a, slice(None), mode, pad)
    a["region"] = region
    if "area_ratio" not in a:  # object size (reading R9): unpadded boxes (box mode) or the union mask
        a["area_ratio"] = rg.area_ratio(_region(a, slice(None), mode, 0))
    n = len(region)
    a.setdefault("defect", np.zeros(n, dtype=np.int8))
    a.setdefault("bg_family", np.full(n, -1, dtype=np.int64))
    a["has_region"] = region.reshape(n, -1).any(axis=1)
    return a


def write_testsets(
    dataset: str,
    bases: Mapping[str, Mapping[str, Any]],
    cfg: Mapping[str, Any],
    seed: int,
    out_dir: str | Path,
    split_paths: Mapping[str, str] | None = None,
    meta_paths: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write every base, follow-up and counterfactual set of ``bases`` under ``out_dir``
    (``split_paths``: base -> dataset split file, for bases that name a ``split``;
    ``meta_paths``: base -> that dataset's ``meta.json``, the index of its originals).

    ``cfg["fill_at"]`` (library default ``stored``; the workflow's schema default ``original``)
    says where split bases are filled: ``original`` decodes each source's original file, fills it
    at original resolution and resizes it to the base's store (reading R4; :mod:`.originals`, needs
    ``meta_paths``); ``stored`` fills the split's stored (already resized) images.

    Bounded memory: sources are read, regions computed and follow-ups filled and written
    ``cfg["chunk"]`` sources at a time (filled at original resolution: one source at a time); a
    base with ``parts: P`` writes its follow-ups as P test sets (``...-partKKK``), each inferred
    on its own, so inference holds one part.
    """
    out_dir = Path(out_dir)
    written = []
    custom = cfg.get("coloursets", {})
    chunk = max(1, int(cfg.get("chunk", 256)))
    fill_at = cfg.get("fill_at", "stored")
    if fill_at not in FILL_AT:
        raise ExperimentError(f"metamorphic.fill_at: {fill_at!r} is not one of {list(FILL_AT)}")
    for base, bcfg in bases.items():
        if bcfg.get("split") and fill_at == "original":
            meta = (meta_paths or {}).get(base)
            if meta is None:
                raise ExperimentError(
                    f"metamorphic.testsets.{base}: fill_at 'original' needs the dataset's meta.json "
                    "(the index of the originals); none was given")
            written += _write_original_base(base, bcfg, cfg, out_dir, (split_paths or {})[base],
                                            meta, custom, chunk)
            continue
        written += _write_stored_base(base, bcfg, cfg, out_dir, seed, (split_paths or {}).get(base),
                                      custom, chunk)
    return written


def _write_stored_base(
    base: str, bcfg: Mapping[str, Any], cfg: Mapping[str, Any], out_dir: Path, seed: int,
    split_path: str | None, custom: Mapping[str, Any], chunk: int,
) -> list[Path]:
    """A DigitScenes base, or a split base filled on its stored images (``fill_at: stored``):
    the base file (sources, region R, area ratio, has_region), its follow-up parts and its
    counterfactual re-renders, ``chunk`` sources at a time."""
    written = []
    if bcfg.get("size") or bcfg.get("aspect"):
        raise ExperimentError(
            f"metamorphic.testsets.{base}: a store geometry (size/aspect) needs fill_at "
            "'original' (the stored split has one geometry already)")
    a = _sources(base, bcfg, seed, split_path)
    x, y = a["x"], np.asarray(a["y"][0 : len(a["y"])])
    n = len(x)
    mode = bcfg["region"]
    pad = cfg["bbox_pad_px"] if mode == "box" else cfg["mask_pad_px"]
    steps = [slice(s, min(s + chunk, n)) for s in range(0, n, chunk)]
    has_parts: list[np.ndarray] = []
    ratio_parts: list[np.ndarray] = []

    def region_chunks():
        for sl in steps:
            r = _region(a, sl, mode, pad)
            has_parts.append(r.reshape(len(r), -1).any(axis=1))
            if "area_ratio" not in a:  # object size (reading R9): the unpadded region
                ratio_parts.append(rg.area_ratio(_region(a, sl, mode, 0)))
            yield r

    p = out_dir / f"{base_name(base)}.npz"
    cf_x = a.pop("cf_x", None)
    with NpzStreamWriter(p) as w:
        w.add("x", x, chunk)
        w.add("y", y)
        w.add_chunks("region", (n, *x.shape[1:3]), bool, region_chunks())
        has_region = np.concatenate(has_parts) if has_parts else np.zeros(0, bool)
        area = (np.asarray(a["area_ratio"][0:n]) if "area_ratio" in a
                else np.concatenate(ratio_parts) if ratio_parts else np.zeros(0))
        w.add("area_ratio", area)
        w.add("has_region", has_region)
        for k, v in a.items():
            if k not in ("x", "y", "area_ratio"):
                w.add(k, v, chunk)
        if "defect" not in a:
            w.add("defect", np.zeros(n, dtype=np.int8))
        if "bg_family" not in a:
            w.add("bg_family", np.full(n, -1, dtype=np.int64))
    written.append(p)
    for cs in bcfg["coloursets"]:
        cols = fu.colour_array(fu.resolve_colourset(cs, custom))
        if x.shape[3] == 1:
            cols = cols.mean(axis=1, keepdims=True).round().astype(np.uint8)
        names = followup_names(base, bcfg, cs)
        for name, (lo, hi) in zip(names, part_bounds(n, len(names)), strict=True):
            p = out_dir / f"{name}.npz"
            _write_followup_part(p, a, y, has_region, cols, lo, hi, chunk, mode, pad, cfg["reencode"])
            written.append(p)
            log.info("%s: %d follow-ups (%d colours) of sources %d..%d", p,
                     (1 + 2 * len(cols)) * (hi - lo), len(cols), lo, hi - 1)
    if cf_x is not None:
        k = cf_x.shape[1]
        xs = np.transpose(cf_x, (1, 0, 2, 3, 4)).reshape(-1, *x.shape[1:])
        src = np.tile(np.arange(n), k)
        p = out_dir / f"{cf_name(base)}.npz"
        write_image_set(p, xs, y[src], metamorphic_src=src, cf_family=a["cf_family"].T.reshape(-1))
        written.append(p)
    return written


def _write_followup_part(
    path: Path, a: Mapping[str, Any], y: np.ndarray, has_region: np.ndarray, cols: np.ndarray,
    lo: int, hi: int, chunk: int, mode: str, pad: int, reencode: str,
) -> None:
    """One follow-up test set ``[orig, obj-*, bg-*]`` of sources [lo, hi), variant-major (the
    paper's Section 4.3), written one (variant, chunk) block at a time; sources without a region
    keep their bytes in every variant (docs/metamorphic.md, reading R3)."""
    if reencode not in ("none", "jpeg95"):
        raise fu.FollowupError(f"reencode {reencode!r} is not one of ['none', 'jpeg95']")
    x = a["x"]
    n_c = len(cols)
    n_var = 1 + 2 * n_c
    m = hi - lo
    steps = [slice(s, min(s + chunk, hi)) for s in range(lo, hi, chunk)]

    def blocks():
        for v in range(n_var):
            for sl in steps:
                xs = np.asarray(x[sl])
                if v == 0:
                    yield xs
                    continue
                kind = "obj" if v <= n_c else "bg"
                has = has_region[sl]
                r = _region(a, sl, mode, pad) & has[:, None, None]
                out = fu.fill(xs, r, cols[(v - 1) % n_c][None], kind)[0]
                out[~has] = xs[~has]
                yield fu.jpeg_roundtrip(out) if reencode == "jpeg95" else out

    src = np.tile(np.arange(lo, hi, dtype=np.int64), n_var)
    with NpzStreamWriter(path) as w:
        w.add_chunks("x", (n_var * m, *x.shape[1:]), np.uint8, blocks())
        w.add("y", y[src].astype(np.int64))
        w.add("metamorphic_variant", np.repeat(np.arange(n_var, dtype=np.int16), m))
        w.add("metamorphic_src", src)


def _write_original_base(
    base: str, bcfg: Mapping[str, Any], cfg: Mapping[str, Any], out_dir: Path, split_path: str,
    meta_path: str, custom: Mapping[str, Any], chunk: int,
) -> list[Path]:
    """A split base filled at original resolution (reading R4, ``fill_at: original``): the base file
    (x and R sampled at the base's store geometry, has_region from R at original resolution) and
    its follow-up parts, each source decoded, filled per colour and only then resized."""
    orig = og.Originals(meta_path, bcfg["split"])
    split = npz_rows(split_path)
    n = len(split["y"])
    if len(orig) != n:
        raise ExperimentError(f"{meta_path}: index of split {bcfg['split']!r} has {len(orig)} rows, "
                              f"{split_path} has {n}")
    size, aspect = bcfg.get("size") or orig.stored[0], bcfg.get("aspect") or orig.stored[1]
    og.check_geometry(size, aspect, f"metamorphic.testsets.{base}")
    mode = bcfg["region"]
    pad = cfg["bbox_pad_px"] if mode == "box" else cfg["mask_pad_px"]
    y = np.asarray(split["y"][0:n])
    steps = [slice(s, min(s + chunk, n)) for s in range(0, n, chunk)]
    has_region = np.zeros(n, dtype=bool)
    boxes = np.zeros((n, 4), dtype=np.float32)

    def x_chunks():
        if (size, aspect) == orig.stored:  # the split is this store: its bytes, not re-decoded
            yield from (split["x"][sl] for sl in steps)
            return
        for sl in steps:
            yield np.stack([og.store_image(orig.image(i), size, aspect)
                            for i in range(sl.start, sl.stop)])

    def region_chunks():
        for sl in steps:
            out = np.empty((sl.stop - sl.start, size, size), dtype=bool)
            for j, i in enumerate(range(sl.start, sl.stop)):
                r = orig.region(i, mode, pad)
                has_region[i] = r.any()
                out[j] = og.store_region(r, size, aspect)
                boxes[i] = enclosing_box(out[j])
            yield out

    p = out_dir / f"{base_name(base)}.npz"
    with NpzStreamWriter(p) as w:
        w.add_chunks("x", (n, size, size, 3), np.uint8, x_chunks())
        w.add("y", y)
        w.add_chunks("region", (n, size, size), bool, region_chunks())
        w.add("boxes", boxes)  # the filled region's enclosing box at the store (gallery)
        w.add("area_ratio", np.asarray(split["area_ratio"][0:n]))  # original pixels (reading R9)
        w.add("has_region", has_region)
        w.add("defect", np.zeros(n, dtype=np.int8))
        w.add("bg_family", np.full(n, -1, dtype=np.int64))
    written = [p]
    for cs in bcfg["coloursets"]:
        cols = fu.colour_array(fu.resolve_colourset(cs, custom))
        names = followup_names(base, bcfg, cs)
        for name, (lo, hi) in zip(names, part_bounds(n, len(names)), strict=True):
            p = out_dir / f"{name}.npz"
            _write_original_part(p, orig, y, has_region, cols, lo, hi, chunk, (size, aspect),
                                 mode, pad, cfg["reencode"])
            written.append(p)
            log.info("%s: %d follow-ups (%d colours) of sources %d..%d, filled at original "
                     "resolution, stored at %d (%s)", p, (1 + 2 * len(cols)) * (hi - lo),
                     len(cols), lo, hi - 1, size, aspect)
    return written


def _write_original_part(
    path: Path, orig: og.Originals, y: np.ndarray, has_region: np.ndarray, cols: np.ndarray,
    lo: int, hi: int, chunk: int, geometry: tuple[int, str], mode: str, pad: int, reencode: str,
) -> None:
    """One follow-up test set ``[orig, obj-*, bg-*]`` of sources [lo, hi), variant-major (the
    paper's Section 4.3), filled at original resolution and then resized to the store.

    Each source is decoded once; its variants are written at their variant-major row of a
    ``<path>.spool`` file (positioned writes, so memory holds one original and one filled copy),
    which is then streamed ``chunk`` rows at a time into the ``.npz`` and removed. ``jpeg95``
    encodes the filled original, as the authors saved their mutants (docs/metamorphic.md, reading R4)."""
    if reencode not in ("none", "jpeg95"):
        raise fu.FollowupError(f"reencode {reencode!r} is not one of ['none', 'jpeg95']")
    size, aspect = geometry
    n_c = len(cols)
    n_var = 1 + 2 * n_c
    m = hi - lo
    row_bytes = size * size * 3
    spool = path.with_name(path.name + ".spool")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(spool, "wb+") as f:
            f.truncate(n_var * m * row_bytes)

            def put(v: int, j: int, img: np.ndarray) -> None:
                f.seek((v * m + j) * row_bytes)
                f.write(memoryview(np.ascontiguousarray(img, dtype=np.uint8).reshape(-1)))

            for j, i in enumerate(range(lo, hi)):
                img = orig.image(i)
                src = og.store_image(img, size, aspect)
                put(0, j, src)
                if not has_region[i]:  # no region: every variant keeps the source (reading R3)
                    for v in range(1, n_var):
                        put(v, j, src)
                    continue
                r = orig.region(i, mode, pad, shape=img.shape[:2])
                for ci in range(n_c):
                    for kind, v in (("obj", 1 + ci), ("bg", 1 + n_c + ci)):
                        out = fu.fill(img[None], r[None], cols[ci : ci + 1], kind)[0]
                        if reencode == "jpeg95":
                            out = fu.jpeg_roundtrip(out)
                        put(v, j, og.store_image(out[0], size, aspect))

            def blocks():
                for s in range(0, n_var * m, chunk):
                    k = min(chunk, n_var * m - s)
                    buf = np.empty((k, size, size, 3), dtype=np.uint8)
                    f.seek(s * row_bytes)
                    f.readinto(memoryview(buf.reshape(-1)))
                    yield buf

            src_idx = np.tile(np.arange(lo, hi, dtype=np.int64), n_var)
            with NpzStreamWriter(path) as w:
                w.add_chunks("x", (n_var * m, size, size, 3), np.uint8, blocks())
                w.add("y", y[src_idx].astype(np.int64))
                w.add("metamorphic_variant", np.repeat(np.arange(n_var, dtype=np.int16), m))
                w.add("metamorphic_src", src_idx)
    finally:
        spool.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------
# verdicts (rule metamorphic_verdicts, one zoo after the other)
# --------------------------------------------------------------------------------------------


def oracle_options(cfg: Mapping[str, Any], model: str) -> orc.OracleOptions:
    """Oracle options of one model; the multi-label threshold follows ``ml_threshold_source``
    (``code`` or ``paper`` assignment, docs/metamorphic.md, reading R6), else ``ml_threshold``."""
    table = cfg["ml_thresholds"].get(cfg["ml_threshold_source"], {})
    tau = float(table.get(model, cfg["ml_threshold"]))
    return orc.OracleOptions(
        mr1_equal_certainty=cfg["mr1_equal_certainty"],
        single_mr2_reference=cfg["single_mr2_reference"],
        ml_threshold=tau,
        ml_threshold_cmp=cfg["ml_threshold_cmp"],
        ml_certainty=cfg["ml_certainty"],
        vote_k=cfg["vote_k"] or None,
    )


def _probs(logits: np.ndarray, task: str) -> np.ndarray:
    return softmax(logits) if task == "single" else orc.sigmoid(logits)


def _colour_subsets(colourset: str, custom: Mapping[str, Any]) -> dict[str, list[int]]:
    """Verdict sets computed from one follow-up set: itself, and c3 from a superset (RQ2)."""
    cols = fu.resolve_colourset(colourset, custom)
    out = {colourset: list(range(len(cols)))}
    main = fu.COLOURSETS["c3"]
    if colourset != "c3" and cols[: len(main)] == main:
        out[f"c3-from-{colourset}"] = list(range(len(main)))
    return out


def inference_logits(infer: Mapping[tuple[str, str], str], testset: str, model: str) -> np.ndarray:
    """Logits (rows, K) of ``model`` on ``testset``: the study's one reader of inference results
    (``infer`` maps (test set, model) to the artefact the workflow names)."""
    return read_logits(infer[(testset, model)], testset)


def followup_logits(
    infer: Mapping[tuple[str, str], str], base: str, bcfg: Mapping[str, Any], colourset: str,
    model: str, n_var: int,
) -> np.ndarray:
    """Logits of every follow-up part, reassembled variant-major (V * N, K) as one set."""
    parts = [inference_logits(infer, t, model) for t in followup_names(base, bcfg, colourset)]
    if len(parts) == 1:
        return parts[0]
    blocks = [q.reshape(n_var, len(q) // n_var, -1) for q in parts]
    out = np.concatenate(blocks, axis=1)
    return out.reshape(-1, out.shape[-1])


def read_base_annotations(path: str | Path) -> dict[str, np.ndarray]:
    """A base's labels and per-source arrays without its pixels (x, masks...), except the region
    when hidden instance masks exist (oracle validity, docs/metamorphic.md, reading R10)."""
    rows = npz_rows(path)
    skip = set(_PIXEL_KEYS) - ({"region", "inst_masks"} if "inst_masks" in rows else set())
    return {k: r[0 : len(r)] if r.shape else np.load(path)[k] for k, r in rows.items() if k not in skip}


def zoo_verdicts(
    zoo: str,
    role: str,
    sheet: pd.DataFrame,
    bases: Mapping[str, Mapping[str, Any]],
    base_paths: Mapping[str, str],
    infer: Mapping[tuple[str, str], str],
    cfg: Mapping[str, Any],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Verdicts of every model of a zoo on every base and colour set (the paper's Section 4.4).

    ``infer`` maps (test-set name, model) to its inference artefact. Returns (summary: one row per
    model x base x colour set in the authors' CSV layout plus oracle precision and counterfactual
    recall; per-image verdict table).
    """
    custom = cfg.get("coloursets", {})
    rows: list[dict[str, Any]] = []
    images: list[pd.DataFrame] = []
    for base, bcfg in bases.items():
        ex = read_base_annotations(base_paths[base])
        y = ex["y"]
        task = "multi" if y.ndim == 2 else "single"
        n = len(y)
        if "inst_masks" in ex:
            mr1_valid, mr2_valid = an.followup_validity(
                ex["region"], ex["inst_masks"], cfg["validity_threshold"]
            )
        else:  # real data: validity needs the human check of RQ1 (reading R11)
            mr1_valid = mr2_valid = None
        defect = ex["defect"]
        for model in progress(list(sheet["model"]), desc=f"metamorphic {zoo}/{base}", unit="model"):
            meta = sheet.set_index("model").loc[model]
            opt = oracle_options(cfg, model)
            cf_stats: dict[str, Any] = {}
            if (cf_name(base), model) in infer:
                cf_logits = inference_logits(infer, cf_name(base), model)
                k = len(cf_logits) // n
                cf_pred = cf_logits.reshape(k, n, -1).argmax(axis=2).T
            else:
                cf_pred = None
            for cs in bcfg["coloursets"]:
                n_col = len(fu.resolve_colourset(cs, custom))
                logits = followup_logits(infer, base, bcfg, cs, model, 1 + 2 * n_col)
                p = _probs(logits, task)
                p_s, p_o, p_b = orc.split_followup_outputs(p, n_col, n)
                for vname, idx in _colour_subsets(cs, custom).items():
                    v = orc.evaluate(task, p_s, p_o[:, idx], p_b[:, idx], y, ex["has_region"], opt)
                    row: dict[str, Any] = {
                        "zoo": zoo, "role": role, "model": model, "base": base, "colourset": vname,
                        "task": task, "width": int(meta["width"]), "epochs": int(meta["epochs"]),
                        "seed": int(meta["seed"]), "tau": opt.ml_threshold if task == "multi" else np.nan,
                    }
                    row["n_classes"] = int(p.shape[-1])
                    row.update(an.summary_row(v))
                    row.update(_precision_stats(v, mr1_valid, mr2_valid, defect))
                    if cf_pred is not None and task == "single":
                        bg_d, obj_d = an.counterfactual_drivers(cf_pred, ex["cf_family"], v.pred)
                        cf_stats = an.mr2_recall(v.mr2, v.correct, bg_d, obj_d)
                        row.update({f"cf_{k_}": val for k_, val in cf_stats.items()})
                    rows.append(row)
                    images.append(_image_table(zoo, model, base, vname, v, y, ex, mr1_valid, mr2_valid))
    summary = pd.DataFrame(rows)
    return summary, pd.concat(images, ignore_index=True) if images else pd.DataFrame()


def _bits(ok: np.ndarray) -> np.ndarray:
    return np.array(["".join("1" if b else "0" for b in r) for r in ok])


def _image_table(zoo, model, base, cs, v: orc.Verdicts, y, ex, mr1_valid, mr2_valid) -> pd.DataFrame:
    """Per-image verdict table: ids, GT, prediction, certainty, per-colour bits, flags."""
    def enc(a):  # multi-hot -> bitmask integer
        a = np.asarray(a)
        return (a.astype(np.int64) << np.arange(a.shape[1])).sum(axis=1) if a.ndim == 2 else a
    return pd.DataFrame({
        "zoo": zoo, "model": model, "base": base, "colourset": cs, "id": np.arange(len(v)),
        "gt": enc(y), "pred": enc(v.pred), "correct": v.correct, "certainty": v.certainty,
        "mr1_bits": _bits(v.mr1_ok), "mr2_bits": _bits(v.mr2_ok),
        "mr1": v.mr1, "mr2": v.mr2, "mr12": v.mr12, "has_region": v.has_region,
        "area_ratio": ex["area_ratio"], "defect": ex["defect"],
        "bg_family": ex["bg_family"],
        "mr1_valid": mr1_valid if mr1_valid is not None else False,
        "mr2_valid": mr2_valid if mr2_valid is not None else False,
    })


def _precision_stats(v: orc.Verdicts, mr1_valid, mr2_valid, defect) -> dict[str, Any]:
    """Oracle precision from the hidden masks (docs/metamorphic.md, reading R10; RQ1 analogue) and FP categories;
    NaN precision without hidden masks (real data: RQ1's human check)."""
    out: dict[str, Any] = {}
    if mr1_valid is None:
        for mr, flag in (("MR1", v.mr1), ("MR2", v.mr2)):
            k = int((flag & v.correct).sum())
            out.update({f"{mr}_flags": k, f"{mr}_cochran": an.cochran(k), f"{mr}_tp": np.nan,
                        f"{mr}_precision": np.nan, f"{mr}_fp_multiple": np.nan,
                        f"{mr}_fp_multiple_and_incomplete": np.nan, f"{mr}_fp_incomplete": np.nan,
                        f"{mr}_fp_other": np.nan})
        out["share_multiple_all"] = np.nan
        return out
    multiple = (defect & 1) > 0
    incomplete = (defect & 2) > 0
    for mr, flag, valid in (("MR1", v.mr1, mr1_valid), ("MR2", v.mr2, mr2_valid)):
        f = flag & v.correct
        k = int(f.sum())
        tp = int((f & valid).sum())
        inv = f & ~valid
        out[f"{mr}_flags"] = k
        out[f"{mr}_cochran"] = an.cochran(k)
        out[f"{mr}_tp"] = tp
        out[f"{mr}_precision"] = tp / k if k else np.nan
        out[f"{mr}_fp_multiple"] = int((inv & multiple).sum())
        out[f"{mr}_fp_multiple_and_incomplete"] = int((inv & multiple & incomplete).sum())
        out[f"{mr}_fp_incomplete"] = int((inv & incomplete & ~multiple).sum())
        out[f"{mr}_fp_other"] = int((inv & ~multiple & ~incomplete).sum())
    out["share_multiple_all"] = float(multiple[v.correct].mean()) if v.correct.any() else np.nan
    return out
