"""Corruptions of the -C benchmarks (laf spec 5.2): contract, determinism, monotone strength,
and known answers."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from labelfree.shifts import ops
from labelfree.shifts.corruptions import (
    RANDOM_CORRUPTIONS,
    Context,
    _swap_pass,
    corrupt,
    defocus_kernel,
)
from labelfree.shifts.corruptions import brightness as bright
from labelfree.shifts.params import CORRUPTIONS, resolve_table, scale_factor, table_entry

from .conftest import SIZES

# ---------------------------------------------------------------------------------------------
# contract: shape, dtype, range, determinism
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_contract_and_determinism(batches, size, corruption):
    x = batches[size][:12]
    for severity in (1, 2, 3, 4, 5):
        a = corrupt(x, corruption, severity, 11)
        assert a.shape == x.shape and a.dtype == np.uint8
        b = corrupt(x, corruption, severity, np.random.default_rng(11))
        np.testing.assert_array_equal(a, b)  # an int seed and its Generator agree
        c = corrupt(x, corruption, severity, 12)
        if corruption in RANDOM_CORRUPTIONS:
            assert not np.array_equal(a, c), f"{corruption}-{severity} ignores its seed"
        else:
            np.testing.assert_array_equal(a, c)  # deterministic corruptions ignore the seed
    np.testing.assert_array_equal(x, batches[size][:12])  # input untouched


@pytest.mark.parametrize(
    "shape,params",
    [
        ((3, 8, 8, 3), "cifar"),
        ((3, 28, 28, 1), "cifar"),
        ((3, 9, 13, 2), "mnist"),
        ((2, 64, 48, 3), "auto"),
    ],
)
def test_any_size_and_channel_count(shape, params):
    """Any size and channel count gives a uint8 batch of the input's shape that the corruption
    changed, differently at severities 1 and 5. Exception: on 8x8 images with the cifar table
    (spatial scale 8/32) the defocus disks (radius <= 1.5 px at 32x32) shrink below one pixel,
    and the kernel is the identity."""
    x = np.random.default_rng(0).integers(0, 256, size=shape, dtype=np.uint8)
    for corruption in CORRUPTIONS:
        out = {}
        for severity in (1, 5):
            y = corrupt(x, corruption, severity, 0, params=params)
            assert y.shape == x.shape and y.dtype == np.uint8
            out[severity] = y
        if corruption == "defocus_blur" and shape[1] == 8:
            np.testing.assert_array_equal(out[5], x)
            continue
        assert not np.array_equal(out[5], x), f"{corruption}: severity 5 left {shape} unchanged"
        assert not np.array_equal(out[1], out[5]), f"{corruption}: severities 1 and 5 agree"


def test_empty_batch_and_bad_input():
    x = np.zeros((0, 8, 8, 1), np.uint8)
    assert corrupt(x, "fog", 3, 0).shape == x.shape
    with pytest.raises(ValueError, match="uint8"):
        corrupt(np.zeros((1, 8, 8, 1), np.float32), "fog", 3, 0)
    with pytest.raises(ValueError, match="unknown corruption 'smoke'"):
        corrupt(np.zeros((1, 8, 8, 1), np.uint8), "smoke", 3, 0)
    with pytest.raises(ValueError, match="severity"):
        corrupt(np.zeros((1, 8, 8, 1), np.uint8), "fog", 6, 0)
    with pytest.raises(ValueError, match="1 or 3 channels"):
        corrupt(np.zeros((1, 8, 8, 2), np.uint8), "fog", 1, 0)


def test_auto_table_and_scale():
    assert resolve_table("auto", 1) == "mnist" and resolve_table("auto", 3) == "cifar"
    assert scale_factor("mnist", 28, 28) == 1.0 and scale_factor("cifar", 32, 32) == 1.0
    assert scale_factor("mnist", 8, 8) == pytest.approx(8 / 28)
    assert scale_factor("cifar", 224, 224) == pytest.approx(7.0)


# ---------------------------------------------------------------------------------------------
# monotone strength in severity
# ---------------------------------------------------------------------------------------------

#: (corruption, table) pairs whose spec parameters are not monotone, with the reason.
NOT_MONOTONE = {
    ("elastic_transform", "mnist"): "spec 5.2: severities 1-2 use a far larger displacement scale",
    ("elastic_transform", "cifar"): "affine jitter falls .08 -> .03 while the displacement grows",
    (
        "glass_blur",
        "cifar",
    ): "sigma falls .4 -> .25 from severity 3 to 4; more blur also smooths swaps",
}
#: Below the reference size the glass swap distance saturates at 1 px and the mnist
#: iteration counts (2, 1, 3, 2, 2) decide, which are not monotone.
NOT_MONOTONE_SMALL = {("glass_blur", "mnist")}


def strength(x: np.ndarray, y: np.ndarray, corruption: str) -> float:
    """Mean absolute deviation from the clean images; for frost, a blend whose image weight
    falls while the texture weight rises, the loss of correlation with the clean image."""
    a = x.reshape(len(x), -1).astype(np.float64)
    b = y.reshape(len(y), -1).astype(np.float64)
    if corruption != "frost":
        return float(np.abs(b - a).mean())
    a -= a.mean(1, keepdims=True)
    b -= b.mean(1, keepdims=True)
    r = (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1) + 1e-12)
    return float(1 - r.mean())


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_monotone_in_severity(batches, size, corruption):
    x = batches[size]
    table = resolve_table("auto", x.shape[3])
    s = [strength(x, corrupt(x, corruption, k, 5), corruption) for k in (1, 2, 3, 4, 5)]
    assert s[4] > s[0] or (corruption, table) in NOT_MONOTONE
    small = scale_factor(table, x.shape[1], x.shape[2]) < 1
    if (corruption, table) in NOT_MONOTONE or (small and (corruption, table) in NOT_MONOTONE_SMALL):
        pytest.skip(f"documented exception: {NOT_MONOTONE.get((corruption, table), 'small image')}")
    for k in range(4):  # non-decreasing, 2 % slack for sampling noise between equal-ish levels
        assert s[k + 1] >= s[k] * 0.98, f"{corruption} {size}: strengths {np.round(s, 3)}"


def test_mnist_elastic_exception_is_real(batches):
    """spec 5.2: MNIST elastic severities 1-2 displace far more than 3-5."""
    x = batches["28x28x1"]
    s = [
        strength(x, corrupt(x, "elastic_transform", k, 5), "elastic_transform")
        for k in (1, 2, 3, 4, 5)
    ]
    assert min(s[0], s[1]) > max(s[2], s[3])
    assert s[2] <= s[3] <= s[4]


# ---------------------------------------------------------------------------------------------
# known answers (laf spec 5.2)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("channels,table", [(1, "mnist"), (3, "cifar")])
def test_brightness_on_constant_image(channels, table):
    """spec 5.2: brightness adds c (mnist .1 ... .5; cifar .05 ... .3 on the HSV value), clips."""
    x = np.full((2, 8, 8, channels), 100, np.uint8)
    for k in range(1, 6):
        c = table_entry(table, "brightness", k)
        expected = int(np.clip(np.float32(100) / 255 + np.float32(c), 0, 1) * 255)
        y = corrupt(x, "brightness", k, 0)
        assert abs(int(y.min()) - expected) <= 1 and int(y.max()) == int(y.min())
    white = np.full((1, 4, 4, channels), 255, np.uint8)
    np.testing.assert_array_equal(corrupt(white, "brightness", 5, 0), white)  # clipped at 1


def test_contrast_factor_semantics():
    """spec 5.2: contrast scales deviations from the per-image, per-channel mean by c."""
    x = np.zeros((1, 4, 4, 1), np.uint8)
    x[0, :2] = 200  # mean 100
    for k, c in enumerate([0.4, 0.3, 0.2, 0.1, 0.05], start=1):
        y = corrupt(x, "contrast", k, 0).astype(int)
        hi = int(np.float32(100 / 255 + c * 100 / 255) * 255)
        assert abs(y[0, 0, 0, 0] - hi) <= 1 and abs(y[0, 3, 0, 0] - (200 - hi)) <= 1
    const = np.full((2, 6, 6, 3), 77, np.uint8)
    np.testing.assert_array_equal(corrupt(const, "contrast", 5, 0), const)  # nothing to scale


def test_noise_statistics():
    """spec 5.2: Gaussian sigma, Poisson rate and salt-and-pepper amount (cifar table)."""
    x = np.full((40, 32, 32, 3), 128, np.uint8)
    d = corrupt(x, "gaussian_noise", 5, 0).astype(float) - 128
    assert d.std() / 255 == pytest.approx(0.10, rel=0.03)
    y = corrupt(x, "shot_noise", 5, 0).astype(float) / 255
    assert y.var() == pytest.approx((128 / 255) / 50, rel=0.05) and y.mean() == pytest.approx(
        0.5, abs=0.01
    )
    z = corrupt(x, "impulse_noise", 5, 0)
    changed = z != 128
    assert changed.mean() == pytest.approx(0.07, rel=0.05)
    assert set(np.unique(z[changed])) == {0, 255}


def test_defocus_kernel_rules():
    k = defocus_kernel(3, 0.1, 1.0)  # reference kernel at s = 1: aliased disk of radius 3
    assert k.sum() == pytest.approx(1.0) and np.allclose(k, k.T) and np.allclose(k, k[::-1])
    assert (k > 1e-3).sum() == 29  # lattice points with x^2 + y^2 <= 9
    small = defocus_kernel(3, 0.1, 8 / 28)  # area-integrated onto the coarser grid
    assert small.sum() == pytest.approx(1.0) and small.shape[0] < k.shape[0]
    spread = [((defocus_kernel(r, a, 8 / 28) > 1e-3).sum()) for r, a in table_mnist("defocus_blur")]
    assert spread == sorted(spread)


def table_mnist(corruption):
    return [table_entry("mnist", corruption, k) for k in range(1, 6)]


def test_motion_blur_fft_equals_tap_sum():
    """The FFT line-kernel blur equals the explicit sum over taps sampled bilinearly."""
    g = np.random.default_rng(0)
    x = g.random((5, 12, 10, 2)).astype(np.float32)
    angles = g.uniform(-45, 45, 5)
    radius, sigma = 4.0, 2.0
    taps = np.arange(int(2 * radius) + 1)
    w = np.exp(-(taps**2) / (2 * sigma**2))
    w /= w.sum()
    ref = np.zeros_like(x)
    rows = np.arange(12, dtype=np.float32)[None, :, None]
    cols = np.arange(10, dtype=np.float32)[None, None, :]
    t = np.deg2rad(angles)
    for i in taps:
        dy, dx = (i * np.sin(t)).astype(np.float32), (i * np.cos(t)).astype(np.float32)
        keep = ((np.abs(dy) < 12) & (np.abs(dx) < 10))[:, None, None, None]
        ref += w[i] * keep * ops.bilinear(x, rows + dy[:, None, None], cols + dx[:, None, None])
    np.testing.assert_allclose(ops.motion_blur(x, radius, sigma, angles), ref, atol=1e-5)


def test_glass_swaps_are_permutations():
    x = np.random.default_rng(1).random((6, 9, 11, 3)).astype(np.float32)
    y = _swap_pass(x, 2, 0.5, np.random.default_rng(2))
    assert not np.array_equal(x, y)
    for a, b in zip(x, y, strict=True):  # every image keeps its multiset of pixels
        np.testing.assert_array_equal(
            np.sort(a.reshape(-1, 3), axis=0), np.sort(b.reshape(-1, 3), axis=0)
        )


def test_pixelate_matches_pillow_per_image():
    """Vectorised pixelate equals Pillow's BOX resize pair image by image (within rounding)."""
    x = np.random.default_rng(3).integers(0, 256, (4, 32, 32, 3), dtype=np.uint8)
    for k in (1, 5):
        c = table_entry("cifar", "pixelate", k)
        y = corrupt(x, "pixelate", k, 0)
        for img, got in zip(x, y, strict=True):
            p = Image.fromarray(img).resize((int(32 * c),) * 2, Image.Resampling.BOX)
            ref = np.asarray(p.resize((32, 32), Image.Resampling.BOX))
            assert np.abs(ref.astype(int) - got).max() <= 1


