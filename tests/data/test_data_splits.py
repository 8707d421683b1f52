"""Seeded stratified splits (labelfree.data.splits) and the digits source (labelfree.data.digits)."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.data.base import DataError
from labelfree.data.digits import build_digits, load_digits_arrays
from labelfree.data.splits import split_sizes, stratified_partition, subsample

FRACS3 = {"train": 0.5, "source": 0.25, "holdout": 0.25}


def _digits(name="digits", seed=0, splits=None, **options):
    cfg = {"source": "digits", "splits": splits or {"train": 0.4, "test": 0.6}, "options": options}
    return build_digits(name, cfg, seed)[0]


def test_split_sizes_exact_largest_remainder():
    assert split_sizes(1797, {"train": 0.4, "test": 0.6}) == {"train": 719, "test": 1078}
    assert sum(split_sizes(1797, FRACS3).values()) == 1797
    assert split_sizes(10, {"a": 0.25}) == {"a": 2}  # rest dropped
    with pytest.raises(DataError, match="sum to at most 1"):
        split_sizes(10, {"a": 0.7, "b": 0.7})


def test_partition_disjoint_stratified_deterministic():
    y = np.repeat(np.arange(10), [180, 170, 160, 150, 140, 130, 120, 110, 100, 90])
    parts = stratified_partition(y, FRACS3, np.random.default_rng(1))
    allidx = np.concatenate(list(parts.values()))
    assert len(allidx) == len(np.unique(allidx)) == len(y)  # disjoint and covering
    for name, frac in FRACS3.items():
        counts = np.bincount(y[parts[name]], minlength=10)
        expected = np.bincount(y) * frac
        assert np.all(np.abs(counts - expected) <= 1), (name, counts, expected)
    again = stratified_partition(y, FRACS3, np.random.default_rng(1))
    other = stratified_partition(y, FRACS3, np.random.default_rng(2))
    assert all(np.array_equal(parts[k], again[k]) for k in parts)
    assert not np.array_equal(parts["train"], other["train"])


def test_partition_without_labels_and_subsample():
    parts = stratified_partition(None, {"a": 0.3, "b": 0.3}, np.random.default_rng(0), n=100)
    assert len(parts["a"]) == len(parts["b"]) == 30
    assert not set(parts["a"]) & set(parts["b"])
    y = np.arange(100) % 4
    keep = subsample(y, 0.2, np.random.default_rng(0))
    assert len(keep) == 20 and np.all(np.bincount(y[keep]) == 5)
    assert np.array_equal(subsample(y, 1.0, np.random.default_rng(0)), np.arange(100))


def test_digits_pixel_mapping():
    """0..16 -> round(v * 255 / 16): 0 -> 0, 16 -> 255, 17 evenly spaced levels."""
    # deferred: scikit-learn takes seconds to import; this test only
    from sklearn.datasets import load_digits

    x, y = load_digits_arrays()
    raw = load_digits().images
    assert x.shape == (1797, 8, 8, 1) and x.dtype == np.uint8 and y.dtype == np.int64
    assert np.array_equal(x[..., 0], np.rint(raw * 255 / 16).astype(np.uint8))
    assert x.max() == 255 and x.min() == 0
    assert len(np.unique(x)) <= 17


def test_digits_splits_sizes_disjoint_deterministic():
    s = _digits()
    assert {k: len(v) for k, v in s.items()} == {"train": 719, "test": 1078}
    again = _digits()
    assert np.array_equal(s["train"].x, again["train"].x)
    assert np.array_equal(s["test"].y, again["test"].y)
    counts = np.bincount(s["train"].y, minlength=10)
    assert counts.min() >= 70 and counts.max() <= 74  # ~0.4 x ~180 per class


def test_digits_split_is_pure_function_of_seed_and_name():
    a, b = _digits(name="digits"), _digits(name="other")
    c = _digits(name="digits", seed=1)
    assert not np.array_equal(a["train"].x, b["train"].x)
    assert np.array_equal(a["train"].x, _digits(name="digits")["train"].x)
    assert not np.array_equal(a["train"].x, c["train"].x)
    three = _digits(splits=FRACS3)
    assert {k: len(v) for k, v in three.items()} == {"train": 899, "source": 449, "holdout": 449}


def test_digits_partition_indices_disjoint():
    """The union of the splits is the whole pool, each image exactly once (as a multiset)."""
    x_all, y_all = load_digits_arrays()
    s = _digits(splits=FRACS3)
    xs = np.concatenate([v.x for v in s.values()]).reshape(1797, -1)
    key = lambda a: np.lexsort(a.T[::-1])  # noqa: E731
    assert np.array_equal(xs[key(xs)], x_all.reshape(1797, -1)[key(x_all.reshape(1797, -1))])
    ys = np.concatenate([v.y for v in s.values()])
    assert np.array_equal(np.bincount(ys), np.bincount(y_all))


def test_digits_options_upscale_channels_binary():
    # deferred: scipy.ndimage takes 1.3 s to import; this test only
    from scipy.ndimage import zoom

    base, up = _digits(), _digits(upscale=2, channels=3, binary="even_odd")
    assert up["train"].x.shape[1:] == (16, 16, 3)
    assert np.array_equal(up["train"].x[..., 0], up["train"].x[..., 2])
    # the same split, relabelled: even digits -> 1
    assert np.array_equal(up["train"].y, (base["train"].y % 2 == 0).astype(np.int64))
    expect = np.clip(
        np.rint(zoom(base["train"].x[..., 0].astype(float), (1, 2, 2), order=1)), 0, 255
    )
    # upscaling the 0..255 float image vs the uint8 one differs by the first rounding only
    assert np.abs(up["train"].x[..., 0].astype(int) - expect).max() <= 1


@pytest.mark.parametrize(
    "options,match",
    [({"upscale": 0}, "upscale"), ({"channels": 2}, "channels"), ({"binary": "x"}, "binary"),
     ({"colour": 1}, "unknown option")],
)  # fmt: skip
def test_digits_bad_options(options, match):
    with pytest.raises(DataError, match=match):
        _digits(**options)
