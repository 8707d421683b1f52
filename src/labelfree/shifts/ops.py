"""Vectorised image operations shared by the corruptions and natural shifts.

Every function works on a float batch ``x`` of shape (N, H, W, C) in [0, 1] (or a noise field of
shape (N, H, W)) and loops, where it loops at all, over kernel taps or octaves, never over
pixels or images.
"""

from __future__ import annotations

import functools

import numpy as np
from PIL import Image
from scipy import fft as sp_fft
from scipy import ndimage

Array = np.ndarray


def to_float(x: Array) -> Array:
    """uint8 NHWC -> float32 in [0, 1] (``x / 255``; exact for every uint8 value)."""
    return x.astype(np.float32) / np.float32(255)


def to_uint8(x: Array) -> Array:
    """Clip to [0, 1], multiply by 255 and truncate to uint8 (docs/shifts.md, reading R1)."""
    return (np.clip(x, 0.0, 1.0) * np.float32(255)).astype(np.uint8)


def map_index(i: Array, n: int, mode: str) -> Array:
    """Map integer indices onto ``[0, n)`` with a scipy.ndimage boundary ``mode``.

    ``reflect`` = half-sample symmetric (d c b a | a b c d | d c b a),
    ``mirror`` = whole-sample symmetric (OpenCV REFLECT_101), ``nearest`` = edge replicate.
    """
    if i.size and i.min() >= 0 and i.max() < n:
        return i
    if mode == "nearest" or n == 1:
        return np.clip(i, 0, n - 1)
    if mode == "reflect":
        i = np.mod(i, 2 * n)
        return np.where(i >= n, 2 * n - 1 - i, i)
    if mode == "mirror":
        period = 2 * n - 2
        i = np.mod(i, period)
        return np.where(i >= n, period - i, i)
    raise ValueError(f"unknown boundary mode {mode!r}")


def bilinear(
    x: Array, ys: Array, xs: Array, mode: str = "nearest", cval: float = 0.0, chunk: int = 64
) -> Array:
    """Sample ``x`` (N, H, W, C) at fractional rows ``ys`` and columns ``xs`` (bilinear).

    ``ys``/``xs`` broadcast to (N, Ho, Wo); returns (N, Ho, Wo, C). ``mode`` is a scipy
    boundary mode or ``constant`` (samples outside the image read ``cval``). Works on chunks
    of ``chunk`` images (cache-sized; measured about 2x faster than the whole batch at once).
    """
    n = x.shape[0]
    ys, xs = np.broadcast_arrays(np.asarray(ys, np.float32), np.asarray(xs, np.float32))
    if ys.ndim == 2:
        ys, xs = ys[None], xs[None]
    ys = np.broadcast_to(ys, (n, *ys.shape[1:]))
    xs = np.broadcast_to(xs, (n, *xs.shape[1:]))
    if n <= chunk:
        return _bilinear(x, ys, xs, mode, cval)
    out = np.empty((*ys.shape, x.shape[3]), dtype=np.float32)
    for lo in range(0, n, chunk):
        sl = slice(lo, lo + chunk)
        out[sl] = _bilinear(x[sl], ys[sl], xs[sl], mode, cval)
    return out


def _bilinear(x: Array, ys: Array, xs: Array, mode: str, cval: float) -> Array:
    n, h, w, c = x.shape
    y0f = np.floor(ys)
    x0f = np.floor(xs)
    wy = (ys - y0f)[..., None]
    wx = (xs - x0f)[..., None]
    y0 = y0f.astype(np.int64)
    x0 = x0f.astype(np.int64)
    base = (np.arange(n, dtype=np.int64) * (h * w))[:, None, None]
    flat = np.ascontiguousarray(x).reshape(n * h * w, c)
    out = np.zeros((*ys.shape, c), dtype=np.float32)
    for dy, fy in ((0, 1 - wy), (1, wy)):
        yi = y0 + dy
        ym = map_index(yi, h, "nearest" if mode == "constant" else mode)
        for dx, fx in ((0, 1 - wx), (1, wx)):
            xi = x0 + dx
            xm = map_index(xi, w, "nearest" if mode == "constant" else mode)
            vals = flat[base + ym * w + xm]
            if mode == "constant":
                inside = ((yi >= 0) & (yi < h) & (xi >= 0) & (xi < w))[..., None]
                vals = np.where(inside, vals, np.float32(cval))
            out += (fy * fx) * vals
    return out