def test_jpeg_matches_pillow():
    x = np.random.default_rng(4).integers(0, 256, (3, 28, 28, 1), dtype=np.uint8)
    y = corrupt(x, "jpeg_compression", 5, 0)  # quality 7 (spec 5.2, mnist)
    buf = io.BytesIO()
    Image.fromarray(x[1, ..., 0]).save(buf, format="JPEG", quality=7)
    np.testing.assert_array_equal(y[1, ..., 0], np.asarray(Image.open(buf)))


def test_fog_and_frost_fields():
    f = ops.plasma_fractal(3, 16, 2.0, np.random.default_rng(0))
    assert f.shape == (3, 16, 16) and f.min() == 0.0 and f.max() == pytest.approx(1.0)
    t = ops.frost_textures(8, 8)
    assert t.shape == (5, 32, 32) and t.min() >= 0.0 and t.max() <= 1.0
    np.testing.assert_array_equal(t, ops.frost_textures.__wrapped__(8, 8))  # fixed, like files


def test_zoom_blur_identity_at_unit_zoom():
    x = np.random.default_rng(5).random((2, 8, 8, 1)).astype(np.float32)
    np.testing.assert_allclose(ops.centre_zoom(x, 1.0), x, atol=1e-6)


def test_filter2d_fft_path_equals_direct_correlation():
    # deferred: scipy.ndimage takes 1.3 s to import; this test only
    from scipy import ndimage

    g = np.random.default_rng(6)
    x = g.random((3, 20, 17, 2)).astype(np.float32)
    k = g.random((13, 13)).astype(np.float32)  # > 121 taps: FFT path
    direct = ndimage.correlate(x, k[None, :, :, None], mode="mirror")
    np.testing.assert_allclose(ops.filter2d(x, k), direct, atol=1e-4)


