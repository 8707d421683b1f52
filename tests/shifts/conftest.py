"""Small image batches for the shifts tests: 8x8x1 digits, 28x28x1 and 32x32x3 renderings."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage
from sklearn.datasets import load_digits


def _digits(n: int) -> np.ndarray:
    return load_digits().images[:n].astype(np.float64) / 16.0  # (n, 8, 8) in [0, 1]


def make_batch(size: str, n: int = 48) -> np.ndarray:
    """uint8 NHWC test images: ``8x8x1``, ``28x28x1`` or ``32x32x3`` (coloured digits with
    texture, so that blur and warps have edges to act on)."""
    d = _digits(n)
    if size == "8x8x1":
        return np.round(d * 255).astype(np.uint8)[..., None]
    if size == "28x28x1":
        up = np.clip(ndimage.zoom(d, (1, 3.5, 3.5), order=1), 0, 1)
        return np.round(up * 255).astype(np.uint8)[..., None]
    if size == "32x32x3":
        g = np.random.default_rng(123)
        up = np.clip(ndimage.zoom(d, (1, 4, 4), order=1), 0, 1)[..., None]
        fg = g.uniform(0.5, 1.0, size=(n, 1, 1, 3))
        bg = g.uniform(0.0, 0.4, size=(n, 1, 1, 3))
        texture = ndimage.gaussian_filter(g.uniform(-0.15, 0.15, size=(n, 32, 32, 3)), (0, 1, 1, 0))
        img = np.clip(bg + (fg - bg) * up + texture, 0, 1)
        return np.round(img * 255).astype(np.uint8)
    raise ValueError(size)


SIZES = ("8x8x1", "28x28x1", "32x32x3")


@pytest.fixture(scope="session")
def batches() -> dict[str, np.ndarray]:
    return {s: make_batch(s) for s in SIZES}
