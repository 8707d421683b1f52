"""Meta-training sets and validation sets (docs/syp.md, reading R11), numpy/scipy only, seeded.

Every operation works on a whole batch of images ``(N, H, W, C)`` as float64 in [0, 255] and draws
its per-image magnitudes as vectors from a generator seeded by ``(seed, set name)``, so image ``i`` of
set ``k`` is determined by ``(seed, k, i)`` (and checksummed). No Python loop over images or pixels.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from labelfree.seeds import rng as seeded_rng
from labelfree.syp.plan import ValidationPlan

Op = Callable[[np.ndarray, np.random.Generator, float], np.ndarray]

# ---------------------------------------------------------------------------------------------
# vectorised building blocks
# ---------------------------------------------------------------------------------------------


def _clip(x: np.ndarray) -> np.ndarray:
    return np.clip(x, 0.0, 255.0)


def _per(v: np.ndarray) -> np.ndarray:
    """Broadcast a per-image vector (N,) against (N, H, W, C)."""
    return np.asarray(v, dtype=np.float64)[:, None, None, None]


def gaussian_blur(x: np.ndarray, sigma: np.ndarray | float) -> np.ndarray:
    """Separable Gaussian blur with a per-image sigma (N,) (0 = identity), reflect borders."""
    n = len(x)
    sig = np.broadcast_to(np.asarray(sigma, dtype=np.float64), (n,))
    radius = max(1, int(np.ceil(3.0 * sig.max())))
    t = np.arange(-radius, radius + 1, dtype=np.float64)
    safe = np.where(sig > 0, sig, 1.0)
    k = np.exp(-(t[None, :] ** 2) / (2.0 * safe[:, None] ** 2))
    k = np.where(sig[:, None] > 0, k, (t[None, :] == 0).astype(np.float64))
    k /= k.sum(axis=1, keepdims=True)
    out = x
    for axis in (1, 2):
        pad = [(0, 0)] * 4
        pad[axis] = (radius, radius)
        p = np.pad(out, pad, mode="symmetric")
        size = out.shape[axis]
        acc = np.zeros_like(out)
        for j in range(2 * radius + 1):  # loop over kernel taps, not over images or pixels
            sl = [slice(None)] * 4
            sl[axis] = slice(j, j + size)
            acc += _per(k[:, j]) * p[tuple(sl)]
        out = acc
    return out


def warp(x: np.ndarray, rows: np.ndarray, cols: np.ndarray, cval: float = 0.0) -> np.ndarray:
    """Sample every image at its own (N, H, W) source coordinates (bilinear, constant border)."""
    n, h, w, c = x.shape
    ni = np.broadcast_to(np.arange(n, dtype=np.float64)[:, None, None, None], (n, h, w, c))
    ci = np.broadcast_to(np.arange(c, dtype=np.float64)[None, None, None, :], (n, h, w, c))
    r = np.broadcast_to(rows[..., None], (n, h, w, c))
    q = np.broadcast_to(cols[..., None], (n, h, w, c))
    return ndimage.map_coordinates(x, [ni, r, q, ci], order=1, mode="constant", cval=cval)


def affine(
    x: np.ndarray,
    angle_deg: np.ndarray,
    scale: np.ndarray,
    shift: np.ndarray,
    shear: np.ndarray | None = None,
) -> np.ndarray:
    """Per-image affine map about the centre: rotation, per-axis scale (N,2), shift (N,2) in pixels,
    optional shear (N,); output pixel p samples ``A^-1 (p - centre - shift) + centre``."""
    n, h, w, _ = x.shape
    cy, cx = (h - 1) / 2.0, (w - 1) / 2.0
    yy, xx = np.meshgrid(
        np.arange(h, dtype=np.float64), np.arange(w, dtype=np.float64), indexing="ij"
    )
    a = np.deg2rad(np.asarray(angle_deg, dtype=np.float64))
    sh = np.zeros(n) if shear is None else np.asarray(shear, dtype=np.float64)
    cos, sin = np.cos(a), np.sin(a)
    # forward A = R @ Shear @ S (rows: y, x); build its inverse analytically per image
    m = np.empty((n, 2, 2))
    m[:, 0, 0], m[:, 0, 1] = cos * scale[:, 0], (cos * sh - sin) * scale[:, 1]
    m[:, 1, 0], m[:, 1, 1] = sin * scale[:, 0], (sin * sh + cos) * scale[:, 1]
    inv = np.linalg.inv(m)
    dy = yy[None] - cy - shift[:, 0, None, None]
    dx = xx[None] - cx - shift[:, 1, None, None]
    rows = inv[:, 0, 0, None, None] * dy + inv[:, 0, 1, None, None] * dx + cy
    cols = inv[:, 1, 0, None, None] * dy + inv[:, 1, 1, None, None] * dx + cx
    return warp(x, rows, cols)


def _square_masks(n: int, h: int, w: int, top, left, size_h, size_w) -> np.ndarray:
    """Boolean (N, H, W, 1) masks of per-image rectangles."""
    r = np.arange(h)[None, :, None]
    c = np.arange(w)[None, None, :]
    m = (
        (r >= top[:, None, None])
        & (r < (top + size_h)[:, None, None])
        & (c >= left[:, None, None])
        & (c < (left + size_w)[:, None, None])
    )
    return m[..., None]


# ---------------------------------------------------------------------------------------------
# meta-set operations (docs/syp.md, reading R11): f(x, rng, strength) -> x, per-image magnitudes
# ---------------------------------------------------------------------------------------------


def op_brightness(x, g, s):
    f = 1.0 + s * (g.uniform(0.1, 1.9, len(x)) - 1.0)
    return _clip(x * _per(f))


def op_contrast(x, g, s):
    a = 1.0 + s * (g.uniform(0.5, 2.0, len(x)) - 1.0)
    return _clip(128.0 + _per(a) * (x - 128.0))


def op_solarize(x, g, s):
    thr = 255.0 - s * (255.0 - g.uniform(32.0, 128.0, len(x)))
    return np.where(x > _per(thr), 255.0 - x, x)


def op_affine(x, g, s):
    n, h, w, _ = x.shape
    apply = g.random(n) < 0.5
    angle = s * g.uniform(-30.0, 30.0, n) * apply
    scale = 1.0 + s * (g.uniform(0.8, 1.2, (n, 2)) - 1.0) * apply[:, None]
    shift = s * g.uniform(-0.2, 0.2, (n, 2)) * np.array([h, w]) * apply[:, None]
    return _clip(affine(x, angle, scale, shift))


def op_sharpen(x, g, s):
    alpha = s * g.uniform(0.1, 1.0, len(x)) * 2.0
    return _clip(x + _per(alpha) * (x - gaussian_blur(x, 1.0)))


def op_noise(x, g, s):
    sigma = s * g.uniform(0.0, 0.25, len(x)) * 255.0
    return _clip(x + _per(sigma) * g.standard_normal(x.shape))


def op_blur(x, g, s):
    return gaussian_blur(x, s * g.uniform(0.0, 1.5, len(x)))


def op_cutout(x, g, s):
    n, h, w, _ = x.shape
    size = np.round(s * g.uniform(0.2, 0.6, n) * h).astype(int)
    top = (g.random(n) * (h - size + 1)).astype(int)
    left = (g.random(n) * (w - size + 1)).astype(int)
    return np.where(_square_masks(n, h, w, top, left, size, size), 0.0, x)


META_OPS: dict[str, Op] = {
    "brightness": op_brightness,
    "contrast": op_contrast,
    "solarize": op_solarize,
    "affine": op_affine,
    "sharpen": op_sharpen,
    "noise": op_noise,
    "blur": op_blur,
    "cutout": op_cutout,
}


@dataclass(frozen=True)
class MetaSetSpec:
    """What was applied to one meta-set: op names in order and the set strength ``s``."""

    index: int
    ops: tuple[str, ...]
    strength: float
    checksum: str


def checksum(x: np.ndarray) -> str:
    """sha256 of the uint8 image bytes (the record of what a set holds)."""
    return hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()


def build_meta_set(
    x: np.ndarray,
    index: int,
    seed: int,
    ops: Sequence[str] = tuple(META_OPS),
    n_ops: int = 3,
    strength: tuple[float, float] = (0.0, 1.0),
) -> tuple[np.ndarray, MetaSetSpec]:
    """Transform the source split into meta-set ``index`` (docs/syp.md, reading R11).

    ``n_ops`` operations sampled without replacement from ``ops``, random order, per-set strength
    ``s ~ U(strength)`` multiplying every magnitude, per-image magnitudes. Returns uint8 images and
    the record of what was applied (with checksum).
    """
    unknown = [o for o in ops if o not in META_OPS]
    if unknown:
        raise ValueError(f"syp meta_sets.ops: unknown op(s) {unknown}; known {list(META_OPS)}")
    if not 1 <= n_ops <= len(ops):
        raise ValueError(f"syp meta_sets.n_ops={n_ops} must lie in [1, {len(ops)}]")
    g = seeded_rng(seed, "syp-meta", index)
    chosen = [ops[i] for i in g.permutation(len(ops))[:n_ops]]
    s = float(g.uniform(*strength))
    out = np.asarray(x, dtype=np.float64)
    for name in chosen:
        out = META_OPS[name](out, g, s)
    img = np.round(_clip(out)).astype(np.uint8)
    return img, MetaSetSpec(index, tuple(chosen), s, checksum(img))


# ---------------------------------------------------------------------------------------------
# validation corruptions (docs/syp.md, reading R11), severities 1..5; spatial sizes scale with
# the image side
# ---------------------------------------------------------------------------------------------


def _sev(values: Sequence[float], severity: int) -> float:
    if not 1 <= severity <= 5:
        raise ValueError(f"corruption severity {severity} must lie in 1..5")
    return float(values[severity - 1])


def c_gaussian_noise(x, g, sev):
    return _clip(
        x + _sev([0.04, 0.06, 0.08, 0.09, 0.10], sev) * 2.5 * 255 * g.standard_normal(x.shape)
    )


def c_shot_noise(x, g, sev):
    lam = _sev([60, 25, 12, 7, 4], sev)
    return _clip(g.poisson(x / 255.0 * lam) / lam * 255.0)


def c_impulse_noise(x, g, sev):
    amount = _sev([0.03, 0.06, 0.09, 0.17, 0.27], sev)
    u = g.random(x.shape[:3] + (1,))
    salt = g.random(x.shape[:3] + (1,)) < 0.5
    return np.where(u < amount, np.where(salt, 255.0, 0.0), x)


def c_speckle_noise(x, g, sev):
    return _clip(
        x + x * _sev([0.15, 0.25, 0.35, 0.45, 0.6], sev) * 2.0 * g.standard_normal(x.shape)
    )


def c_gaussian_blur(x, g, sev):
    return gaussian_blur(x, _sev([0.4, 0.6, 0.8, 1.0, 1.3], sev) * x.shape[1] / 16)


def _kernel_conv(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """Same 2-D kernel on every image/channel (N-D convolution with a singleton N and C axis)."""
    return ndimage.convolve(x, kernel[None, :, :, None], mode="nearest")


def c_defocus_blur(x, g, sev):
    r = _sev([0.8, 1.0, 1.5, 2.0, 2.5], sev) * x.shape[1] / 16
    k = int(np.ceil(r))
    yy, xx = np.mgrid[-k : k + 1, -k : k + 1]
    disk = ((yy**2 + xx**2) <= r**2).astype(np.float64)
    return _kernel_conv(x, disk / disk.sum())


def c_motion_blur(x, g, sev):
    length = _sev([2, 3, 4, 5, 7], sev) * x.shape[1] / 16
    angle = g.uniform(0, np.pi)
    k = int(np.ceil(length))
    ker = np.zeros((2 * k + 1, 2 * k + 1))
    t = np.linspace(0, length, 4 * k + 1)
    ker[
        np.round(k + t * np.sin(angle)).astype(int).clip(0, 2 * k),
        np.round(k + t * np.cos(angle)).astype(int).clip(0, 2 * k),
    ] = 1.0
    return _kernel_conv(x, ker / ker.sum())


def c_zoom_blur(x, g, sev):
    n, h, w, _ = x.shape
    zmax = _sev([1.08, 1.14, 1.2, 1.28, 1.36], sev)
    zooms = np.linspace(1.0, zmax, 6)
    out = np.zeros_like(x)
    for z in zooms:  # loop over zoom levels, not images
        out += affine(x, np.zeros(n), np.full((n, 2), z), np.zeros((n, 2)))
    return out / len(zooms)


def c_glass_blur(x, g, sev):
    n, h, w, _ = x.shape
    sigma, delta = [(0.5, 1), (0.6, 1), (0.7, 2), (0.8, 2), (1.0, 2)][sev - 1]
    x = gaussian_blur(x, sigma)
    yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    dy = g.integers(-delta, delta + 1, (n, h, w))
    dx = g.integers(-delta, delta + 1, (n, h, w))
    rows = np.clip(yy[None] + dy, 0, h - 1)
    cols = np.clip(xx[None] + dx, 0, w - 1)
    shuffled = x[np.arange(n)[:, None, None], rows, cols]
    return gaussian_blur(shuffled, sigma)


def c_pixelate(x, g, sev):
    n, h, w, _ = x.shape
    f = _sev([0.75, 0.6, 0.5, 0.4, 0.3], sev)
    small = max(2, int(round(h * f)))
    rows = (np.arange(h) * small // h)[:, None] * (h / small) + (h / small - 1) / 2
    cols = (np.arange(w) * small // w)[None, :] * (w / small) + (w / small - 1) / 2
    down = warp(x, np.broadcast_to(rows, (n, h, w)), np.broadcast_to(cols, (n, h, w)))
    return down


def c_posterize(x, g, sev):
    levels = _sev([8, 6, 4, 3, 2], sev)
    step = 255.0 / (levels - 1)
    return np.round(x / step) * step


def c_contrast(x, g, sev):
    c = _sev([0.5, 0.4, 0.3, 0.2, 0.1], sev)
    mean = x.mean(axis=(1, 2, 3), keepdims=True)
    return (x - mean) * c + mean


def c_brightness(x, g, sev):
    gamma = _sev([0.8, 0.6, 0.45, 0.35, 0.25], sev)
    return 255.0 * (x / 255.0) ** gamma + _sev([20, 40, 60, 80, 100], sev)


def c_saturate(x, g, sev):
    gamma = _sev([1.5, 2.0, 3.0, 4.0, 5.0], sev)
    return 255.0 * (x / 255.0) ** gamma


def c_elastic(x, g, sev):
    n, h, w, _ = x.shape
    alpha, sigma = [(1.0, 1.5), (1.5, 1.5), (2.0, 1.5), (2.5, 1.2), (3.0, 1.0)][sev - 1]
    alpha *= h / 16
    dy = ndimage.gaussian_filter(g.uniform(-1, 1, (n, h, w)), (0, sigma, sigma)) * alpha * 3
    dx = ndimage.gaussian_filter(g.uniform(-1, 1, (n, h, w)), (0, sigma, sigma)) * alpha * 3
    yy, xx = np.meshgrid(np.arange(h, dtype=float), np.arange(w, dtype=float), indexing="ij")
    return warp(x, yy[None] + dy, xx[None] + dx)


def c_fog(x, g, sev):
    n, h, w, c = x.shape
    amount = _sev([60, 90, 120, 150, 180], sev)
    coarse = g.random((n, 4, 4, 1))
    fog = ndimage.zoom(coarse, (1, h / 4, w / 4, 1), order=1)[:, :h, :w]
    return _clip(x * 0.8 + amount * fog)


def c_snow(x, g, sev):
    n, h, w, _ = x.shape
    density = _sev([0.03, 0.05, 0.07, 0.1, 0.13], sev)
    flakes = (g.random((n, h, w, 1)) < density).astype(np.float64) * 255.0
    ker = np.zeros((5, 5))
    ker[np.arange(5), np.arange(5)] = 1.0  # diagonal streaks
    streaks = _kernel_conv(flakes, ker)
    return _clip(np.maximum(x, np.minimum(streaks, 255.0)))


def c_spatter(x, g, sev):
    n, h, w, _ = x.shape
    thr = _sev([0.7, 0.65, 0.6, 0.55, 0.5], sev)
    field = ndimage.gaussian_filter(g.random((n, h, w)), (0, 1.0, 1.0))
    field = (field - field.mean(axis=(1, 2), keepdims=True)) / field.std(axis=(1, 2), keepdims=True)
    blobs = (field > thr * 2.2)[..., None]
    return np.where(blobs, 160.0, x)


def c_occlusion(x, g, sev):
    n, h, w, _ = x.shape
    width = max(1, int(round(_sev([0.12, 0.18, 0.25, 0.32, 0.4], sev) * h)))
    vertical = g.random(n) < 0.5
    pos = g.integers(0, h - width + 1, n)
    full = np.full(n, h)
    zero = np.zeros(n, dtype=int)
    m = _square_masks(
        n,
        h,
        w,
        np.where(vertical, zero, pos),
        np.where(vertical, pos, zero),
        np.where(vertical, full, width),
        np.where(vertical, width, full),
    )
    return np.where(m, 0.0, x)


CORRUPTIONS: dict[str, Callable[[np.ndarray, np.random.Generator, int], np.ndarray]] = {
    "shot_noise": c_shot_noise,
    "impulse_noise": c_impulse_noise,
    "speckle_noise": c_speckle_noise,
    "defocus_blur": c_defocus_blur,
    "motion_blur": c_motion_blur,
    "zoom_blur": c_zoom_blur,
    "glass_blur": c_glass_blur,
    "pixelate": c_pixelate,
    "posterize": c_posterize,
    "contrast": c_contrast,
    "brightness": c_brightness,
    "elastic": c_elastic,
    "fog": c_fog,
    "snow": c_snow,
    "spatter": c_spatter,
    "saturate": c_saturate,
    "gaussian_noise": c_gaussian_noise,
    "gaussian_blur": c_gaussian_blur,
    "occlusion": c_occlusion,
}


def corrupt(x: np.ndarray, name: str, severity: int, seed: int) -> np.ndarray:
    """Apply validation corruption ``name`` at ``severity`` (1..5) to uint8 images (reading R11)."""
    if name not in CORRUPTIONS:
        raise ValueError(f"syp validation corruption {name!r} unknown; known {list(CORRUPTIONS)}")
    g = seeded_rng(seed, "syp-val-c", name, severity)
    out = CORRUPTIONS[name](np.asarray(x, dtype=np.float64), g, severity)
    return np.round(_clip(out)).astype(np.uint8)


# ---------------------------------------------------------------------------------------------
# natural shifts (docs/syp.md, reading R11; CIFAR-10-F analogue): Dirichlet class priors + a
# style change
# ---------------------------------------------------------------------------------------------

STYLES = ("thicken", "thin", "shear", "downup")


def style_change(x: np.ndarray, style: str, g: np.random.Generator) -> np.ndarray:
    """One style change not used by the meta-sets, randomised parameters (reading R11)."""
    xf = np.asarray(x, dtype=np.float64)
    n, h, w, _ = xf.shape
    if style == "thicken":
        size = int(g.integers(2, 4))
        return ndimage.grey_dilation(xf, size=(1, size, size, 1))
    if style == "thin":
        return ndimage.grey_erosion(xf, size=(1, 2, 2, 1))
    if style == "shear":
        sh = np.full(n, g.uniform(0.15, 0.45) * g.choice([-1.0, 1.0]))
        return affine(xf, np.zeros(n), np.ones((n, 2)), np.zeros((n, 2)), shear=sh)
    if style == "downup":
        f = g.uniform(0.35, 0.6)
        small = max(2, int(round(h * f)))
        down = ndimage.zoom(
            xf, (1, small / h, small / w, 1), order=1, grid_mode=True, mode="nearest"
        )
        up = ndimage.zoom(
            down, (1, h / small, w / small, 1), order=1, grid_mode=True, mode="nearest"
        )
        return up[:, :h, :w]
    raise ValueError(f"syp natural style {style!r} is not one of {STYLES}")


def natural_set(
    x: np.ndarray, y: np.ndarray, k: int, seed: int, alpha: float = 1.0
) -> tuple[np.ndarray, np.ndarray, str]:
    """Natural-shift set ``k``: holdout resampled (with replacement, same size) under Dirichlet(alpha)
    class priors, then style ``STYLES[k % 4]`` with random parameters. Returns (x, y, style)."""
    g = seeded_rng(seed, "syp-val-n", k)
    classes = np.unique(y)
    prior = g.dirichlet(np.full(len(classes), alpha))
    counts = np.bincount(np.searchsorted(classes, y), minlength=len(classes))
    p = prior[np.searchsorted(classes, y)] / counts[np.searchsorted(classes, y)]
    idx = np.sort(g.choice(len(y), size=len(y), replace=True, p=p / p.sum()))
    style = STYLES[k % len(STYLES)]
    out = style_change(x[idx], style, g)
    return np.round(_clip(out)).astype(np.uint8), y[idx], style


def build_validation_sets(
    x: np.ndarray, y: np.ndarray, plan: ValidationPlan, seed: int
) -> dict[str, tuple[np.ndarray, np.ndarray, dict]]:
    """All validation sets from the holdout split: name -> (x uint8, y, info) (reading R11)."""
    out: dict[str, tuple[np.ndarray, np.ndarray, dict]] = {
        "syp-val-clean": (np.asarray(x, dtype=np.uint8), y, {"group": "clean", "shift": "none"})
    }
    for c in plan.corruptions:
        name = f"syp-val-c-{c.replace('_', '')}"
        out[name] = (
            corrupt(x, c, plan.severity, seed),
            y,
            {"group": "corrupted", "shift": f"{c}-{plan.severity}"},
        )
    for k in range(plan.natural):
        xs, ys, style = natural_set(x, y, k, seed)
        out[f"syp-val-n{k:02d}"] = (xs, ys, {"group": "natural", "shift": style})
    return out


def rotations(x: np.ndarray) -> np.ndarray:
    """Stack ``[rot90, rot180, rot270]`` copies (counter-clockwise) of square images (3N, H, W, C)
    for the rotation baseline; the 0-degree block is the set itself."""
    if x.shape[1] != x.shape[2]:
        raise ValueError(f"rotation baseline needs square images, got {x.shape}")
    return np.concatenate([np.rot90(x, k, axes=(1, 2)) for k in (1, 2, 3)], axis=0)