@pytest.mark.parametrize("mode", ["nearest", "reflect", "mirror"])
def test_centre_zoom_matrix_path_equals_gather_path(mode):
    """Images of 16-64 px zoom with dense interpolation matrices; others with gathers."""
    g = np.random.default_rng(7)
    x = g.random((3, 20, 30, 2)).astype(np.float32)
    for zoom in (0.8, 1.0, 1.13):
        ys = 9.5 + (np.arange(20) - 9.5) / zoom
        xs = 14.5 + (np.arange(30) - 14.5) / zoom
        gathered = ops.resample_axis(ops.resample_axis(x, ys, 1, mode), xs, 2, mode)
        np.testing.assert_allclose(ops.centre_zoom(x, zoom, mode), gathered, atol=1e-5)


def test_bilinear_chunking_and_modes():
    g = np.random.default_rng(8)
    x = g.random((10, 7, 9, 3)).astype(np.float32)
    ys = g.uniform(-3, 10, (10, 7, 9)).astype(np.float32)
    xs = g.uniform(-3, 12, (10, 7, 9)).astype(np.float32)
    for mode in ("nearest", "reflect", "mirror", "constant"):
        whole = ops.bilinear(x, ys, xs, mode=mode, chunk=100)
        np.testing.assert_array_equal(ops.bilinear(x, ys, xs, mode=mode, chunk=3), whole)
    # integer coordinates inside the image read the pixels exactly
    yi, xi = np.meshgrid(np.arange(7), np.arange(9), indexing="ij")
    np.testing.assert_array_equal(ops.bilinear(x, yi, xi), x)
    # scipy's map_coordinates (order 1) agrees inside the image
    # deferred: scipy.ndimage takes 1.3 s to import; this test only
    from scipy import ndimage

    inside_y = g.uniform(0, 6, (7, 9)).astype(np.float32)
    inside_x = g.uniform(0, 8, (7, 9)).astype(np.float32)
    ref = ndimage.map_coordinates(x[0, ..., 1], [inside_y, inside_x], order=1)
    np.testing.assert_allclose(ops.bilinear(x[:1], inside_y, inside_x)[0, ..., 1], ref, atol=1e-5)


def test_brightness_equals_hsv_round_trip():
    """spec 5.2 (cifar): brightness adds c to the HSV value; the direct scaling is the same."""
    g = np.random.default_rng(9)
    x = g.random((20, 8, 8, 3)).astype(np.float32)
    x[0] = 0.0  # black pixels become grey V'
    x[1, ..., 0] = x[1, ..., 1]  # ties between channels
    for c in (0.05, 0.3):
        hsv = ops.rgb_to_hsv(x)
        hsv[..., 2] = np.clip(hsv[..., 2] + c, 0, 1)
        ref = ops.hsv_to_rgb(hsv)
        got = bright(x, c, Context("cifar", 1.0, g))
        np.testing.assert_allclose(got, ref, atol=1e-5)
