"""The 15 corruptions of the -C benchmarks for any image size and channel count.

The parameters are LaF's and CIFAR-10-C's (docs/shifts.md, reading R1; tables in
:mod:`labelfree.shifts.params`); the formulas follow the reference CIFAR-10-C / ImageNet-C code
(Hendrycks & Dietterich 2019), with these documented deviations:

* **Size scaling.** Pixel-valued parameters are multiplied by ``s = sqrt(H W) / ref`` (ref = 28
  for the mnist table, 32 for cifar), so 8x8 digits and 224x224 photos get the same relative
  strength as 28x28 / 32x32. Defocus: for ``s >= 1`` the disk is rebuilt at the scaled radius;
  for ``s < 1`` the reference kernel is area-integrated onto the coarser grid (a disk smaller
  than a pixel would otherwise vanish). Glass blur: swap distance ``max(1, round(delta s))``;
  when ``delta s < 1`` the swap probability is multiplied by ``delta s``. Snow: the flake layer is
  drawn on the reference grid and resampled to the image (blur radius and sigma scaled). Relative parameters (zoom factors, pixelate ratio, fog and frost fields
  generated at the image size, elastic's ``28 x (...)`` already relative) need no other rule.
* **Motion blur** (ImageMagick in the reference) is a one-sided line kernel with Gaussian tap
  weights at the same radius and sigma and a random angle, sampled bilinearly (docs/shifts.md,
  reading R2).
* **Frost** uses procedural textures (:func:`labelfree.shifts.ops.frost_textures`) instead of
  the photographs (docs/shifts.md, reading R2).
* **Glass blur** replaces the reference's sequential pixel-by-pixel swap loop by passes of
  disjoint local swaps (three passes per iteration, each pair swapped with probability 1/2,
  docs/shifts.md, reading R2), vectorised over pixels and images.
* Zoom uses a continuous bilinear centre zoom instead of crop + ``scipy.ndimage.zoom``.

Every function takes a float batch (N, H, W, C) in [0, 1] and returns floats; :func:`corrupt`
converts uint8 in and out (clip to [0, 1], x255, truncate: docs/shifts.md, reading R1).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from PIL import Image
from scipy import ndimage

from labelfree.shifts import ops
from labelfree.shifts.params import (
    CORRUPTIONS,
    REFERENCE_SIZE,
    resolve_table,
    scale_factor,
    table_entry,
)

Array = np.ndarray


@dataclass(frozen=True)
class Context:
    """What a corruption needs besides the images: table, spatial scale and random stream."""

    table: str
    scale: float
    rng: np.random.Generator


# ---------------------------------------------------------------------------------------------
# noise
# ---------------------------------------------------------------------------------------------


def gaussian_noise(x: Array, c: float, ctx: Context) -> Array:
    """``x + N(0, c^2)`` per element (Gaussian noise sigma)."""
    return x + np.float32(c) * ctx.rng.standard_normal(size=x.shape, dtype=np.float32)


def shot_noise(x: Array, c: float, ctx: Context) -> Array:
    """``poisson(x c) / c`` per element (Poisson rate c)."""
    return (ctx.rng.poisson(x.astype(np.float64) * c) / c).astype(np.float32)


def impulse_noise(x: Array, c: float, ctx: Context) -> Array:
    """Salt and pepper on a fraction ``c`` of the elements, half salt (skimage ``s&p``)."""
    flipped = ctx.rng.random(x.shape, dtype=np.float32) < c
    salted = ctx.rng.random(x.shape, dtype=np.float32) < 0.5
    out = x.copy()
    out[flipped & salted] = 1.0
    out[flipped & ~salted] = 0.0
    return out


# ---------------------------------------------------------------------------------------------
# blur
# ---------------------------------------------------------------------------------------------


def defocus_kernel(radius: float, alias_blur: float, s: float) -> Array:
    """The defocus kernel at spatial scale ``s`` (see the module docstring)."""
    half = 1 if radius <= 8 else 2
    if s >= 1:
        return ops.disk_kernel(radius * s, alias_blur * s, max(half, int(round(half * s))))
    return ops.shrink_kernel(ops.disk_kernel(radius, alias_blur, half), s)


def defocus_blur(x: Array, c: tuple[float, float], ctx: Context) -> Array:
    """Convolution with an anti-aliased disk (radius, alias sigma)."""
    return ops.filter2d(x, defocus_kernel(c[0], c[1], ctx.scale))


def _swap_pass(x: Array, max_delta: int, prob: float, rng: np.random.Generator) -> Array:
    """One pass of disjoint local swaps, one random offset per image, each pair swapped with
    probability ``prob``. Sources are the pixels in even bands of the offset's main axis, so
    every pixel belongs to at most one pair."""
    n, h, w, c = x.shape
    offsets = np.stack(
        np.meshgrid(np.arange(-max_delta, max_delta + 1), np.arange(-max_delta, max_delta + 1)),
        -1,
    ).reshape(-1, 2)
    offsets = offsets[(offsets != 0).any(axis=1)]
    dy, dx = offsets[rng.integers(len(offsets), size=n)].T
    # Normalise so the pair (p, p + o) has dy > 0, or dy == 0 and dx > 0.
    flip = (dy < 0) | ((dy == 0) & (dx < 0))
    dy, dx = np.where(flip, -dy, dy), np.where(flip, -dx, dx)
    rows = np.arange(h)[None, :, None]
    cols = np.arange(w)[None, None, :]
    dy3, dx3 = dy[:, None, None], dx[:, None, None]
    band = np.where(dy3 > 0, (rows // np.maximum(dy3, 1)) % 2, (cols // np.maximum(dx3, 1)) % 2)
    source = (band == 0) & (rows + dy3 < h) & (cols + dx3 >= 0) & (cols + dx3 < w)
    source &= rng.random((n, h, w)) < prob
    flat = np.broadcast_to(np.arange(h * w).reshape(1, h, w), (n, h, w)).copy()
    partner = flat + dy3 * w + dx3
    perm = flat.copy()
    src_b, src_r, src_c = np.nonzero(source)
    dst = partner[src_b, src_r, src_c]
    perm[src_b, src_r, src_c] = dst
    perm.reshape(n, -1)[src_b, dst] = flat[src_b, src_r, src_c]
    xf = x.reshape(n, h * w, c)
    return np.take_along_axis(xf, perm.reshape(n, -1, 1), axis=1).reshape(n, h, w, c)


def glass_blur(x: Array, c: tuple[float, int, int], ctx: Context) -> Array:
    """Gaussian blur, local pixel swaps, Gaussian blur again (sigma, max delta, iterations)."""
    sigma = c[0] * ctx.scale
    delta_scaled = c[1] * ctx.scale
    max_delta = max(1, int(round(delta_scaled)))
    prob = 0.5 * min(1.0, delta_scaled)
    x = ops.to_float(ops.to_uint8(ops.gaussian(x, sigma)))
    for _ in range(int(c[2])):
        for _ in range(3):
            x = _swap_pass(x, max_delta, prob, ctx.rng)
    return ops.gaussian(x, sigma)


def motion_blur(x: Array, c: tuple[float, float], ctx: Context) -> Array:
    """Line-kernel motion blur (radius, sigma), angle U(-45, 45) degrees per image (docs/shifts.md,
    reading R2)."""
    angles = ctx.rng.uniform(-45, 45, size=len(x))
    return ops.motion_blur(x, c[0] * ctx.scale, c[1] * ctx.scale, angles)


def zoom_blur(x: Array, c: Array, ctx: Context) -> Array:
    """Mean of the image and its centre zooms by each factor in ``c``."""
    out = x.copy()
    for z in c:
        out += ops.centre_zoom(x, float(z))
    return out / (len(c) + 1)


# ---------------------------------------------------------------------------------------------
# weather
# ---------------------------------------------------------------------------------------------


def snow(x: Array, c: tuple[float, ...], ctx: Context) -> Array:
    """Thresholded, zoomed, motion-blurred noise flakes over a brightened image."""
    n, h, w, _ = x.shape
    loc, scale, zoom, threshold, radius, sigma, mix = c
    # The flake layer is drawn on the table's reference grid (28 or 32 px, aspect kept) and
    # resampled to the image, so flakes keep their relative size at any resolution.
    hr = max(1, int(round(h / ctx.scale)))
    wr = max(1, int(round(w / ctx.scale)))
    layer = ctx.rng.normal(loc=loc, scale=scale, size=(n, hr, wr, 1)).astype(np.float32)
    layer = ops.centre_zoom(layer, zoom)
    layer[layer < threshold] = 0
    layer = np.floor(np.clip(layer, 0, 1) * 255) / 255  # the reference's uint8 PNG round trip
    if (hr, wr) != (h, w):
        mode = Image.Resampling.BOX if ctx.scale < 1 else Image.Resampling.BILINEAR
        layer = ops.pil_resize(layer, h, w, mode).astype(np.float32)
    angles = ctx.rng.uniform(-135, -45, size=n)
    layer = ops.motion_blur(layer, radius * ctx.scale, sigma * ctx.scale, angles)
    x = mix * x + (1 - mix) * np.maximum(x, ops.luminance(x) * 1.5 + 0.5)
    return x + layer + layer[:, ::-1, ::-1]


def frost(x: Array, c: tuple[float, float], ctx: Context) -> Array:
    """``c0 x + c1 frost``, frost an image-sized random crop of one of five textures."""
    n, h, w, ch = x.shape
    tex = ops.frost_textures(h, w)
    idx = ctx.rng.integers(len(tex), size=n)
    top = ctx.rng.integers(tex.shape[1] - h + 1, size=n)
    left = ctx.rng.integers(tex.shape[2] - w + 1, size=n)
    rows = top[:, None, None] + np.arange(h)[None, :, None]
    cols = left[:, None, None] + np.arange(w)[None, None, :]
    crop = tex[idx[:, None, None], rows, cols][..., None]
    if ch == 3:  # ice is faintly blue
        crop = crop * np.array([0.88, 0.94, 1.0], dtype=np.float32)
    return c[0] * x + c[1] * crop


def fog(x: Array, c: tuple[float, float], ctx: Context) -> Array:
    """Plasma-fractal fog (strength, wibble decay) with the reference's max-preserving rescale."""
    n, h, w, _ = x.shape
    mapsize = 1 << max(1, int(np.ceil(np.log2(max(h, w)))))
    field = ops.plasma_fractal(n, mapsize, c[1], ctx.rng)[:, :h, :w, None]
    max_val = x.max(axis=(1, 2, 3), keepdims=True)
    return (x + c[0] * field) * max_val / (max_val + c[0])


