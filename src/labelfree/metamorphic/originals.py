"""Follow-ups filled at original resolution, then resized (docs/metamorphic.md, reading R4).

The authors fill R (or B) at original resolution, before any model-specific resize, crop or
normalisation, so a fill's edge is blended by the resize exactly as the object's own edge is.
The data layer stores ImageNet and COCO splits already resized (``results/data/{dataset}/{split}.npz``);
filling those is "resize, then fill", whose hard colour edge differs from "fill, then resize" on
every boundary pixel of R. This module goes back to the originals: the split's ``meta.json``
lists, row for row, each image's file and annotations in original pixels (the data layer's index),
so a follow-up is decoded, filled at original resolution (boxes padded by ``bbox_pad_px`` *original*
pixels, reading R1; COCO's union mask dilated by ``mask_pad_px``) and only then resized to the
base's store geometry, from which each model's own transform takes its input (labelfree.zoo.geometry,
torchvision weights' transforms).

Store geometry of a base (``size``, ``aspect``): ``keep`` = shorter side to ``size``, then the
centre ``size`` x ``size`` square (torchvision ``Resize`` + ``CenterCrop``, the eval transform of
the ImageNet stand-ins and of the DeepInspect ResNet-50), so a model's ``Resize(r <= size)`` +
``CenterCrop(c)`` sees what it would see on the original up to one extra resampling (none when
r == size); ``squash`` = the whole image to ``size`` x ``size`` (the ASL TResNets). The defaults
are the data layer's: ImageNet ``keep``, COCO ``squash``, at the dataset's ``options.size``; with
them the ``orig`` variant is byte-identical to the split (docs/metamorphic.md, reading R5).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from labelfree.data.coco import CocoImages
from labelfree.data.imagenet import resize_keep_aspect, square_geometry
from labelfree.data.lazy import decode_rgb, resize_rgb
from labelfree.data.registry import COCO_OPTIONS, IMAGENET_OPTIONS
from labelfree.metamorphic import regions as rg
from labelfree.metamorphic.plan import DATA_LAYER_ASPECT

ASPECTS = ("keep", "squash")


class OriginalsError(ValueError):
    """A split without an index of originals, a missing file or an unsupported region mode."""


def store_image(img: np.ndarray, size: int, aspect: str) -> np.ndarray:
    """One HWC uint8 image resized to the store: the data layer's own functions (bilinear, PIL)."""
    if aspect == "keep":
        return resize_keep_aspect(img, size)
    if aspect == "squash":
        return resize_rgb(img, size)
    raise OriginalsError(f"aspect {aspect!r} is not one of {list(ASPECTS)}")


def store_grid(height: int, width: int, size: int, aspect: str) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the original pixel under each stored pixel's centre (nearest neighbour):
    the sampling of the data layer's ``box_distance`` (keep) and ``resize_mask`` (squash)."""
    if aspect == "keep":
        rh, rw, top, left = square_geometry(height, width, size)
    elif aspect == "squash":
        rh, rw, top, left = size, size, 0, 0
    else:
        raise OriginalsError(f"aspect {aspect!r} is not one of {list(ASPECTS)}")
    rows = np.minimum(((np.arange(size) + top + 0.5) * height / rh).astype(np.int64), height - 1)
    cols = np.minimum(((np.arange(size) + left + 0.5) * width / rw).astype(np.int64), width - 1)
    return rows, cols


def store_region(region: np.ndarray, size: int, aspect: str) -> np.ndarray:
    """An original-resolution bool region sampled at the store's pixel centres (size, size)."""
    rows, cols = store_grid(*region.shape, size, aspect)
    return region[rows[:, None], cols[None, :]]


class Originals:
    """The original images and regions of one split of an ImageNet or COCO dataset, row for row.

    ``meta_path`` is the dataset's ``meta.json`` (labelfree.data.registry.prepare_dataset), whose
    ``index[split]`` holds one record per stored row, in order.
    """

    def __init__(self, meta_path: str | os.PathLike[str], split: str) -> None:
        p = Path(meta_path)
        try:
            meta = json.loads(p.read_text())
        except FileNotFoundError:
            raise OriginalsError(f"{p}: dataset meta.json not found") from None
        self.source = str(meta.get("source"))
        if self.source not in DATA_LAYER_ASPECT:
            raise OriginalsError(f"{p}: source {self.source!r} has no originals (only "
                                 f"{sorted(DATA_LAYER_ASPECT)} do)")
        index = meta.get("index", {})
        if split not in index:
            raise OriginalsError(f"{p}: no index of split {split!r}; has {sorted(index)}")
        self.rows: list[dict[str, Any]] = index[split]
        opts = (meta.get("config") or {}).get("options", {}) or {}
        defaults = IMAGENET_OPTIONS if self.source == "imagenet_val" else COCO_OPTIONS
        #: The data layer's store of this split: (size, aspect).
        self.stored = (int(opts.get("size", defaults["size"])), DATA_LAYER_ASPECT[self.source])
        self._coco = None
        if self.source == "coco":
            # the same defaults as labelfree.data.registry's lazy builder
            base = Path((meta.get("config") or {}).get("root", "resources/data")) / "coco"
            self._coco = CocoImages(opts.get("images_dir") or base / "images",
                                    opts.get("annotations")
                                    or base / "annotations" / "instances_val2014.json")

    def __len__(self) -> int:
        return len(self.rows)

    def image(self, i: int) -> np.ndarray:
        """Row ``i``'s original image, decoded to RGB uint8 (H, W, 3)."""
        return decode_rgb(self.rows[i]["path"])

    def region(self, i: int, mode: str, pad_px: int, shape: tuple[int, int] | None = None) -> np.ndarray:
        """R of row ``i`` at original resolution (docs/metamorphic.md, readings R1, R2), bool (H, W).

        ImageNet (``box``): the five steps of ``handle_bbox.py`` (regions.normalise_boxes: XML
        ``<size>`` -> decoded size, swap, clamp, round, pad ``pad_px``, clip), union of the boxes.
        COCO (``mask``): the OR of ``annToMask`` over every annotation, dilated by ``pad_px``.
        ``shape`` (H, W) of the decoded image when known (else read from the file header).
        """
        row = self.rows[i]
        if self.source == "imagenet_val":
            if mode != "box":
                raise OriginalsError("ImageNet annotations are boxes: region mode must be 'box' "
                                     "so bbox_pad_px applies (docs/metamorphic.md, reading R1)")
            if shape is None:
                with Image.open(row["path"]) as im:
                    w, h = im.size
            else:
                h, w = shape
            boxes = np.asarray(row["boxes"], dtype=np.float64).reshape(-1, 4)
            if len(boxes) == 0:
                return np.zeros((h, w), dtype=bool)
            b = rg.normalise_boxes(boxes, (row["width"], row["height"]), (w, h), pad_px)
            return rg.box_masks(b, h, w, owner=np.zeros(len(b), dtype=np.int64), n=1)[0]
        if mode != "mask":
            raise OriginalsError("COCO annotations are instance masks: region mode must be 'mask' "
                                 "(docs/metamorphic.md, reading R2)")
        return rg.pad_masks(self._coco.union_mask(int(row["image_id"]))[None], pad_px)[0]


def check_geometry(size: int, aspect: str, where: str) -> None:
    if not isinstance(size, int) or size < 1:
        raise OriginalsError(f"{where}.size: {size!r} is not a positive integer")
    if aspect not in ASPECTS:
        raise OriginalsError(f"{where}.aspect: {aspect!r} is not one of {list(ASPECTS)}")
