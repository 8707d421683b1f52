"""Target-object regions R and backgrounds B (the paper's Section 4.2; docs/metamorphic.md,
readings R1-R3).

Box mode (ImageNet, DigitScenes): boxes are normalised by the annotation's ``<size>``, inverted
min/max are swapped, clamped to [0, 1], scaled to the decoded image, rounded, padded by
``bbox_pad_px`` and clipped; R is the union of the half-open rectangles
``[ymin:ymax, xmin:xmax]``. Mask mode (COCO, DigitScenes multi-label): R is the pixelwise OR of
every annotation's mask, optionally dilated by ``mask_pad_px`` (default 0, reading R2).

Everything is vectorised over a batch; no Python loop touches pixels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.ndimage import binary_dilation


class RegionError(ValueError):
    """Malformed boxes, masks or annotation files; the message names the value at fault."""


def normalise_boxes(
    boxes: np.ndarray,
    ann_size: np.ndarray | Sequence[float] | None,
    img_size: np.ndarray | Sequence[float],
    pad_px: int = 5,
) -> np.ndarray:
    """Annotation boxes (M, 4) xyxy in annotation coordinates -> int boxes in image pixels.

    Implements the five steps of the authors' ``handle_bbox.py``
    (github.com/yqtianust/PaperUnreliableInference; docs/metamorphic.md, reading R1): divide by the
    annotation's (width, height) ``ann_size`` (``None`` = already in image pixels), swap inverted
    min/max, clamp to [0, 1], multiply by the decoded image's (width, height) ``img_size`` and
    round, pad by ``pad_px`` on every side and clip to the image. ``ann_size``/``img_size`` may be
    (2,) or per-box (M, 2). Returns int64 (M, 4) half-open ``x0, y0, x1, y1``.
    """
    b = np.asarray(boxes, dtype=np.float64)
    if b.ndim != 2 or b.shape[1] != 4:
        raise RegionError(f"boxes must be (M, 4) xyxy, got shape {b.shape}")
    if pad_px < 0:
        raise RegionError(f"bbox_pad_px must be >= 0, got {pad_px}")
    img = np.broadcast_to(np.asarray(img_size, dtype=np.float64), (len(b), 2))
    if ann_size is None:
        ann = img
    else:
        ann = np.broadcast_to(np.asarray(ann_size, dtype=np.float64), (len(b), 2))
    if (ann <= 0).any() or (img <= 0).any():
        raise RegionError("annotation and image sizes must be positive")
    wh = np.concatenate([ann, ann], axis=1)
    rel = b / wh
    x0, x1 = np.minimum(rel[:, 0], rel[:, 2]), np.maximum(rel[:, 0], rel[:, 2])
    y0, y1 = np.minimum(rel[:, 1], rel[:, 3]), np.maximum(rel[:, 1], rel[:, 3])
    rel = np.clip(np.stack([x0, y0, x1, y1], axis=1), 0.0, 1.0)
    pix = np.rint(rel * np.concatenate([img, img], axis=1)).astype(np.int64)
    pad = np.array([-pad_px, -pad_px, pad_px, pad_px], dtype=np.int64)
    hi = np.concatenate([img, img], axis=1).astype(np.int64)
    return np.clip(pix + pad, 0, hi)


def box_masks(
    boxes: np.ndarray, height: int, width: int, owner: np.ndarray | None = None, n: int | None = None
) -> np.ndarray:
    """Union of half-open int boxes (M, 4) xyxy as bool masks (N, H, W).

    ``owner`` (M,) maps each box to its image (default: box i belongs to image i, M = N);
    overlapping boxes of one image count once (a pixelwise OR). Boxes with x0 >= x1 or
    y0 >= y1 are empty.
    """
    b = np.asarray(boxes)
    if b.ndim != 2 or b.shape[1] != 4:
        raise RegionError(f"boxes must be (M, 4) xyxy, got shape {b.shape}")
    ys = np.arange(height)
    xs = np.arange(width)
    rows = (ys[None, :] >= b[:, 1:2]) & (ys[None, :] < b[:, 3:4])  # (M, H)
    cols = (xs[None, :] >= b[:, 0:1]) & (xs[None, :] < b[:, 2:3])  # (M, W)
    per_box = rows[:, :, None] & cols[:, None, :]
    if owner is None:
        return per_box
    owner = np.asarray(owner, dtype=np.int64)
    if owner.shape != (len(b),):
        raise RegionError(f"owner must be ({len(b)},), got {owner.shape}")
    n = int(owner.max()) + 1 if n is None else int(n)
    out = np.zeros((n, height, width), dtype=bool)
    np.logical_or.at(out, owner, per_box)
    return out


def pad_masks(masks: np.ndarray, pad_px: int) -> np.ndarray:
    """Dilate bool masks (N, H, W) by a (2p+1)^2 square (``mask_pad_px``, reading R2)."""
    m = np.asarray(masks, dtype=bool)
    if pad_px < 0:
        raise RegionError(f"mask_pad_px must be >= 0, got {pad_px}")
    if pad_px == 0:
        return m
    structure = np.ones((1, 2 * pad_px + 1, 2 * pad_px + 1), dtype=bool)
    return binary_dilation(m, structure=structure)


def regions_from_image_set(
    extras: dict[str, np.ndarray], shape: tuple[int, int], mode: str, pad_px: int
) -> np.ndarray:
    """R (N, H, W) for an image set's boxes (box mode) or ``masks`` (mask mode).

    Box mode: with ``box_distance`` (ImageNet through the data layer: the distance in original
    pixels from each stored pixel to the nearest GT box) R is ``box_distance <= pad_px``, the
    union of every GT box padded by ``pad_px`` *original* pixels and clipped, sampled at the
    stored resolution (reading R1); otherwise ``boxes`` are image-pixel xyxy (one per
    image; an all-zero row = no annotation) padded by ``pad_px``. Mask mode dilates ``masks`` by
    ``pad_px``; it refuses box annotations (``box_distance`` present), whose masks would silently
    lose the box padding.
    """
    h, w = shape
    if mode == "box" and "box_distance" in extras:
        dist = np.asarray(extras["box_distance"])
        if pad_px > 254:
            raise RegionError(f"bbox_pad_px must be <= 254 with box_distance, got {pad_px}")
        return dist <= pad_px
    if mode == "mask" and "box_distance" in extras:
        raise RegionError(
            "region mode 'mask' on box annotations (ImageNet): the masks are unions of unpadded "
            "boxes, so bbox_pad_px would be silently ignored; use region: box (docs/metamorphic.md, reading R1)"
        )
    if mode == "box":
        if "boxes" not in extras:
            raise RegionError(f"region mode 'box' needs a 'boxes' array; has {sorted(extras)}")
        raw = np.asarray(extras["boxes"], dtype=np.float64)
        empty = (raw[:, 2] <= raw[:, 0]) | (raw[:, 3] <= raw[:, 1])
        boxes = normalise_boxes(raw, None, (w, h), pad_px)
        boxes[empty] = 0
        return box_masks(boxes, h, w)
    if mode == "mask":
        if "masks" not in extras:
            raise RegionError(f"region mode 'mask' needs a 'masks' array; has {sorted(extras)}")
        return pad_masks(extras["masks"], pad_px)
    raise RegionError(f"region mode {mode!r} is not one of ['box', 'mask']")


def area_ratio(masks: np.ndarray) -> np.ndarray:
    """Fraction of each image covered by its region (N,) (RQ4's object-size ratio, reading R9)."""
    m = np.asarray(masks, dtype=bool)
    return m.reshape(len(m), -1).mean(axis=1)


def coco_union_masks(coco: Any, img_ids: Sequence[int]) -> tuple[list[np.ndarray], np.ndarray]:
    """Union masks of every annotation (crowd included, no dilation) per COCO image (reading R2).

    ``coco`` is a ``pycocotools.coco.COCO``. Returns (list of bool (H, W) masks, has_annotation
    (N,) bool); images with no annotation get an all-False mask and ``has_annotation=False``
    (they get no mutants but stay in accuracy denominators).
    """
    masks: list[np.ndarray] = []
    has = np.zeros(len(img_ids), dtype=bool)
    for i, img_id in enumerate(img_ids):  # one image at a time: COCO images differ in size
        info = coco.loadImgs(int(img_id))[0]
        m = np.zeros((int(info["height"]), int(info["width"])), dtype=bool)
        anns = coco.loadAnns(coco.getAnnIds(imgIds=int(img_id), iscrowd=None))
        for ann in anns:
            m |= coco.annToMask(ann).astype(bool)
        has[i] = len(anns) > 0
        masks.append(m)
    return masks, has
