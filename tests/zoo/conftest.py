"""Fixtures of the zoo tests: a small slice of the embedded digits, as uint8 NHWC."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def digits_small() -> tuple[np.ndarray, np.ndarray]:
    """300 digits images (uint8 (N, 8, 8, 1)) and labels, deterministic."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = np.round(d.images[:300] * 255 / 16).astype(np.uint8)[..., None]
    return x, d.target[:300].astype(np.int64)
