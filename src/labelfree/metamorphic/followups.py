"""Follow-up inputs of MR-1 (object-corrupting) and MR-2 (object-preserving), the paper's
Section 4.3 (docs/metamorphic.md, readings R3, R4, R13).

``obj-<colour>`` paints every pixel of R with a flat colour and leaves every other byte alone;
``bg-<colour>`` paints B = not R and keeps R. Fills happen at original resolution before any
model-specific preprocessing, so the bytes are model-independent. All colours are RGB.

A follow-up set stacks the variants *variant-major*: ``[orig, obj-c1..obj-cn, bg-c1..bg-cn]``,
each block holding the N source images in order, so outputs reshape to (V, N, K).
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np

#: The 15 colours of RQ2 (reading R13), RGB; the first three are the default set.
COLOURS: dict[str, tuple[int, int, int]] = {
    "black": (0, 0, 0),
    "gray": (127, 127, 127),
    "white": (255, 255, 255),
    "red": (255, 0, 0),
    "maroon": (128, 0, 0),
    "yellow": (255, 255, 0),
    "olive": (128, 128, 0),
    "lime": (0, 255, 0),
    "green": (0, 128, 0),
    "aqua": (0, 255, 255),
    "teal": (0, 128, 128),
    "blue": (0, 0, 255),
    "navy": (0, 0, 128),
    "fuchsia": (255, 0, 255),
    "purple": (128, 0, 128),
}

#: Named colour sets: 3 colours (the paper's default) and the 15 of RQ2.
COLOURSETS: dict[str, list[str]] = {
    "c3": ["black", "gray", "white"],
    "c15": list(COLOURS),
}

KINDS = ("orig", "obj", "bg")


class FollowupError(ValueError):
    """Invalid colours, regions or options for follow-up generation."""


def colour_array(colours: Sequence[str] | Sequence[Sequence[int]]) -> np.ndarray:
    """Colour names or RGB triples -> uint8 (n, 3)."""
    rows = []
    for c in colours:
        if isinstance(c, str):
            if c not in COLOURS:
                raise FollowupError(f"unknown colour {c!r}; known: {sorted(COLOURS)}")
            rows.append(COLOURS[c])
        else:
            t = tuple(int(v) for v in c)
            if len(t) != 3 or not all(0 <= v <= 255 for v in t):
                raise FollowupError(f"colour {c!r} is not an RGB triple in 0..255")
            rows.append(t)
    if not rows:
        raise FollowupError("need at least one colour")
    return np.asarray(rows, dtype=np.uint8)


def resolve_colourset(name: str, custom: dict[str, list[str]] | None = None) -> list[str]:
    """Colour names of a named set (``c3``, ``c15`` or a config-defined one)."""
    sets = {**COLOURSETS, **(custom or {})}
    if name not in sets:
        raise FollowupError(f"unknown colour set {name!r}; known: {sorted(sets)}")
    return list(sets[name])


def variant_names(colours: Sequence[str]) -> list[str]:
    """``['orig', 'obj-black', ..., 'bg-white']`` in the stacking order."""
    return ["orig"] + [f"obj-{c}" for c in colours] + [f"bg-{c}" for c in colours]


def fill(x: np.ndarray, region: np.ndarray, colours: np.ndarray, kind: str) -> np.ndarray:
    """All follow-ups of one kind for a batch: uint8 (n_colours, N, H, W, C).

    ``x`` uint8 (N, H, W, C); ``region`` bool (N, H, W) = R; ``colours`` uint8 (n, C);
    ``kind`` ``obj`` paints R (MR-1) and ``bg`` paints B (MR-2). Vectorised over the batch: one
    copy and one scatter (pixel indices computed once) per colour.
    """
    if x.dtype != np.uint8 or x.ndim != 4:
        raise FollowupError(f"x must be uint8 NHWC, got {x.dtype} {x.shape}")
    if region.shape != x.shape[:3]:
        raise FollowupError(f"region {region.shape} does not match images {x.shape}")
    if colours.ndim != 2 or colours.shape[1] != x.shape[3]:
        raise FollowupError(f"colours {colours.shape} do not match {x.shape[3]} channels")
    if kind == "obj":
        paint = region
    elif kind == "bg":
        paint = ~region
    else:
        raise FollowupError(f"kind {kind!r} is not 'obj' or 'bg'")
    c = x.shape[3]
    out = np.empty((len(colours), x.size // c, c), dtype=np.uint8)
    out[...] = x.reshape(1, -1, c)  # one contiguous copy per colour
    rows = np.flatnonzero(paint)  # painted pixels of the whole batch, computed once
    for ci in range(len(colours)):  # loop over <= 15 colours, never over images or pixels
        out[ci, rows] = colours[ci]  # one scatter over the whole batch
    return out.reshape(len(colours), *x.shape)


def fill_loop(x: np.ndarray, region: np.ndarray, colours: np.ndarray, kind: str) -> np.ndarray:
    """Per-image, per-colour baseline of :func:`fill` (for the benchmark and tests only)."""
    out = np.empty((len(colours), *x.shape), dtype=np.uint8)
    for ci, c in enumerate(colours):
        for i in range(len(x)):
            img = x[i].copy()
            img[region[i] if kind == "obj" else ~region[i]] = c
            out[ci, i] = img
    return out


def jpeg_roundtrip(x: np.ndarray, quality: int = 95) -> np.ndarray:
    """Encode and decode each image as JPEG (``reencode: jpeg95``, the authors' files, reading R4)."""
    # deferred: plan.py imports this module at parse time; PIL.Image costs about 50 ms there
    from PIL import Image

    out = np.empty_like(x)
    for i in range(len(x)):  # PIL codes one image at a time
        buf = io.BytesIO()
        Image.fromarray(x[i]).save(buf, format="JPEG", quality=quality)
        buf.seek(0)
        out[i] = np.asarray(Image.open(buf).convert("RGB"))
    return out


def bgr_to_rgb(x: np.ndarray) -> np.ndarray:
    """Channel swap for images decoded by OpenCV (BGR) before they enter the pipeline (reading R13)."""
    return np.ascontiguousarray(x[..., ::-1])


def make_followup_set(
    x: np.ndarray,
    region: np.ndarray,
    colours: Sequence[str],
    has_region: np.ndarray | None = None,
    reencode: str = "none",
    batch: int = 4096,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stack ``[orig, obj-*, bg-*]`` variant-major for a batch of sources (the paper's Section 4.3).

    Images without a region (``has_region`` False) keep their original bytes in every variant;
    they are never flagged (reading R3). ``reencode='jpeg95'`` JPEG-encodes the follow-ups only
    (the sources are not re-encoded). Returns (x_all (V*N, H, W, C), variant (V*N,) int16,
    source index (V*N,) int64).
    """
    if reencode not in ("none", "jpeg95"):
        raise FollowupError(f"reencode {reencode!r} is not one of ['none', 'jpeg95']")
    cols = colour_array(colours)
    if x.shape[3] == 1:
        cols = cols.mean(axis=1, keepdims=True).round().astype(np.uint8)
    n = len(x)
    region = np.asarray(region, dtype=bool)
    if has_region is not None:
        region = region & np.asarray(has_region, dtype=bool)[:, None, None]
    n_var = 1 + 2 * len(cols)
    out = np.empty((n_var, *x.shape), dtype=np.uint8)
    out[0] = x
    for s in range(0, n, batch):
        sl = slice(s, s + batch)
        out[1 : 1 + len(cols), sl] = fill(x[sl], region[sl], cols, "obj")
        out[1 + len(cols) :, sl] = fill(x[sl], region[sl], cols, "bg")
    if has_region is not None:
        keep = ~np.asarray(has_region, dtype=bool)
        out[1:, keep] = x[keep][None]
    if reencode == "jpeg95":
        flat = out[1:].reshape(-1, *x.shape[1:])
        out[1:] = jpeg_roundtrip(flat).reshape(out[1:].shape)
    variant = np.repeat(np.arange(n_var, dtype=np.int16), n)
    src = np.tile(np.arange(n, dtype=np.int64), n_var)
    return out.reshape(-1, *x.shape[1:]), variant, src
