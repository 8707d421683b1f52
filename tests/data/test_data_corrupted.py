"""The released MNIST-C (zip) and CIFAR-10-C (tar) layouts (labelfree.data.corrupted)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from labelfree.data import corrupted
from labelfree.data.base import DataError
from labelfree.data.corrupted import load_corrupted


def _mnist_c(tmp_path, w):
    rng = np.random.default_rng(0)
    members, truth = {}, {}
    for c in ("fog", "zigzag"):
        x = rng.integers(0, 256, (12, 28, 28, 1)).astype(np.float32)  # released as 0..255 values
        y = (np.arange(12) % 10).astype(np.uint8)
        members[f"mnist_c/{c}/test_images.npy"] = w.npy_bytes(x)
        members[f"mnist_c/{c}/test_labels.npy"] = w.npy_bytes(y)
        truth[c] = (x, y)
    (tmp_path / "mnist_c").mkdir()
    w.write_zip(tmp_path / "mnist_c" / "mnist_c.zip", members)
    return truth


def test_mnist_c_from_zip(tmp_path, w):
    truth = _mnist_c(tmp_path, w)
    s = load_corrupted("mnist_c", "fog", root=tmp_path)
    assert s.x.dtype == np.uint8 and s.x.shape == (12, 28, 28, 1)
    assert np.array_equal(s.x, truth["fog"][0].astype(np.uint8))
    assert np.array_equal(s.y, truth["fog"][1])
    with pytest.raises(DataError, match="severity 3 not released"):
        load_corrupted("mnist_c", "fog", severity=3, root=tmp_path)
    with pytest.raises(DataError, match=r"mnist_c\.zip: archive has no member mnist_c/shear"):
        load_corrupted("mnist_c", "shear", root=tmp_path)


def test_cifar10_c_severity_blocks(tmp_path, w):
    n = 4  # images per severity
    x = np.repeat(np.arange(5, dtype=np.uint8), n)[:, None, None, None] * np.ones(
        (1, 32, 32, 3), dtype=np.uint8
    )  # severity s block filled with s - 1
    labels = np.tile(np.arange(n, dtype=np.uint8), 5)
    (tmp_path / "cifar10_c").mkdir()
    w.write_tar(
        tmp_path / "cifar10_c" / "CIFAR-10-C.tar",
        {"CIFAR-10-C/fog.npy": w.npy_bytes(x), "CIFAR-10-C/labels.npy": w.npy_bytes(labels)},
    )
    for sev in (1, 3, 5):
        s = load_corrupted("cifar10_c", "fog", severity=sev, root=tmp_path)
        assert s.x.shape == (n, 32, 32, 3)
        assert np.all(s.x == sev - 1)
        assert s.y.tolist() == list(range(n))


def test_extracted_folder_preferred(tmp_path, w):
    folder = tmp_path / "cifar10_c" / "CIFAR-10-C"
    folder.mkdir(parents=True)
    (folder / "snow.npy").write_bytes(w.npy_bytes(np.full((10, 32, 32, 3), 7, dtype=np.uint8)))
    (folder / "labels.npy").write_bytes(w.npy_bytes(np.arange(10, dtype=np.uint8)))
    s = load_corrupted("cifar10_c", "snow", severity=2, root=tmp_path)
    assert len(s) == 2 and s.y.tolist() == [2, 3]


def test_missing_and_truncated_archives(tmp_path, w):
    with pytest.raises(DataError, match=r"CIFAR-10-C\.tar: file not found"):
        load_corrupted("cifar10_c", "fog", root=tmp_path)
    _mnist_c(tmp_path, w)
    archive = tmp_path / "mnist_c" / "mnist_c.zip"
    archive.write_bytes(archive.read_bytes()[:200])
    with pytest.raises(DataError, match=r"mnist_c\.zip: truncated or corrupt"):
        load_corrupted("mnist_c", "fog", root=tmp_path)
    with pytest.raises(DataError, match="unknown corruption"):
        load_corrupted("cifar10_c", "rain", root=tmp_path)


def test_fetch_release_from_local_mirror(http_root, tmp_path, w, monkeypatch):
    served, url = http_root
    _mnist_c(served, w)
    data = (served / "mnist_c" / "mnist_c.zip").read_bytes()
    rel = corrupted.RELEASES["mnist_c"]
    spec = corrupted.FileSpec(rel.archive.name, (), md5=hashlib.md5(data).hexdigest())
    monkeypatch.setitem(
        corrupted.RELEASES,
        "mnist_c",
        corrupted.CorruptedRelease(**{**rel.__dict__, "archive": spec}),
    )
    path = corrupted.fetch_release("mnist_c", tmp_path / "res", url=url + "/mnist_c")
    assert path.read_bytes() == data
    assert len(load_corrupted("mnist_c", "zigzag", root=tmp_path / "res")) == 12
