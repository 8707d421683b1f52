"""Natural-shift sets (laf spec 8, syp spec 6.4), released -C archives (laf spec 5.1) and the
suite builders that the workflow scripts call."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.seeds import rng
from labelfree.shifts import released
from labelfree.shifts.corruptions import corrupt
from labelfree.shifts.figures import example_grid
from labelfree.shifts.natural import NATURAL_SHIFTS, natural_shift
from labelfree.shifts.released import (
    MNIST_C_NAMES,
    ReleasedArchiveError,
    available,
    layout,
    load_released,
)
from labelfree.shifts.suite import corruption_sets, natural_sets
from labelfree.store import save_figure

from .conftest import SIZES

# ---------------------------------------------------------------------------------------------
# natural shifts
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("name", sorted(NATURAL_SHIFTS))
def test_natural_contract(batches, size, name):
    x = batches[size]
    a = natural_shift(x, name, 3)
    assert a.shape == x.shape and a.dtype == np.uint8
    np.testing.assert_array_equal(a, natural_shift(x, name, 3))
    assert not np.array_equal(a, natural_shift(x, name, 4))
    assert not np.array_equal(a, x)


def test_thick_and_thin_change_ink(batches):
    x = batches["8x8x1"].astype(float)
    assert natural_shift(batches["8x8x1"], "natural-thick", 0).mean() > x.mean() * 1.2
    assert natural_shift(batches["8x8x1"], "natural-thin", 0).mean() < x.mean() * 0.8


def test_downup_removes_detail(batches):
    x = batches["28x28x1"]
    y = natural_shift(x, "natural-downup", 0).astype(float)

    def grad(a):
        return np.abs(np.diff(a.astype(float), axis=2)).mean()

    assert grad(y) < grad(x)


def test_natural_unknown_name():
    with pytest.raises(ValueError, match="unknown natural shift 'natural-foo'"):
        natural_shift(np.zeros((1, 8, 8, 1), np.uint8), "natural-foo", 0)


# ---------------------------------------------------------------------------------------------
# released archives in the real layouts
# ---------------------------------------------------------------------------------------------


def make_cifar_c(root, corruptions, n=4):
    root.mkdir(parents=True, exist_ok=True)
    g = np.random.default_rng(0)
    labels = np.tile(np.arange(n) % 10, 5).astype(np.uint8)
    np.save(root / "labels.npy", labels)
    for c in corruptions:
        x = np.concatenate([np.full((n, 32, 32, 3), 10 * s, np.uint8) for s in range(1, 6)])
        x[:, 0, 0, 0] = g.integers(0, 256, len(x))
        np.save(root / f"{c}.npy", x)
    return labels[:n].astype(np.int64)


def make_mnist_c(root, corruptions, n=4, as_float=False):
    for c in corruptions:
        d = root / c
        d.mkdir(parents=True)
        x = np.full((n, 28, 28, 1), 77, np.uint8)
        np.save(d / "test_images.npy", x.astype(np.float32) if as_float else x)
        np.save(d / "test_labels.npy", np.arange(n) % 10)
    (root / "identity").mkdir()
    return (np.arange(n) % 10).astype(np.int64)


def test_cifar_c_layout(tmp_path):
    y = make_cifar_c(tmp_path / "CIFAR-10-C", ["fog", "snow"])
    root = tmp_path / "CIFAR-10-C"
    assert layout(root) == "cifar_c"
    assert ("fog", 3) in available(root) and ("frost", 3) not in available(root)
    x3, y3 = load_released(root, "fog", 3)
    assert x3.shape == (4, 32, 32, 3) and x3.dtype == np.uint8 and (x3[:, 1:] == 30).all()
    np.testing.assert_array_equal(y3, y)
    with pytest.raises(ReleasedArchiveError, match=r"lacks \['frost-2'\]"):
        load_released(root, "frost", 2)


def test_mnist_c_layout_single_level_and_missing(tmp_path):
    root = tmp_path / "mnist_c"
    make_mnist_c(root, ["fog", "brightness"], as_float=True)
    assert layout(root) == "mnist_c"
    assert available(root, single_level_severity=2) == {("fog", 2), ("brightness", 2)}
    x, y = load_released(root, "fog", 2, single_level_severity=2)
    assert x.dtype == np.uint8 and x.shape == (4, 28, 28, 1) and (x == 77).all()
    with pytest.raises(ReleasedArchiveError, match="MNIST-C has no") as err:
        load_released(root, "gaussian_noise", 3)
    assert "gaussian_noise" in str(err.value) and "released_fallback" in str(err.value)
    assert "snow" not in MNIST_C_NAMES


def test_bad_archives(tmp_path):
    with pytest.raises(ReleasedArchiveError, match="directory not found"):
        layout(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReleasedArchiveError, match="not a released -C archive"):
        layout(tmp_path / "empty")
    root = tmp_path / "broken"
    make_cifar_c(root, ["fog"])
    (root / "fog.npy").write_bytes(b"not numpy")
    with pytest.raises(ReleasedArchiveError, match="fog.npy: not a readable"):
        load_released(root, "fog", 1)


# ---------------------------------------------------------------------------------------------
# suite builders (what the workflow scripts call)
# ---------------------------------------------------------------------------------------------


def test_corruption_sets_seeding(batches):
    x = batches["8x8x1"][:10]
    y = np.arange(10) % 10
    a = corruption_sets(x, y, "gaussian_noise", [1, 3], seed=0, dataset="digits")
    b = corruption_sets(x, y, "gaussian_noise", [3], seed=0, dataset="digits")
    np.testing.assert_array_equal(a[3].x, b[3].x)  # a set does not depend on the others
    c = corruption_sets(x, y, "gaussian_noise", [3], seed=0, dataset="other")
    d = corruption_sets(x, y, "gaussian_noise", [3], seed=1, dataset="digits")
    assert not np.array_equal(a[3].x, c[3].x) and not np.array_equal(a[3].x, d[3].x)
    assert not np.array_equal(a[1].x, a[3].x)
    np.testing.assert_array_equal(a[1].y, y)
    assert a[1].source == "generated"


def test_corruption_sets_released_and_fallback(tmp_path, batches):
    root = tmp_path / "c"
    y = make_cifar_c(root, ["fog"])
    x = batches["32x32x3"][:4]
    sets = corruption_sets(x, y, "fog", [1, 5], seed=0, dataset="cifar10", released=root)
    assert sets[5].source == str(root) and (sets[5].x[:, 1:] == 50).all()
    with pytest.raises(ReleasedArchiveError, match=r"lacks \['frost-1', 'frost-2'\]"):
        corruption_sets(x, y, "frost", [1, 2], seed=0, dataset="cifar10", released=root)
    gen = corruption_sets(
        x, y, "frost", [2], seed=0, dataset="cifar10", released=root, fallback="generate"
    )
    np.testing.assert_array_equal(
        gen[2].x, corruption_sets(x, y, "frost", [2], seed=0, dataset="cifar10")[2].x
    )
    mroot = tmp_path / "m"
    make_mnist_c(mroot, ["fog"])
    xm = np.zeros((4, 28, 28, 1), np.uint8)
    mixed = corruption_sets(
        xm, y, "fog", [2, 3], seed=0, dataset="mnist", released=mroot, fallback="generate"
    )
    assert mixed[3].source == str(mroot) and mixed[2].source == "generated"
    np.testing.assert_array_equal(mixed[2].x, corrupt(xm, "fog", 2, _rng(0, "mnist", "fog", 2)))


def _rng(*names):
    return rng(*names)


def test_natural_sets(batches):
    x = batches["8x8x1"][:6]
    y = np.arange(6)
    sets = natural_sets(x, y, ["natural-thick", "natural-shear"], seed=0, dataset="digits")
    assert set(sets) == {"natural-thick", "natural-shear"}
    again = natural_sets(x, y, ["natural-shear"], seed=0, dataset="digits")
    np.testing.assert_array_equal(sets["natural-shear"].x, again["natural-shear"].x)
    np.testing.assert_array_equal(sets["natural-thick"].y, y)


def test_release_name_reads_through_data_layer(tmp_path, monkeypatch):
    """`shifts.released.<dataset>: mnist_c` reads the data layer's verified download."""
    monkeypatch.setattr(released, "DATA_ROOT", str(tmp_path))
    make_mnist_c(tmp_path / "mnist_c" / "mnist_c", ["fog"])
    assert released.layout("mnist_c") == "mnist_c"
    assert ("fog", 3) in released.available("mnist_c") and ("snow", 3) not in released.available(
        "mnist_c"
    )
    x, y = load_released("mnist_c", "fog", 3)
    assert x.shape == (4, 28, 28, 1) and (x == 77).all() and y.dtype == np.int64
    with pytest.raises(ReleasedArchiveError, match="MNIST-C has no"):
        load_released("mnist_c", "snow", 3)


def test_example_grid_figure(batches, tmp_path):
    x = batches["32x32x3"][:3]
    corrupted = {c: {s: corrupt(x, c, s, 0) for s in (1, 5)} for c in ("fog", "pixelate")}
    natural = {"natural-thin": natural_shift(x, "natural-thin", 0)}
    fig = example_grid(x, corrupted, natural, [1, 5], index=2)
    assert len([ax for ax in fig.axes if ax.images]) == 2 * 3 + 2
    save_figure(fig, tmp_path / "ex.png")
    assert (tmp_path / "ex.png").stat().st_size > 0 and (tmp_path / "ex.pdf").exists()
