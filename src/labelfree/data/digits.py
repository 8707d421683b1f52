"""The embedded default dataset: scikit-learn's handwritten digits (UCI optdigits test set).

1,797 images, 8x8, one channel, intensities 0..16, ten classes (about 180 per class). No
network needed. Conversion to the one array format:

- intensity ``v`` in 0..16 -> uint8 ``round(v * 255 / 16)``: linear, 0 -> 0 and 16 -> 255
  exactly (the 17 levels are 0, 16, 32, 48, 64, 80, 96, 112, 128, 143, 159, 175, 191, 207,
  223, 239, 255);
- ``upscale`` f > 1: bilinear zoom of the 0..255 float image (``scipy.ndimage.zoom``,
  ``order=1``) to 8f x 8f, then rounded and clipped to uint8;
- ``channels`` 3: the grey channel repeated;
- ``binary`` ``even_odd``: label 1 for even digits (0, 2, 4, 6, 8), 0 for odd ones. The split
  is drawn on the ten digit classes *before* relabelling, so it is the same with or without
  the binary task, and both binary classes are balanced in every split.

Splits are a pure function of (config seed, dataset name, fractions): the generator is
``labelfree.seeds.rng(seed, "data", dataset)`` and the partition is
:func:`labelfree.data.splits.stratified_partition`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from labelfree.data.base import DataError, check_options, set_channels, to_uint8
from labelfree.data.splits import stratified_partition
from labelfree.seeds import rng
from labelfree.store import ImageSet

#: Defaults of ``datasets.<name>.options`` for source ``digits`` (mirrored in the schema).
DIGITS_OPTIONS: dict[str, Any] = {"upscale": 1, "channels": 1, "binary": "none"}
BINARY_TASKS = ("none", "even_odd")


def load_digits_arrays(upscale: int = 1, channels: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """All 1,797 digits as (x uint8 NHWC, y int64 digit) with the module's conversion."""
    # deferred: parse-time module; scikit-learn takes several seconds to import
    from sklearn.datasets import load_digits

    bunch = load_digits()
    img = bunch.images.astype(np.float64) * (255.0 / 16.0)  # (N, 8, 8), 0..255
    if upscale > 1:
        # deferred: parse-time module; scipy.ndimage takes 1.3 s to import
        from scipy.ndimage import zoom

        img = zoom(img, (1, upscale, upscale), order=1)
    x = to_uint8(img)[..., None]
    return set_channels(x, channels), bunch.target.astype(np.int64)


def relabel(y: np.ndarray, binary: str) -> np.ndarray:
    """Apply the ``binary`` task: ``even_odd`` maps even digits to 1 and odd digits to 0."""
    if binary == "none":
        return y
    if binary == "even_odd":
        return (y % 2 == 0).astype(np.int64)
    raise DataError(f"digits: option binary={binary!r} is not one of {list(BINARY_TASKS)}")


def build_digits(
    name: str, cfg: Mapping[str, Any], seed: int
) -> tuple[dict[str, ImageSet], dict[str, Any]]:
    """Build every split named in ``cfg['splits']`` (fractions of the 1,797 images).

    Returns ``({split: ImageSet}, {"classes": names})``.
    """
    where = f"datasets.{name}.options"
    opts = check_options(cfg.get("options", {}) or {}, DIGITS_OPTIONS, where)
    if not isinstance(opts["upscale"], int) or opts["upscale"] < 1:
        raise DataError(f"{where}.upscale: value {opts['upscale']!r} must be an integer >= 1")
    if opts["channels"] not in (1, 3):
        raise DataError(f"{where}.channels: value {opts['channels']!r} must be 1 or 3")
    if opts["binary"] not in BINARY_TASKS:
        raise DataError(
            f"{where}.binary: value {opts['binary']!r} is not one of {list(BINARY_TASKS)}"
        )
    x, digit = load_digits_arrays(opts["upscale"], opts["channels"])
    parts = stratified_partition(digit, cfg["splits"], rng(seed, "data", name))
    y = relabel(digit, opts["binary"])
    splits = {s: ImageSet(x=x[idx], y=y[idx]) for s, idx in parts.items()}
    return splits, {"classes": digits_classes(opts)}


def digits_classes(opts: Mapping[str, Any]) -> list[str]:
    """Class names of the digits task (after the ``binary`` option)."""
    binary = opts.get("binary", "none")
    return ["odd", "even"] if binary == "even_odd" else [str(d) for d in range(10)]
