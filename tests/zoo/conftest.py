"""Fixtures of the zoo tests: a small slice of the embedded digits, as uint8 NHWC."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture(scope="session")
def digits_small() -> tuple[np.ndarray, np.ndarray]:
    """300 digits images (uint8 (N, 8, 8, 1)) and labels, deterministic."""
    # deferred: scikit-learn takes seconds to import; the fixture's users only
    from sklearn.datasets import load_digits

    d = load_digits()
    x = np.round(d.images[:300] * 255 / 16).astype(np.uint8)[..., None]
    return x, d.target[:300].astype(np.int64)


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """Tiny models run fastest on one thread; on a shared CPU, more threads only spin."""
    # deferred: torch takes seconds to import; the fixture's users only
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