def brightness(x: Array, c: float, ctx: Context) -> Array:
    """Add ``c`` to the HSV value (RGB) or to the grey level (other channel counts), clip.

    For RGB, hue and saturation are kept and HSV -> RGB is linear in the value V = max(R, G, B),
    so the round trip equals scaling each pixel by ``V' / V`` (grey ``V'`` where V = 0), which
    is computed directly (tested against the explicit HSV round trip).
    """
    if x.shape[-1] != 3:
        return np.clip(x + c, 0, 1)
    v = x.max(axis=-1, keepdims=True)
    v_new = np.clip(v + np.float32(c), 0, 1)
    scale = np.divide(v_new, v, out=np.zeros_like(v), where=v > 0)
    return np.where(v > 0, x * scale, v_new)


# ---------------------------------------------------------------------------------------------
# digital
# ---------------------------------------------------------------------------------------------


def contrast(x: Array, c: float, ctx: Context) -> Array:
    """``(x - mean) c + mean`` with the per-image, per-channel mean."""
    means = x.mean(axis=(1, 2), keepdims=True)
    return (x - means) * c + means


def elastic_transform(x: Array, c: tuple[float, float, float], ctx: Context) -> Array:
    """Random affine (corner jitter ``affine``) then a smoothed random displacement field
    (scale ``alpha``, smoothing ``sigma``), bilinear, reflected borders."""
    n, h, w, _ = x.shape
    alpha, sigma, affine = (v * ctx.scale for v in c)
    # random affine, OpenCV conventions: points are (x, y); dst(p) = src(M^-1 p)
    centre = np.array([w // 2, h // 2], dtype=np.float64)
    sq = min(h, w) // 3
    pts1 = np.array([centre + sq, [centre[0] + sq, centre[1] - sq], centre - sq])
    pts2 = pts1[None] + ctx.rng.uniform(-affine, affine, size=(n, 3, 2))
    src = np.concatenate([pts1, np.ones((3, 1))], axis=1)  # (3, 3)
    m = np.linalg.solve(np.broadcast_to(src, (n, 3, 3)), pts2)  # (n, 3, 2): [x y 1] @ m = dst
    a = np.transpose(m[:, :2, :], (0, 2, 1))  # (n, 2, 2)
    b = m[:, 2, :]  # (n, 2)
    inv = np.linalg.inv(a).astype(np.float32)[:, :, :, None, None]  # (n, 2, 2, 1, 1)
    gy, gx = np.meshgrid(
        np.arange(h, dtype=np.float32), np.arange(w, dtype=np.float32), indexing="ij"
    )
    ddx = gx[None] - b[:, 0, None, None].astype(np.float32)
    ddy = gy[None] - b[:, 1, None, None].astype(np.float32)
    src_x = inv[:, 0, 0] * ddx + inv[:, 0, 1] * ddy
    src_y = inv[:, 1, 0] * ddx + inv[:, 1, 1] * ddy
    x = ops.bilinear(x, src_y, src_x, mode="mirror")
    # elastic displacement
    fields = ctx.rng.uniform(-1, 1, size=(2, n, h, w)).astype(np.float32)
    if sigma > 0:
        fields = ndimage.gaussian_filter(
            fields, sigma=(0, 0, sigma, sigma), mode="reflect", truncate=3
        )
    dx, dy = fields * alpha
    return ops.bilinear(x, gy[None] + dy, gx[None] + dx, mode="reflect")


def pixelate(x: Array, c: float, ctx: Context) -> Array:
    """Box down-sampling to ``int(side c)`` then box up-sampling (Pillow BOX filter weights,
    applied as matrices; each stage rounded to 8 bits like Pillow)."""
    _, h, w, _ = x.shape
    small = ops.pil_resize(x * 255, max(1, int(h * c)), max(1, int(w * c)), Image.Resampling.BOX)
    small = np.clip(np.rint(small), 0, 255)
    big = ops.pil_resize(small, h, w, Image.Resampling.BOX)
    return np.clip(np.rint(big), 0, 255) / 255


def jpeg_compression(x: Array, c: int, ctx: Context) -> Array:
    """Pillow JPEG round trip at quality ``c``. Pillow encodes one image per call, so this is
    the one corruption that loops over images (1 and 3 channels; others per channel)."""
    u8 = ops.to_uint8(x)
    out = np.empty_like(u8)
    for i, img in enumerate(u8):
        if img.shape[-1] in (1, 3):
            out[i] = _jpeg(img, int(c))
        else:
            for k in range(img.shape[-1]):
                out[i, ..., k : k + 1] = _jpeg(img[..., k : k + 1], int(c))
    return ops.to_float(out)


def _jpeg(img: Array, quality: int) -> Array:
    pil = Image.fromarray(img[..., 0] if img.shape[-1] == 1 else img)
    buf = io.BytesIO()
    pil.save(buf, format="JPEG", quality=quality)
    buf.seek(0)
    dec = np.asarray(Image.open(buf))
    return dec.reshape(img.shape)


# ---------------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------------

FUNCTIONS: dict[str, Callable[[Array, object, Context], Array]] = {
    "gaussian_noise": gaussian_noise,
    "shot_noise": shot_noise,
    "impulse_noise": impulse_noise,
    "defocus_blur": defocus_blur,
    "glass_blur": glass_blur,
    "motion_blur": motion_blur,
    "zoom_blur": zoom_blur,
    "snow": snow,
    "frost": frost,
    "fog": fog,
    "brightness": brightness,
    "contrast": contrast,
    "elastic_transform": elastic_transform,
    "pixelate": pixelate,
    "jpeg_compression": jpeg_compression,
}
assert tuple(FUNCTIONS) == CORRUPTIONS

#: Corruptions that draw random numbers (the others are deterministic functions of the image).
RANDOM_CORRUPTIONS: frozenset[str] = frozenset(
    {
        "gaussian_noise",
        "shot_noise",
        "impulse_noise",
        "glass_blur",
        "motion_blur",
        "snow",
        "frost",
        "fog",
        "elastic_transform",
    }
)


def corrupt(
    x: Array,
    corruption: str,
    severity: int,
    rng: np.random.Generator | int,
    params: str = "auto",
) -> Array:
    """Apply ``corruption`` at ``severity`` (1..5) to a uint8 batch (N, H, W, C).

    ``params``: ``auto`` (mnist table for 1 channel, cifar for 3), ``mnist`` or ``cifar``
    (docs/shifts.md, reading R1). ``rng``: a Generator or an int seed (the workflow passes
    ``labelfree.seeds.rng(seed, dataset, corruption, severity)``). Returns uint8 of the same
    shape: clipped to [0, 1], x255, truncated (docs/shifts.md, reading R1).
    """
    x = np.asarray(x)
    if x.dtype != np.uint8 or x.ndim != 4:
        raise ValueError(f"corrupt: x must be uint8 (N, H, W, C), got {x.dtype} {x.shape}")
    if corruption not in FUNCTIONS:
        raise ValueError(f"unknown corruption {corruption!r}; known: {list(CORRUPTIONS)}")
    table = resolve_table(params, x.shape[3])
    c = table_entry(table, corruption, severity)
    if len(x) == 0:
        return x.copy()
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    ctx = Context(table=table, scale=scale_factor(table, x.shape[1], x.shape[2]), rng=generator)
    out = FUNCTIONS[corruption](ops.to_float(x), c, ctx)
    return ops.to_uint8(out)


__all__ = ["CORRUPTIONS", "REFERENCE_SIZE", "RANDOM_CORRUPTIONS", "Context", "corrupt"]
