"""The artefact store: atomic writes, contract checks, errors that name the file."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from labelfree import store
from labelfree.store import ArtefactError


def _images(n=4, h=8, w=8, c=1):
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (n, h, w, c), dtype=np.uint8), np.arange(n) % 3


def test_image_set_round_trip_with_extras(tmp_path):
    x, y = _images()
    boxes = np.tile(np.array([[0, 0, 4, 4]], dtype=np.float32), (4, 1))
    store.write_image_set(tmp_path / "a.npz", x, y, boxes=boxes)
    got = store.read_image_set(tmp_path / "a.npz")
    np.testing.assert_array_equal(got.x, x)
    assert got.y.dtype == np.int64 and len(got) == 4
    np.testing.assert_array_equal(got.extras["boxes"], boxes)


@pytest.mark.parametrize(
    ("x", "y", "fragment"),
    [
        (np.zeros((2, 8, 8, 1), np.float32), np.zeros(2, int), "x must be uint8 NHWC"),
        (np.zeros((2, 8, 8), np.uint8), np.zeros(2, int), "x must be uint8 NHWC"),
        (np.zeros((2, 8, 8, 2), np.uint8), np.zeros(2, int), "1 or 3 channels"),
        (np.zeros((2, 8, 8, 1), np.uint8), np.zeros(3, int), "does not match 2 images"),
        (np.zeros((2, 8, 8, 1), np.uint8), np.array([0, -1]), "negative labels"),
    ],
)
def test_contract_breaches_name_the_file(tmp_path, x, y, fragment):
    path = tmp_path / "bad.npz"
    with pytest.raises(ArtefactError, match="bad.npz") as info:
        store.write_image_set(path, x, y)
    assert fragment in str(info.value)
    assert not path.exists()


def test_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "t.txt"
    with pytest.raises(RuntimeError), store.atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed mid-write")
    assert list(tmp_path.iterdir()) == []


def test_atomic_files_get_umask_permissions(tmp_path):
    store.save_json({"a": 1}, tmp_path / "a.json")
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o666 & ~umask


def test_corrupt_and_missing_npz_are_named(tmp_path):
    bad = tmp_path / "corrupt.npz"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ArtefactError, match="corrupt.npz: not a readable npz"):
        store.load_npz(bad)
    with pytest.raises(ArtefactError, match="missing.npz: file not found"):
        store.load_npz(tmp_path / "missing.npz")


def test_inference_artefacts_refuse_nan_and_cast_features(tmp_path):
    logits = np.ones((3, 4), np.float64)
    store.write_inference(tmp_path / "m.npz", logits, penultimate=np.ones((3, 2, 2)))
    assert store.read_logits(tmp_path / "m.npz").dtype == np.float32
    assert store.read_features(tmp_path / "m.npz", "penultimate").shape == (3, 4)
    assert store.load_npz(tmp_path / "m.npz")["feat_penultimate"].dtype == np.float16
    logits[1, 2] = np.nan
    with pytest.raises(ArtefactError, match="NaN"):
        store.write_inference(tmp_path / "n.npz", logits)
    np.savez(tmp_path / "raw.npz", logits=logits.astype(np.float32))
    with pytest.raises(ArtefactError, match="raw.npz: logits contain NaN"):
        store.read_logits(tmp_path / "raw.npz")


def test_stack_predictions(tmp_path):
    for i, cls in enumerate([0, 2]):
        lg = np.zeros((5, 3), np.float32)
        lg[:, cls] = 1
        store.write_inference(tmp_path / f"m{i}.npz", lg)
    pred = store.stack_predictions([tmp_path / "m0.npz", tmp_path / "m1.npz"])
    assert pred.shape == (5, 2) and (pred[:, 1] == 2).all()


def test_tables_are_byte_stable(tmp_path):
    df = pd.DataFrame({"a": [1.0 / 3, 2.0], "b": ["x", "y"]})
    store.save_table(df, tmp_path / "t.csv", title="Table 1")
    first = (tmp_path / "t.csv").read_bytes()
    store.save_table(df, tmp_path / "t.csv", title="Table 1")
    assert (tmp_path / "t.csv").read_bytes() == first
    assert (tmp_path / "t.md").read_text().startswith("**Table 1**")
