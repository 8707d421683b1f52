"""``source: imagefolder``: a user's folder of images (docs/your-zoo.md, section 4).

Two layouts:

- labelled: one subfolder per class (``cat/001.jpg``, ``dog/x.png``), as torchvision's
  ``ImageFolder`` reads them. Without a label map the classes are the sorted folder names,
  numbered from 0; with ``label_map`` (a text file, one ``<folder> <class index>`` per line,
  separated by spaces, a tab or a comma, ``#`` comments) each folder takes the index of the
  model's label space it names (``n01443537 1`` puts ImageNet-R's goldfish folder on ImageNet
  class 1), and every folder must be in it;
- unlabelled: the images directly in the folder (no subfolders). The set carries the extra
  ``unlabelled`` (True per image) and labels 0 that nothing reads: its test sets are
  unlabelled for accuracy and every method (labelfree.store.read_labels).

``class_subset`` (a file of class indices of the label space, as a zoo row's ``class_subset``
reads it, labelfree.zoo.sources) makes each label its position in the subset, so labels and the
restricted logits of the zoo's models (ImageNet-R and -A: 200 of the 1,000 ImageNet classes) count
the same classes. Images are indexed first (every file opened once: all unreadable ones are
named in one error, none skipped), then decoded a chunk at a time when the split is written
(labelfree.data.lazy.LazySplit), each resized with its shorter side to ``size`` (``interpolation``:
PIL's bilinear or bicubic, aspect kept) and centre-cropped to ``size`` x ``size``. With ``size``
equal to a model's resize and its interpolation, the model's own resize-and-crop then sees the
pixels it would see on the original file, up to a one-pixel shift where the two centre crops
round their offsets differently from the one crop of the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image, UnidentifiedImageError

from labelfree.data.base import DataError, check_options
from labelfree.data.classes import IMAGEFOLDER_OPTIONS, read_class_subset, read_label_map
from labelfree.data.imagenet import square_geometry
from labelfree.data.lazy import LazyImageSet, decode_rgb, lazy_splits
from labelfree.seeds import rng

#: Image file suffixes indexed (case-insensitive); other files are refused, not skipped.
SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".ppm", ".pgm")
#: Files a folder may hold besides images (ignored).
IGNORED = (".DS_Store", "Thumbs.db", "desktop.ini")
INTERPOLATIONS = {"bilinear": Image.BILINEAR, "bicubic": Image.BICUBIC}


def _images(folder: Path) -> tuple[list[Path], list[Path]]:
    """(image files, other files) directly in ``folder``, sorted; hidden files are ignored."""
    images, other = [], []
    for p in sorted(folder.iterdir()):
        if p.name.startswith(".") or p.name in IGNORED or p.is_dir():
            continue
        (images if p.suffix.lower() in SUFFIXES else other).append(p)
    return images, other


def _bad_images(paths: list[Path]) -> list[str]:
    """``path: why`` for each file PIL cannot identify (header read only)."""
    bad = []
    for p in paths:
        try:
            with Image.open(p) as im:
                im.size  # noqa: B018 (the header is parsed on open)
        except (UnidentifiedImageError, OSError, SyntaxError) as exc:
            bad.append(f"{p}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
    return bad


class ImageFolder(LazyImageSet):
    """Index of a folder of images (labelled by subfolder, or unlabelled); decoded lazily."""

    def __init__(
        self,
        images_dir: str | os.PathLike[str],
        label_map: str | os.PathLike[str] = "",
        class_subset: str | os.PathLike[str] = "",
        interpolation: str = "bilinear",
    ) -> None:
        root = Path(images_dir)
        if not root.is_dir():
            raise DataError(f"{root}: image folder not found")
        if interpolation not in INTERPOLATIONS:
            raise DataError(f"interpolation {interpolation!r} is not one of {sorted(INTERPOLATIONS)}")
        self.interpolation = interpolation
        top, other = _images(root)
        subdirs = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        if subdirs and (top or other):
            raise DataError(f"{(top + other)[0]}: a file beside class folders; put every image in "
                            "its class folder (labelled) or use no subfolders (unlabelled)")
        self.labelled = bool(subdirs)
        files: list[tuple[Path, str]] = []
        if self.labelled:
            for d in subdirs:
                imgs, others = _images(d)
                other += others
                files += [(p, d.name) for p in imgs]
        else:
            files = [(p, "") for p in top]
        if other:
            raise DataError(f"{other[0]}: not an image file (suffixes {SUFFIXES}); "
                            f"{len(other)} such file(s) in {root}")
        if not files:
            raise DataError(f"{root}: no images found")
        bad = _bad_images([p for p, _ in files])
        if bad:
            raise DataError(f"{root}: {len(bad)} unreadable image(s): " + "; ".join(bad[:10])
                            + (" ..." if len(bad) > 10 else ""))
        labels, self.classes = self._labels([f for _, f in files], label_map, class_subset)
        self.index = pd.DataFrame({"file": [str(p.relative_to(root)) for p, _ in files],
                                   "path": [str(p) for p, _ in files],
                                   "folder": [f for _, f in files], "label": labels})

    def _labels(
        self, folders: list[str], label_map: str | os.PathLike[str],
        class_subset: str | os.PathLike[str],
    ) -> tuple[list[int], list[str]]:
        """Each image's label and the class names (index -> folder, "" where none maps)."""
        if not self.labelled:
            if label_map or class_subset:
                raise DataError("label_map and class_subset need class subfolders (a labelled "
                                "folder); this folder has none")
            return [0] * len(folders), []
        names = sorted(set(folders))
        mapping = read_label_map(label_map) if label_map else {n: i for i, n in enumerate(names)}
        missing = [n for n in names if n not in mapping]
        if missing:
            raise DataError(f"label map {label_map}: no class index for folder(s) {missing[:10]}")
        if class_subset:
            subset = read_class_subset(class_subset)
            pos = {c: i for i, c in enumerate(subset)}
            outside = [n for n in names if mapping[n] not in pos]
            if outside:
                raise DataError(f"class subset {class_subset}: folder(s) {outside[:10]} map to "
                                "classes outside it")
            mapping = {n: pos[mapping[n]] for n in names}
        classes = [""] * (max(mapping[n] for n in names) + 1)
        for n in names:
            classes[mapping[n]] = n
        return [mapping[f] for f in folders], classes

    def load_row(self, row: pd.Series, size: int) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        img = decode_rgb(row["path"])
        extras = {} if self.labelled else {"unlabelled": np.True_}
        return square_resize(img, size, self.interpolation), np.int64(row["label"]), extras


