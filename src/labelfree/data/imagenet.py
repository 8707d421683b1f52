"""ImageNet (ILSVRC 2012) validation set: user-supplied images plus the Pascal VOC box XMLs.

ImageNet cannot be downloaded without an account, so the user supplies (docs/data.md, reading R1):

- ``images_dir``: the 50,000 ``ILSVRC2012_val_XXXXXXXX.JPEG`` files (flat, as extracted from
  ``ILSVRC2012_img_val.tar``, md5 ``29b22e2961454d5413ddabcf34fc5622`` per torchvision);
- ``boxes_dir``: the per-image XMLs of ``ILSVRC2012_bbox_val_v3.tgz`` (``val/*.xml``), one
  Pascal VOC file per image whose ``<object>``s are boxes of the image's ground-truth synset;
- optionally ``synsets``: a text file whose lines start with a WordNet id (e.g.
  ``LOC_synset_mapping.txt``: ``n01440764 tench, Tinca tinca``); its order is the class order.
  Without it the classes are the sorted distinct WordNet ids of all XMLs found, which for the
  full set is the Keras/torchvision order (sorted wnids).

Labels come from the XMLs (every object of an image names its GT synset). Boxes are taken
as array slices ``[ymin:ymax, xmin:xmax]`` of the original image; inverted min/max are
swapped; boxes are clipped to the image; when the XML ``<size>`` differs from the decoded
image the boxes are rescaled (docs/data.md, reading R1).

Geometry (docs/data.md, reading R2; the Keras Applications' and torchvision's evaluation
transforms): the shorter side is resized to S (bilinear, aspect ratio kept) and the centre S x S
square is kept, so a model's own ``resize(r <= S) + centre_crop(c)`` transform on the stored image
sees what it would see on the original (centre crops compose); images are never squashed.

Materialised sets carry ``boxes`` (N, 4) = the box enclosing all GT boxes, ``masks`` (N, S, S) =
the union of the GT boxes, ``box_distance`` (N, S, S) uint8 = for each stored pixel, the
Chebyshev distance in *original* pixels from the original pixel it samples to the nearest GT box
(0 inside, capped at 255), so the region of boxes padded by p original pixels (the authors' 5 px,
docs/data.md, reading R2) is exactly ``box_distance <= p``; and ``area_ratio`` (N,) = union of the
unpadded boxes / (H W) in the original image. Images are decoded to RGB (greyscale and CMYK
converted).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from PIL import Image

from labelfree.data.base import DataError
from labelfree.data.lazy import LazyImageSet, decode_rgb, enclosing_box

IMAGE_SUFFIXES = (".jpeg", ".jpg", ".png")


def parse_voc(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse one Pascal VOC XML: ``{"width", "height", "objects": [(name, x1, y1, x2, y2)]}``."""
    p = Path(path)
    try:
        root = ET.parse(p).getroot()
    except FileNotFoundError:
        raise DataError(f"{p}: box annotation file not found") from None
    except ET.ParseError as exc:
        raise DataError(f"{p}: not a valid Pascal VOC XML ({exc})") from exc
    try:
        width = int(root.findtext("size/width"))
        height = int(root.findtext("size/height"))
        objects = []
        for obj in root.iter("object"):
            bb = obj.find("bndbox")
            x1, y1, x2, y2 = (float(bb.findtext(k)) for k in ("xmin", "ymin", "xmax", "ymax"))
            objects.append((obj.findtext("name").strip(), x1, y1, x2, y2))
    except (TypeError, ValueError, AttributeError) as exc:
        raise DataError(f"{p}: missing or non-numeric size/bndbox field ({exc})") from exc
    return {"width": width, "height": height, "objects": objects}


