"""Shared pieces of the data layer: the error type, image conversions, option checking.

Every source returns its splits as :class:`labelfree.store.ImageSet` (ARCHITECTURE.md,
artefact contracts: x uint8 NHWC, y int64 (N,) or multi-hot (N, K), optional boxes/masks).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from labelfree.store import ImageSet


class DataError(ValueError):
    """A dataset cannot be built, downloaded or read; the message names the file/key at fault."""


def as_image_set(obj: Any, where: str) -> ImageSet:
    """Normalise an ImageSet-like object (ImageSet, object with x/y[/extras], or dict) to ImageSet."""
    if isinstance(obj, ImageSet):
        return obj
    if isinstance(obj, Mapping):
        if "x" not in obj or "y" not in obj:
            raise DataError(f"{where}: split needs keys 'x' and 'y', has {sorted(obj)}")
        extras = {k: np.asarray(v) for k, v in obj.items() if k not in ("x", "y")}
        return ImageSet(x=np.asarray(obj["x"]), y=np.asarray(obj["y"]), extras=extras)
    if hasattr(obj, "x") and hasattr(obj, "y"):
        extras = dict(getattr(obj, "extras", {}) or {})
        return ImageSet(x=np.asarray(obj.x), y=np.asarray(obj.y), extras=extras)
    raise DataError(f"{where}: expected an ImageSet-like object, got {type(obj).__name__}")


def to_uint8(x: np.ndarray) -> np.ndarray:
    """Round and clip to uint8 (float input is taken on the 0..255 scale)."""
    if x.dtype == np.uint8:
        return x
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


def set_channels(x: np.ndarray, channels: int) -> np.ndarray:
    """Return NHWC ``x`` with ``channels`` channels (0 = unchanged).

    1 -> 3 repeats the grey channel; 3 -> 1 uses ITU-R BT.601 luma (0.299 R + 0.587 G + 0.114 B),
    the weights of Pillow's ``convert("L")``.
    """
    if channels in (0, x.shape[3]):
        return x
    if channels == 3 and x.shape[3] == 1:
        return np.repeat(x, 3, axis=3)
    if channels == 1 and x.shape[3] == 3:
        luma = x.astype(np.float32) @ np.array([0.299, 0.587, 0.114], dtype=np.float32)
        return to_uint8(luma)[..., None]
    raise DataError(f"cannot convert {x.shape[3]} channels to {channels}")


def resize_images(x: np.ndarray, size: int) -> np.ndarray:
    """Bilinear resize of NHWC uint8 images to ``size`` x ``size`` (0 = unchanged).

    Uses ``scipy.ndimage.zoom`` (order 1) over the whole batch at once.
    """
    if size == 0 or x.shape[1:3] == (size, size):
        return x
    # deferred: parse-time module; scipy.ndimage takes 1.3 s to import
    from scipy.ndimage import zoom

    factors = (1.0, size / x.shape[1], size / x.shape[2], 1.0)
    out = zoom(x.astype(np.float32), factors, order=1, grid_mode=False)
    return to_uint8(out[:, :size, :size, :])


def check_options(
    options: Mapping[str, Any], defaults: Mapping[str, Any], where: str
) -> dict[str, Any]:
    """Fill ``defaults`` into ``options`` and refuse unknown keys (named with the allowed ones)."""
    unknown = sorted(set(options) - set(defaults))
    if unknown:
        raise DataError(
            f"{where}: unknown option(s) {unknown}; allowed options: {sorted(defaults)}"
        )
    return {**defaults, **options}