def gaussian(x: Array, sigma: float, mode: str = "nearest", truncate: float = 4.0) -> Array:
    """Per-image Gaussian blur over H and W (skimage.filters.gaussian defaults: nearest, 4 sd)."""
    if sigma <= 0:
        return x
    spatial = (0, sigma, sigma) + (0,) * (x.ndim - 3)
    return ndimage.gaussian_filter(x, sigma=spatial, mode=mode, truncate=truncate)


def filter2d(x: Array, kernel: Array) -> Array:
    """Correlate every image and channel with a 2-D kernel, OpenCV's REFLECT_101 border.

    Small kernels use direct correlation; large ones an FFT on the mirror-padded batch.
    """
    kh, kw = kernel.shape
    if kh * kw <= 121:
        return ndimage.correlate(x, kernel[None, :, :, None], mode="mirror")
    ph, pw = kh // 2, kw // 2
    h, w = x.shape[1:3]
    rows = map_index(np.arange(-ph, h + ph), h, "mirror")
    cols = map_index(np.arange(-pw, w + pw), w, "mirror")
    padded = x[:, rows][:, :, cols]
    size = tuple(sp_fft.next_fast_len(v, real=True) for v in (h + 2 * ph + kh, w + 2 * pw + kw))
    fx = sp_fft.rfft2(padded, s=size, axes=(1, 2))
    fk = sp_fft.rfft2(kernel[::-1, ::-1][None, :, :, None], s=size, axes=(1, 2))
    full = sp_fft.irfft2(fx * fk, s=size, axes=(1, 2))
    return full[:, kh - 1 : kh - 1 + h, kw - 1 : kw - 1 + w].astype(np.float32)


def overlap_matrix(n_ref_half: int, s: float) -> Array:
    """Area-integration matrix from a reference grid (half-size ``n_ref_half``) to a grid
    coarser by the factor ``s < 1``: entry (j, i) is the length of reference pixel i inside
    target pixel j (both centred on 0)."""
    ref = np.arange(-n_ref_half, n_ref_half + 1, dtype=np.float64)
    half = int(np.ceil((n_ref_half + 0.5) * s - 0.5))
    tgt = np.arange(-half, half + 1, dtype=np.float64)
    lo = np.maximum((tgt[:, None] - 0.5) / s, ref[None, :] - 0.5)
    hi = np.minimum((tgt[:, None] + 0.5) / s, ref[None, :] + 0.5)
    return np.clip(hi - lo, 0.0, None)


