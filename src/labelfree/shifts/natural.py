"""Natural-shift (style-change) test sets for the embedded digits and other small images.

Style changes of the ``id`` set stand in for natural shifts offline (docs/shifts.md, reading R4):
stroke thickening / thinning (``grey_dilation`` / ``grey_erosion``, size 2), small shear and
down-up sampling, each with randomised per-image parameters. The labels are kept; only the
rendering of each image changes. All functions take uint8 (N, H, W, C) and return uint8 of the
same shape; randomness comes from the Generator passed in (the workflow seeds it from the
config seed, the dataset and the shift name).

Sizes scale with the image (reference side 16, digits upsampled twice): the
structuring element is ``max(2, round(2 * side / 16))`` pixels.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from PIL import Image
from scipy import ndimage

from labelfree.shifts import ops

Array = np.ndarray

#: Per-image parameter ranges (documented in docs/shifts.md).
THICK_THIN_MIX = (0.5, 1.0)  # blend weight of the dilated / eroded image
SHEAR_RANGE = (0.15, 0.35)  # |horizontal shear|, random sign
DOWNUP_RANGE = (0.35, 0.6)  # down-sampling ratio
ROTATE_RANGE = (10.0, 30.0)  # |rotation| in degrees, random sign


def _footprint(x: Array) -> int:
    return max(2, int(round(2 * np.sqrt(x.shape[1] * x.shape[2]) / 16)))


def _blend_morph(x: Array, op: Callable[..., Array], rng: np.random.Generator) -> Array:
    k = _footprint(x)
    f = ops.to_float(x)
    morphed = op(f, size=(1, k, k, 1))
    t = rng.uniform(*THICK_THIN_MIX, size=(len(x), 1, 1, 1)).astype(np.float32)
    return ops.to_uint8(f + t * (morphed - f))


def thick(x: Array, rng: np.random.Generator) -> Array:
    """Thicker strokes: blend towards the grey dilation (docs/shifts.md, reading R4)."""
    return _blend_morph(x, ndimage.grey_dilation, rng)


def thin(x: Array, rng: np.random.Generator) -> Array:
    """Thinner strokes: blend towards the grey erosion (docs/shifts.md, reading R4)."""
    return _blend_morph(x, ndimage.grey_erosion, rng)


def _affine(x: Array, a: Array) -> Array:
    """Warp each image about its centre: source = centre + a[n] @ (p - centre), bilinear."""
    _, h, w, _ = x.shape
    cy, cx = (h - 1) / 2, (w - 1) / 2
    gy, gx = np.meshgrid(np.arange(h) - cy, np.arange(w) - cx, indexing="ij")
    src_y = cy + a[:, 0, 0, None, None] * gy + a[:, 0, 1, None, None] * gx
    src_x = cx + a[:, 1, 0, None, None] * gy + a[:, 1, 1, None, None] * gx
    return ops.to_uint8(ops.bilinear(ops.to_float(x), src_y, src_x, mode="nearest"))


def _signed(rng: np.random.Generator, lo: float, hi: float, n: int) -> Array:
    return rng.uniform(lo, hi, size=n) * rng.choice([-1.0, 1.0], size=n)


def shear(x: Array, rng: np.random.Generator) -> Array:
    """Horizontal shear ``x' = x + k y`` with ``|k|`` in SHEAR_RANGE, random sign (slant)."""
    k = _signed(rng, *SHEAR_RANGE, len(x))
    a = np.zeros((len(x), 2, 2))
    a[:, 0, 0] = 1
    a[:, 1, 1] = 1
    a[:, 1, 0] = k
    return _affine(x, a)


def rotate(x: Array, rng: np.random.Generator) -> Array:
    """Rotation about the centre by ``|angle|`` in ROTATE_RANGE degrees, random sign."""
    t = np.deg2rad(_signed(rng, *ROTATE_RANGE, len(x)))
    a = np.stack([np.stack([np.cos(t), -np.sin(t)], -1), np.stack([np.sin(t), np.cos(t)], -1)], 1)
    return _affine(x, a)


def downup(x: Array, rng: np.random.Generator) -> Array:
    """Down-sample by a ratio in DOWNUP_RANGE (Pillow bilinear, antialiased) and back up.

    Images are grouped by their down-sampled size (a handful of sizes), each group resized
    with one pair of matrix products.
    """
    n, h, w, _ = x.shape
    ratio = rng.uniform(*DOWNUP_RANGE, size=n)
    hs = np.maximum(2, np.round(h * ratio)).astype(int)
    ws = np.maximum(2, np.round(w * ratio)).astype(int)
    f = ops.to_float(x)
    out = np.empty_like(f)
    for size in sorted(set(zip(hs.tolist(), ws.tolist(), strict=True))):
        idx = np.flatnonzero((hs == size[0]) & (ws == size[1]))
        small = ops.pil_resize(f[idx], size[0], size[1], Image.Resampling.BILINEAR)
        out[idx] = ops.pil_resize(small, h, w, Image.Resampling.BILINEAR)
    return ops.to_uint8(out)


NATURAL_SHIFTS: dict[str, Callable[[Array, np.random.Generator], Array]] = {
    "natural-thick": thick,
    "natural-thin": thin,
    "natural-shear": shear,
    "natural-downup": downup,
    "natural-rotate": rotate,
}


def natural_shift(x: Array, name: str, rng: np.random.Generator | int) -> Array:
    """Apply the natural shift ``name`` (a key of NATURAL_SHIFTS) to a uint8 batch."""
    x = np.asarray(x)
    if x.dtype != np.uint8 or x.ndim != 4:
        raise ValueError(f"natural_shift: x must be uint8 (N, H, W, C), got {x.dtype} {x.shape}")
    if name not in NATURAL_SHIFTS:
        raise ValueError(f"unknown natural shift {name!r}; known: {sorted(NATURAL_SHIFTS)}")
    if len(x) == 0:
        return x.copy()
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    return NATURAL_SHIFTS[name](x, generator)
