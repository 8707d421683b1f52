"""COCO (2014/2017 val): user-supplied images plus the instances JSON, read with pycocotools.

The user supplies ``images_dir`` (e.g. the extracted ``val2014/``) and ``annotations`` (e.g.
``annotations/instances_val2014.json``). Following the metamorphic paper's use of COCO
(docs/data.md, reading R3):

- classes are the categories in the order of the JSON (``categories`` list), named by name;
- ``y`` is a multi-hot (N, K) vector with every category that has at least one annotation
  of the image, crowd annotations included; images without annotations have an empty label;
- the region of an image is the pixelwise OR of ``COCO.annToMask(ann)`` over all its
  annotations, which decodes polygons, uncompressed RLE (crowd) and compressed RLE alike.

Materialised sets carry ``masks`` (N, S, S) (the union mask, nearest-neighbour resized),
``boxes`` (N, 4) (its enclosing box, zeros when empty) and ``area_ratio`` (N,) (union-mask
pixels / (H W) of the original image, 0 without annotation). Images are decoded to RGB and
resized to S x S (bilinear, aspect ratio not kept).
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pycocotools.coco import COCO

from labelfree.data.base import DataError
from labelfree.data.lazy import LazyImageSet, decode_rgb, enclosing_box, resize_mask, resize_rgb


class CocoImages(LazyImageSet):
    """Index of COCO images (sorted by image id) with multi-hot labels; masks decoded lazily."""

    def __init__(
        self, images_dir: str | os.PathLike[str], annotations: str | os.PathLike[str]
    ) -> None:
        images_dir, annotations = Path(images_dir), Path(annotations)
        if not annotations.is_file():
            raise DataError(f"{annotations}: COCO instances JSON not found")
        if not images_dir.is_dir():
            raise DataError(f"{images_dir}: COCO images directory not found")
        try:
            with contextlib.redirect_stdout(io.StringIO()):  # pycocotools prints progress
                self.coco = COCO(str(annotations))
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"{annotations}: not a valid COCO instances file ({exc})") from exc
        cats = self.coco.dataset.get("categories", [])
        if not cats:
            raise DataError(f"{annotations}: no categories")
        self.cat_ids = [c["id"] for c in cats]
        self.classes = [c["name"] for c in cats]
        col = {cid: i for i, cid in enumerate(self.cat_ids)}
        rows = []
        for img_id in sorted(self.coco.getImgIds()):
            info = self.coco.imgs[img_id]
            anns = self.coco.imgToAnns.get(img_id, [])
            rows.append(
                {
                    "image_id": img_id,
                    "file": info["file_name"],
                    "path": str(images_dir / info["file_name"]),
                    "width": int(info["width"]),
                    "height": int(info["height"]),
                    "labels": sorted({col[a["category_id"]] for a in anns}),
                    "n_annotations": len(anns),
                }
            )
        if not rows:
            raise DataError(f"{annotations}: no images")
        self.index = pd.DataFrame(rows)

    def union_mask(self, image_id: int) -> np.ndarray:
        """Pixelwise OR of ``annToMask`` over every annotation (H, W) bool, original size."""
        info = self.coco.imgs[image_id]
        mask = np.zeros((info["height"], info["width"]), dtype=bool)
        with warnings.catch_warnings():  # pycocotools' numpy-2 copy= deprecation notice
            warnings.simplefilter("ignore", DeprecationWarning)
            for ann in self.coco.imgToAnns.get(image_id, []):
                mask |= self.coco.annToMask(ann).astype(bool)
        return mask

    def load_row(self, row: pd.Series, size: int) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        img = decode_rgb(row["path"])
        if img.shape[:2] != (row["height"], row["width"]):
            raise DataError(
                f"{row['path']}: decoded size {img.shape[1]}x{img.shape[0]} differs from the "
                f"annotation's {row['width']}x{row['height']}"
            )
        mask = self.union_mask(int(row["image_id"]))
        small = resize_mask(mask, size)
        y = np.zeros(len(self.classes), dtype=np.int64)
        y[list(row["labels"])] = 1
        extras = {
            "boxes": enclosing_box(small),
            "masks": small,
            "area_ratio": np.float32(mask.mean()),
        }
        return resize_rgb(img, size), y, extras
