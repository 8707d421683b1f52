"""Image sets too large for one array: an index table of file paths plus annotations, read lazily.

ImageNet val (50,000 JPEGs) and COCO val (40,504) are not loaded whole. Their sources build an
index table (a pandas DataFrame, one row per image, annotations in the *original* pixel
coordinates) and decode images only when asked. :meth:`LazyImageSet.materialise` turns chosen
rows into the one array format (all images resized to ``size`` x ``size``, bilinear, aspect
ratio not kept, annotations rescaled), so every downstream layer works unchanged; the
``data_prepare`` rule writes such a subset as ``results/data/{dataset}/{split}.npz``, streaming:
a :class:`LazySplit` is decoded :data:`CHUNK` images at a time and each chunk goes straight into
the file (:func:`labelfree.store.write_image_set_chunks`), so peak memory grows with the chunk,
not the split (ImageNet val at 342 px is about 17.5 GB of images).

Library use without the workflow::

    from labelfree.data.imagenet import ImageNetVal
    ds = ImageNetVal("ILSVRC2012_img_val/", "ILSVRC2012_bbox_val_v3/val/")
    ds.index.head()                      # file, path, label, width, height, boxes, ...
    batch = ds.materialise(range(256), size=224)   # ImageSet with boxes, masks, area_ratio
    for batch in ds.batches(256, size=224): ...
    LazySplit(ds, range(len(ds)), 224).write("val.npz")   # the whole set, 128 images at a time
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from labelfree.data.base import DataError
from labelfree.data.splits import stratified_partition
from labelfree.joblog import progress
from labelfree.store import ImageSet, write_image_set_chunks

#: Images decoded per chunk when a split is written (about 75 MB of ImageNet images, boxes and
#: masks at 342 px; 210 MB of COCO at 640 px).
CHUNK = 128


def decode_rgb(path: str) -> np.ndarray:
    """Decode an image file to uint8 RGB (H, W, 3); greyscale, palette and CMYK are converted."""
    # deferred: parse-time module; PIL.Image adds 0.07 s
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            return np.asarray(im.convert("RGB"), dtype=np.uint8)
    except FileNotFoundError:
        raise DataError(f"{path}: image file not found") from None
    except (UnidentifiedImageError, OSError, SyntaxError) as exc:
        raise DataError(f"{path}: not a readable image ({exc})") from exc


def resize_rgb(img: np.ndarray, size: int) -> np.ndarray:
    """Bilinear resize of one HWC uint8 image to size x size with Pillow."""
    # deferred: parse-time module; PIL.Image adds 0.07 s
    from PIL import Image

    if img.shape[:2] == (size, size):
        return img
    return np.asarray(Image.fromarray(img).resize((size, size), Image.BILINEAR), dtype=np.uint8)


def resize_mask(mask: np.ndarray, size: int) -> np.ndarray:
    """Nearest-neighbour resize of a bool (H, W) mask to size x size (vectorised indexing)."""
    h, w = mask.shape
    rows = np.minimum(((np.arange(size) + 0.5) * h / size).astype(np.int64), h - 1)
    cols = np.minimum(((np.arange(size) + 0.5) * w / size).astype(np.int64), w - 1)
    return mask[rows[:, None], cols[None, :]]


def enclosing_box(mask: np.ndarray) -> np.ndarray:
    """xyxy (x2, y2 exclusive) of the True pixels of a (H, W) mask; zeros when empty."""
    ys, xs = np.nonzero(mask.any(axis=1))[0], np.nonzero(mask.any(axis=0))[0]
    if len(ys) == 0:
        return np.zeros(4, dtype=np.float32)
    return np.array([xs[0], ys[0], xs[-1] + 1, ys[-1] + 1], dtype=np.float32)


class LazyImageSet:
    """Base class: ``index`` (DataFrame, one row per image) and per-row decoding.

    Subclasses set ``self.index`` (with at least a ``path`` column) and implement
    :meth:`load_row`, returning the resized image, its label and its aligned extras.
    """

    index: pd.DataFrame
    classes: list[str]

    def __len__(self) -> int:
        return len(self.index)

    def load_row(self, row: pd.Series, size: int) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        raise NotImplementedError

    def materialise(self, rows: Iterable[int] | None = None, size: int = 224) -> ImageSet:
        """Decode the given row positions (all rows by default) into one ImageSet."""
        if size < 1:
            raise DataError(f"materialise: size must be >= 1, got {size}")
        positions = list(range(len(self))) if rows is None else [int(r) for r in rows]
        if not positions:
            raise DataError("materialise: no rows selected")
        xs, ys, extras = [], [], {}
        for pos in _progress(positions):
            x, y, ex = self.load_row(self.index.iloc[pos], size)
            xs.append(x)
            ys.append(y)
            for k, v in ex.items():
                extras.setdefault(k, []).append(v)
        return ImageSet(
            x=np.stack(xs),
            y=np.stack(ys).astype(np.int64),
            extras={k: np.stack(v) for k, v in extras.items()},
        )

    def batches(self, batch_size: int, size: int = 224) -> Iterator[ImageSet]:
        """Materialise the whole set in consecutive batches (bounded memory)."""
        for start in range(0, len(self), batch_size):
            yield self.materialise(range(start, min(start + batch_size, len(self))), size)


@dataclass(frozen=True)
class LazySplit:
    """Rows of a :class:`LazyImageSet` to decode at ``size`` x ``size``: a split not yet decoded.

    :meth:`write` streams it into an ``.npz`` chunk by chunk; :meth:`materialise` decodes it whole
    (the same arrays, for small splits and tests).
    """

    source: LazyImageSet
    rows: Sequence[int]
    size: int

    def __len__(self) -> int:
        return len(self.rows)

    def chunks(self, chunk: int = CHUNK) -> Iterator[ImageSet]:
        """The split as consecutive ImageSets of ``chunk`` rows (the last may be shorter)."""
        if chunk < 1:
            raise DataError(f"chunk must be >= 1, got {chunk}")

        n = len(self.rows)
        bar = progress(desc="decode", total=n, unit="img", mininterval=5.0, disable=n < 1000)
        try:
            for start in range(0, n, chunk):
                part = self.source.materialise(self.rows[start : start + chunk], self.size)
                bar.update(len(part))
                yield part
                del part  # not held while the next chunk is decoded
        finally:
            bar.close()

    def materialise(self) -> ImageSet:
        """The whole split in memory (what :meth:`write` writes, held at once)."""
        return self.source.materialise(self.rows, self.size)

    def write(self, path: str | os.PathLike[str], chunk: int = CHUNK) -> Written:
        """Write the split to ``path`` (:func:`labelfree.store.write_image_set_chunks`), decoding
        ``chunk`` images at a time; returns what ``prepare_dataset`` records of it."""
        counts = np.zeros(0, dtype=np.int64)
        layout: list[tuple[list[int], list[str]]] = []  # the first chunk's (shape, extras)

        def tally(parts: Iterator[ImageSet]) -> Iterator[ImageSet]:
            nonlocal counts
            for part in parts:
                if not layout:
                    layout.append(([int(v) for v in part.x.shape[1:]], sorted(part.extras)))
                labels = part.y if part.y.ndim == 1 else np.nonzero(part.y)[1]
                c = np.bincount(labels)
                if len(c) > len(counts):
                    counts = np.pad(counts, (0, len(c) - len(counts)))
                counts[: len(c)] += c
                yield part
                del part

        write_image_set_chunks(path, len(self.rows), tally(self.chunks(chunk)))
        return Written(shape=layout[0][0], extras=layout[0][1], class_counts=counts.tolist())


@dataclass(frozen=True)
class Written:
    """What :meth:`LazySplit.write` wrote: image shape (H, W, C), extras' names (sorted) and
    class counts (``np.bincount`` of the labels, of the set columns when multi-hot; [] when
    no image has a label), as ``meta.json`` records them."""

    shape: list[int]
    extras: list[str]
    class_counts: list[int]


def _progress(items: Sequence[int]) -> Iterable[int]:
    return progress(items, desc="decode", mininterval=5.0, disable=len(items) < 1000)


def lazy_splits(ds: Any, strata: np.ndarray | None, splits: Any, gen: np.random.Generator,
                name: str, limit: int, size: int, columns: Sequence[str] | None = None,
                ) -> tuple[dict[str, LazySplit], dict[str, list[dict[str, Any]]]]:
    """Partition a lazily decoded image source into the dataset's splits (stratified on
    ``strata`` when given), each cut to ``limit`` items when set: the splits and, per split, its
    rows of ``ds.index`` (``columns`` of it, or all) for the dataset's meta.json."""
    parts = stratified_partition(strata, splits, gen, n=len(ds))
    out, index = {}, {}
    for split, rows in parts.items():
        if limit:
            rows = rows[:limit]
        if len(rows) == 0:
            raise DataError(f"datasets.{name}: split {split!r} would be empty")
        out[split] = LazySplit(ds, rows, size)
        table = ds.index.iloc[rows]
        index[split] = (table[list(columns)] if columns else table).to_dict(orient="records")
    return out, index