def shrink_kernel(kernel: Array, s: float) -> Array:
    """Resample a centred 2-D kernel onto a grid coarser by ``s`` (< 1), integrating area."""
    a = overlap_matrix(kernel.shape[0] // 2, s)
    out = a @ kernel.astype(np.float64) @ a.T
    return (out / out.sum()).astype(np.float32)


def gaussian_kernel_1d(sigma: float, half: int) -> Array:
    """OpenCV's GaussianBlur taps for ``ksize = 2 * half + 1`` and ``sigma``."""
    t = np.arange(-half, half + 1, dtype=np.float64)
    k = np.exp(-(t**2) / (2 * sigma**2))
    return k / k.sum()


def disk_kernel(radius: float, alias_blur: float, half_blur: int) -> Array:
    """The -C benchmarks' defocus kernel: an aliased disk of ``radius`` (px), normalised,
    smoothed by a Gaussian of ``alias_blur`` with ``2 * half_blur + 1`` taps."""
    r = int(np.ceil(radius)) + half_blur
    t = np.arange(-r, r + 1, dtype=np.float64)
    yy, xx = np.meshgrid(t, t, indexing="ij")
    disk = (xx**2 + yy**2 <= radius**2).astype(np.float64)
    disk /= disk.sum()
    g = gaussian_kernel_1d(alias_blur, half_blur)
    disk = ndimage.correlate1d(disk, g, axis=0, mode="constant")
    disk = ndimage.correlate1d(disk, g, axis=1, mode="constant")
    return disk.astype(np.float32)


def interp_matrix(coords: Array, n: int, mode: str = "nearest") -> Array:
    """(len(coords), n) matrix of linear-interpolation weights at fractional ``coords``."""
    c0 = np.floor(coords)
    f = coords - c0
    c0 = c0.astype(np.int64)
    m = np.zeros((len(coords), n))
    rows = np.arange(len(coords))
    np.add.at(m, (rows, map_index(c0, n, mode)), 1 - f)
    np.add.at(m, (rows, map_index(c0 + 1, n, mode)), f)
    return m.astype(np.float32)


def resample_axis(x: Array, coords: Array, axis: int, mode: str = "nearest") -> Array:
    """Linear interpolation of ``x`` along one ``axis`` at fractional ``coords`` (same for
    every image), with a scipy boundary ``mode``; the other axes are untouched."""
    n = x.shape[axis]
    coords = np.asarray(coords, dtype=np.float64)
    c0 = np.floor(coords)
    f = (coords - c0).astype(np.float32)
    c0 = c0.astype(np.int64)
    shape = [1] * x.ndim
    shape[axis] = len(coords)
    f = f.reshape(shape)
    lo = np.take(x, map_index(c0, n, mode), axis=axis)
    hi = np.take(x, map_index(c0 + 1, n, mode), axis=axis)
    return lo * (1 - f) + hi * f


def correlate_per_image(x: Array, kernels: Array, chunk: int = 128) -> Array:
    """Correlate image ``n`` of (N, H, W, C) with its own centred kernel ``kernels[n]``
    (N, k, k), edge-replicated borders, by real FFTs over chunks of the batch (cache-sized)."""
    n, h, w, c = x.shape
    p = kernels.shape[1] // 2
    size = tuple(sp_fft.next_fast_len(v + 2 * p, real=True) for v in (h + 2 * p, w + 2 * p))
    out = np.empty_like(x, dtype=np.float32)
    for lo in range(0, n, chunk):
        part = x[lo : lo + chunk]
        padded = np.pad(part, ((0, 0), (p, p), (p, p), (0, 0)), mode="edge")
        fx = sp_fft.rfft2(padded, s=size, axes=(1, 2))
        fk = sp_fft.rfft2(kernels[lo : lo + chunk, ::-1, ::-1, None], s=size, axes=(1, 2))
        full = sp_fft.irfft2(fx * fk, s=size, axes=(1, 2))
        out[lo : lo + chunk] = full[:, 2 * p : 2 * p + h, 2 * p : 2 * p + w]
    return out


def motion_kernels(
    radius: float, sigma: float, angles_deg: Array, height: int, width: int
) -> Array:
    """Per-image one-sided line kernels (N, k, k) for :func:`motion_blur`.

    Tap ``i = 0 .. 2 * radius`` sits ``i`` pixels along the angle with weight
    ``exp(-i^2 / (2 sigma^2))`` (normalised over the taps) and is splatted bilinearly; taps
    whose offset reaches the image border are dropped without renormalising, as in the
    reference implementation.
    """
    n_taps = int(np.floor(2 * radius)) + 1
    taps = np.arange(n_taps, dtype=np.float64)
    weights = np.exp(-(taps**2) / (2 * max(sigma, 1e-6) ** 2))
    weights /= weights.sum()
    theta = np.deg2rad(np.asarray(angles_deg, dtype=np.float64))[:, None]
    dy = taps[None] * np.sin(theta)
    dx = taps[None] * np.cos(theta)
    w = np.where((np.abs(dy) < height) & (np.abs(dx) < width), weights[None], 0.0)
    p = min(int(np.ceil(2 * radius)) + 1, max(height, width))
    n = len(theta)
    kernels = np.zeros((n, 2 * p + 1, 2 * p + 1))
    y0, x0 = np.floor(dy), np.floor(dx)
    fy, fx = dy - y0, dx - x0
    bidx = np.broadcast_to(np.arange(n)[:, None], dy.shape)
    for oy, wy in ((0, 1 - fy), (1, fy)):
        for ox, wx in ((0, 1 - fx), (1, fx)):
            # dropped taps (weight 0) may fall outside the kernel: clip their index
            rows = np.clip(y0 + oy + p, 0, 2 * p).astype(np.int64)
            cols = np.clip(x0 + ox + p, 0, 2 * p).astype(np.int64)
            np.add.at(kernels, (bidx, rows, cols), w * wy * wx)
    return kernels.astype(np.float32)


def motion_blur(x: Array, radius: float, sigma: float, angles_deg: Array) -> Array:
    """One-sided line-kernel blur, the offline substitute of ImageMagick's motion blur
    (docs/shifts.md, reading R2): ``out(p) = sum_i w_i x(p + i (sin a, cos a))``, per-image
    angle ``a``."""
    kernels = motion_kernels(radius, sigma, angles_deg, x.shape[1], x.shape[2])
    return correlate_per_image(x, kernels)


def centre_zoom(x: Array, zoom: float, mode: str = "nearest") -> Array:
    """Zoom every image of (N, H, W, C) by ``zoom`` about its centre, keeping its size
    (the -C benchmarks' ``clipped_zoom``, computed as a continuous separable bilinear warp).

    Images of 16 to 64 px use dense interpolation matrices (BLAS products), others gathers
    (measured faster there).
    """
    n, h, w, c = x.shape
    cy, cx = (h - 1) / 2, (w - 1) / 2
    ys = cy + (np.arange(h, dtype=np.float64) - cy) / zoom
    xs = cx + (np.arange(w, dtype=np.float64) - cx) / zoom
    if not 16 <= max(h, w) <= 64:
        return resample_axis(resample_axis(x, ys, 1, mode), xs, 2, mode)
    my, mx = interp_matrix(ys, h, mode), interp_matrix(xs, w, mode)
    rows = np.matmul(my, x.reshape(n, h, w * c)).reshape(n, h, w, c)
    cols = np.matmul(mx, rows.transpose(0, 3, 2, 1).reshape(n * c, w, h))
    return cols.reshape(n, c, w, h).transpose(0, 3, 2, 1)


def plasma_fractal(n: int, mapsize: int, wibbledecay: float, rng: np.random.Generator) -> Array:
    """Diamond-square height maps (the -C benchmarks' fog field), (n, mapsize, mapsize) in [0, 1].

    ``mapsize`` must be a power of two; the batch dimension is generated in one pass.
    """
    if mapsize < 2 or mapsize & (mapsize - 1):
        raise ValueError(f"plasma_fractal: mapsize must be a power of two >= 2, got {mapsize}")
    maparray = np.zeros((n, mapsize, mapsize), dtype=np.float64)
    stepsize = mapsize
    wibble = 100.0
    while stepsize >= 2:
        half = stepsize // 2
        corner = maparray[:, 0:mapsize:stepsize, 0:mapsize:stepsize]
        square = corner + np.roll(corner, -1, axis=1)
        square = square + np.roll(square, -1, axis=2)
        maparray[:, half:mapsize:stepsize, half:mapsize:stepsize] = square / 4 + wibble * (
            rng.uniform(-wibble, wibble, square.shape)
        )
        dr = maparray[:, half:mapsize:stepsize, half:mapsize:stepsize]
        ul = maparray[:, 0:mapsize:stepsize, 0:mapsize:stepsize]
        lt = dr + np.roll(dr, 1, axis=1) + ul + np.roll(ul, -1, axis=2)
        maparray[:, 0:mapsize:stepsize, half:mapsize:stepsize] = lt / 4 + wibble * (
            rng.uniform(-wibble, wibble, lt.shape)
        )
        tt = dr + np.roll(dr, 1, axis=2) + ul + np.roll(ul, -1, axis=1)
        maparray[:, half:mapsize:stepsize, 0:mapsize:stepsize] = tt / 4 + wibble * (
            rng.uniform(-wibble, wibble, tt.shape)
        )
        stepsize //= 2
        wibble /= wibbledecay
    maparray -= maparray.min(axis=(1, 2), keepdims=True)
    maparray /= np.maximum(maparray.max(axis=(1, 2), keepdims=True), 1e-12)
    return maparray.astype(np.float32)


def rgb_to_hsv(rgb: Array) -> Array:
    """Vectorised RGB -> HSV on the last axis (skimage.color.rgb2hsv conventions)."""
    v = rgb.max(axis=-1)
    delta = v - rgb.min(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.where(v > 0, delta / np.where(v > 0, v, 1), 0)
        safe = np.where(delta > 0, delta, 1)
        r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
        hr = (g - b) / safe
        hg = 2.0 + (b - r) / safe
        hb = 4.0 + (r - g) / safe
    h = np.where(rgb[..., 0] == v, hr, np.where(rgb[..., 1] == v, hg, hb))
    h = np.where(delta > 0, (h / 6.0) % 1.0, 0.0)
    return np.stack([h, s, v], axis=-1).astype(np.float32)


def hsv_to_rgb(hsv: Array) -> Array:
    """Vectorised HSV -> RGB on the last axis (skimage.color.hsv2rgb conventions)."""
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    hi = np.floor(h * 6)
    f = h * 6 - hi
    p = v * (1 - s)
    q = v * (1 - f * s)
    t = v * (1 - (1 - f) * s)
    hi = hi.astype(np.int64) % 6
    r = np.choose(hi, [v, q, p, p, t, v])
    g = np.choose(hi, [t, v, v, q, p, p])
    b = np.choose(hi, [p, p, t, v, v, q])
    return np.stack([r, g, b], axis=-1).astype(np.float32)


def luminance(x: Array) -> Array:
    """Grey level (N, H, W, 1): ITU-R 601 weights for RGB, the mean otherwise."""
    if x.shape[-1] == 3:
        return x @ np.array([0.299, 0.587, 0.114], dtype=np.float32)[:, None]
    return x.mean(axis=-1, keepdims=True)


@functools.lru_cache(maxsize=64)
def pil_resize_matrix(n_in: int, n_out: int, resample: int) -> Array:
    """(n_out, n_in) weights of Pillow's 1-D resampling filter ``resample``, read off Pillow
    itself by resizing a float identity image (so the matrix is Pillow's, not a copy)."""
    eye = Image.fromarray(np.eye(n_in, dtype=np.float32))
    out = np.asarray(eye.resize((n_out, n_in), resample=resample), dtype=np.float64)
    return out.T.copy()


def pil_resize(x: Array, height: int, width: int, resample: int) -> Array:
    """Resize a float batch (N, H, W, C) like Pillow's separable ``resize`` (no rounding)."""
    wy = pil_resize_matrix(x.shape[1], height, resample).astype(np.float32)
    wx = pil_resize_matrix(x.shape[2], width, resample).astype(np.float32)
    out = np.einsum("oh,nhwc->nowc", wy, x, optimize=True)
    return np.einsum("pw,nowc->nopc", wx, out, optimize=True)


@functools.lru_cache(maxsize=16)
def frost_textures(height: int, width: int, count: int = 5) -> Array:
    """``count`` procedural frost textures (count, 4H, 4W) in [0, 1], fixed seeds.

    Offline substitute for the -C benchmarks' frost photographs (docs/shifts.md, reading R2): a
    smooth multi-octave noise base plus ridged noise (thin bright veins like ice crystals). The
    textures are four times the image side, so an image-sized crop shows part of the pattern,
    as a crop of the reference photographs does. Seeds are constants, like fixed files.
    """
    th, tw = 4 * height, 4 * width
    side = max(th, tw)
    fy = sp_fft.fftfreq(th)[:, None]
    fx = sp_fft.rfftfreq(tw)[None, :]
    f2 = fy**2 + fx**2
    textures = []
    for k in range(count):
        g = np.random.default_rng(20190101 + k)
        base = np.zeros((th, tw))
        ridge = np.zeros((th, tw))
        sigma, amp = side / 8, 1.0
        while sigma >= 0.5:
            # periodic Gaussian smoothing of white noise in the Fourier domain
            transfer = np.exp(-2 * np.pi**2 * sigma**2 * f2)
            for field in (base, ridge):
                noise = sp_fft.rfft2(g.standard_normal((th, tw)))
                field += amp * _unit(sp_fft.irfft2(noise * transfer, s=(th, tw)))
            sigma, amp = sigma / 2, amp * 0.6
        base = _unit(base)
        veins = (1.0 - np.abs(2.0 * _unit(ridge) - 1.0)) ** 6
        tex = 0.6 * base + 0.6 * veins
        tex = 0.1 + 0.85 * _unit(tex)
        textures.append(tex)
    return np.stack(textures).astype(np.float32)


def _unit(a: Array) -> Array:
    lo, hi = a.min(), a.max()
    return (a - lo) / (hi - lo) if hi > lo else np.zeros_like(a)