def square_resize(img: np.ndarray, size: int, interpolation: str = "bilinear") -> np.ndarray:
    """Shorter side to ``size`` (aspect kept, torchvision's rounding), then the centre square."""
    h, w = img.shape[:2]
    rh, rw, top, left = square_geometry(h, w, size)
    if (rh, rw) != (h, w):
        img = np.asarray(Image.fromarray(img).resize((rw, rh), INTERPOLATIONS[interpolation]),
                         dtype=np.uint8)
    return np.ascontiguousarray(img[top : top + size, left : left + size])


def build_imagefolder(name: str, cfg: Mapping[str, Any], seed: int) -> tuple[dict, dict]:
    """Index the folder and partition it by ``splits`` (stratified when labelled): each split a
    LazySplit, decoded when written."""
    where = f"datasets.{name}.options"
    opts = check_options(cfg.get("options", {}) or {}, IMAGEFOLDER_OPTIONS, where)
    if not opts["images_dir"]:
        raise DataError(f"{where}.images_dir: name the folder of images")
    for key, low in (("size", 1), ("limit", 0)):
        if not isinstance(opts[key], int) or opts[key] < low:
            raise DataError(f"{where}.{key}: value {opts[key]!r} is out of range")
    ds = ImageFolder(opts["images_dir"], opts["label_map"], opts["class_subset"],
                     opts["interpolation"])
    strata = ds.index["label"].to_numpy() if ds.labelled else None
    out, index = lazy_splits(ds, strata, cfg["splits"], rng(seed, "data", name), name,
                             opts["limit"], opts["size"], columns=("file", "label"))
    return out, {"classes": ds.classes or None, "index": index, "labelled": ds.labelled}