def read_synsets(path: str | os.PathLike[str]) -> list[str]:
    """WordNet ids in file order (first token of each non-empty line)."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: synset list not found")
    return [line.split()[0] for line in p.read_text().splitlines() if line.strip()]


def clean_boxes(boxes: np.ndarray, width: int, height: int) -> np.ndarray:
    """Swap inverted min/max and clip (B, 4) xyxy boxes to the image."""
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    x1, x2 = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    y1, y2 = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    out = np.stack([x1, y1, x2, y2], axis=1)
    out[:, [0, 2]] = np.clip(out[:, [0, 2]], 0, width)
    out[:, [1, 3]] = np.clip(out[:, [1, 3]], 0, height)
    return out


def boxes_mask(boxes: np.ndarray, height: int, width: int) -> np.ndarray:
    """Union of (B, 4) xyxy boxes as a bool (H, W) mask; pixel (r, c) is in a box when
    ``y1 <= r < y2`` and ``x1 <= c < x2`` after rounding the coordinates."""
    b = np.rint(np.asarray(boxes, dtype=np.float64).reshape(-1, 4)).astype(np.int64)
    r, c = np.arange(height), np.arange(width)
    in_r = (r[None, :] >= b[:, 1:2]) & (r[None, :] < b[:, 3:4])  # (B, H)
    in_c = (c[None, :] >= b[:, 0:1]) & (c[None, :] < b[:, 2:3])  # (B, W)
    return (in_r[:, :, None] & in_c[:, None, :]).any(axis=0)


def square_geometry(height: int, width: int, size: int) -> tuple[int, int, int, int]:
    """Shorter side to ``size`` (aspect kept), then the centre ``size`` x ``size`` square.

    Returns (resized height, resized width, crop top, crop left), rounding as torchvision's
    ``Resize(size)`` + ``CenterCrop(size)`` do (docs/data.md, reading R2).
    """
    short = min(height, width)
    rh = size if height == short else max(size, int(size * height / short))
    rw = size if width == short else max(size, int(size * width / short))
    return rh, rw, int(round((rh - size) / 2.0)), int(round((rw - size) / 2.0))


def resize_keep_aspect(img: np.ndarray, size: int) -> np.ndarray:
    """Bilinear resize of the shorter side to ``size``, then the centre square (no squashing)."""
    h, w = img.shape[:2]
    rh, rw, top, left = square_geometry(h, w, size)
    if (rh, rw) != (h, w):
        img = np.asarray(Image.fromarray(img).resize((rw, rh), Image.BILINEAR), dtype=np.uint8)
    return np.ascontiguousarray(img[top : top + size, left : left + size])


def box_distance(boxes: np.ndarray, height: int, width: int, size: int) -> np.ndarray:
    """Chebyshev distance (original pixels, capped at 255) from each stored pixel to the boxes.

    ``boxes`` (B, 4) xyxy in original pixels are rounded to half-open integer ranges
    (docs/data.md, reading R2). Stored pixel (r, c) of :func:`resize_keep_aspect` samples the
    original pixel under its centre (nearest neighbour); its distance to box b is ``max(dx, dy)``
    with ``dx = max(x0 - col, col - (x1 - 1), 0)``; the union takes the minimum over boxes. Padding
    every box by p and clipping (the authors' code) selects exactly the pixels with distance
    <= p. Returns uint8 (size, size).
    """
    rh, rw, top, left = square_geometry(height, width, size)
    rows = np.minimum(((np.arange(size) + top + 0.5) * height / rh).astype(np.int64), height - 1)
    cols = np.minimum(((np.arange(size) + left + 0.5) * width / rw).astype(np.int64), width - 1)
    b = np.rint(np.asarray(boxes, dtype=np.float64).reshape(-1, 4)).astype(np.int64)
    if len(b) == 0:
        return np.full((size, size), 255, dtype=np.uint8)
    dx = np.maximum(np.maximum(b[:, 0:1] - cols[None], cols[None] - (b[:, 2:3] - 1)), 0)  # (B, S)
    dy = np.maximum(np.maximum(b[:, 1:2] - rows[None], rows[None] - (b[:, 3:4] - 1)), 0)  # (B, S)
    empty = (b[:, 2] <= b[:, 0]) | (b[:, 3] <= b[:, 1])
    d = np.maximum(dy[:, :, None], dx[:, None, :])  # (B, S, S)
    d[empty] = 255
    return np.minimum(d.min(axis=0), 255).astype(np.uint8)


class ImageNetVal(LazyImageSet):
    """Index of the ImageNet val images with labels and boxes from the VOC XMLs."""

    def __init__(
        self,
        images_dir: str | os.PathLike[str],
        boxes_dir: str | os.PathLike[str],
        synsets: str | os.PathLike[str] | None = None,
    ) -> None:
        images_dir, boxes_dir = Path(images_dir), Path(boxes_dir)
        if not images_dir.is_dir():
            raise DataError(f"{images_dir}: ImageNet val images directory not found")
        if not boxes_dir.is_dir():
            raise DataError(f"{boxes_dir}: ImageNet val box XML directory not found")
        images = sorted(p for p in images_dir.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not images:
            raise DataError(f"{images_dir}: no .JPEG/.jpg/.png images found")
        xml_files = {p.stem: p for p in boxes_dir.glob("*.xml")}
        missing = [img for img in images if img.stem not in xml_files]
        if missing:
            raise DataError(
                f"{boxes_dir / (missing[0].stem + '.xml')}: box XML for {missing[0].name} not found "
                f"({len(missing)} image(s) without XML)"
            )
        # Every XML is parsed (not only the indexed images'): without a synset list the class
        # order is that of all wnids present, the full 1,000 for the official XML folder.
        anns = {stem: parse_voc(p) for stem, p in sorted(xml_files.items())}
        rows = []
        for img in images:
            ann = anns[img.stem]
            names = {o[0] for o in ann["objects"]}
            if len(names) != 1:
                raise DataError(
                    f"{xml_files[img.stem]}: expected objects of exactly one synset, got {sorted(names)}"
                )
            boxes = clean_boxes(
                np.array([o[1:] for o in ann["objects"]]), ann["width"], ann["height"]
            )
            rows.append(
                {
                    "file": img.name,
                    "path": str(img),
                    "wnid": names.pop(),
                    "width": ann["width"],
                    "height": ann["height"],
                    "boxes": boxes.tolist(),
                }
            )
        if synsets:
            self.classes = read_synsets(synsets)
        else:
            self.classes = sorted({o[0] for a in anns.values() for o in a["objects"]})
        lookup = {w: i for i, w in enumerate(self.classes)}
        unknown = sorted({r["wnid"] for r in rows} - set(lookup))
        if unknown:
            raise DataError(
                f"{synsets}: synsets {unknown[:5]} of the XMLs are not in the synset list"
            )
        self.index = pd.DataFrame(rows)
        self.index["label"] = self.index["wnid"].map(lookup).astype(np.int64)

    def load_row(self, row: pd.Series, size: int) -> tuple[np.ndarray, np.ndarray, dict[str, Any]]:
        img = decode_rgb(row["path"])
        h, w = img.shape[:2]
        boxes = np.asarray(row["boxes"], dtype=np.float64).reshape(-1, 4)
        if (w, h) != (row["width"], row["height"]):  # XML size differs from the decoded image
            boxes = boxes * np.array([w / row["width"], h / row["height"]] * 2)
        area_ratio = boxes_mask(boxes, h, w).mean()
        dist = box_distance(boxes, h, w, size)
        mask = dist == 0
        extras = {
            "boxes": enclosing_box(mask),
            "masks": mask,
            "box_distance": dist,
            "area_ratio": np.float32(area_ratio),
        }
        return resize_keep_aspect(img, size), np.int64(row["label"]), extras
