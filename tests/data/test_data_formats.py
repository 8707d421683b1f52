"""Direct readers on small files in the real on-disk formats (labelfree.data.formats, classic)."""

from __future__ import annotations

import gzip
import io
import os
import pickle
import tarfile

import numpy as np
import pytest
from scipy.io import savemat

from labelfree.data.base import DataError
from labelfree.data.classic import files_needed, make_builder
from labelfree.data.formats import (
    load_cifar_pickle,
    parse_npy,
    read_cifar_archive,
    read_idx,
    read_svhn_mat,
)


def test_idx_roundtrip_gz_and_raw(tmp_path, w):
    x = np.random.default_rng(0).integers(0, 256, (7, 28, 28), dtype=np.uint8)
    w.write_idx_gz(tmp_path / "a.gz", x)
    (tmp_path / "raw").write_bytes(w.idx_bytes(x))
    assert np.array_equal(read_idx(tmp_path / "a.gz"), x)
    assert np.array_equal(read_idx(tmp_path / "raw"), x)


def test_idx_truncated_and_missing(tmp_path, w):
    x = np.zeros((5, 28, 28), dtype=np.uint8)
    data = gzip.compress(w.idx_bytes(x))
    (tmp_path / "cut.gz").write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"cut\.gz.*truncated or corrupt gzip"):
        read_idx(tmp_path / "cut.gz")
    (tmp_path / "short").write_bytes(w.idx_bytes(x)[:-10])
    with pytest.raises(DataError, match=r"short.*payload"):
        read_idx(tmp_path / "short")
    with pytest.raises(DataError, match=r"nope\.gz: file not found"):
        read_idx(tmp_path / "nope.gz")
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(DataError, match="bad magic"):
        read_idx(tmp_path / "bad")


def test_mnist_builder_on_idx_files(tmp_path, w):
    arrays = w.write_mnist_files(tmp_path / "mnist", n_train=60, n_test=40)
    build = make_builder("mnist")
    cfg = {"source": "mnist", "root": str(tmp_path), "splits": {"train": 1.0, "test": 0.5},
           "options": {"channels": 3, "size": 32}}  # fmt: skip
    splits, info = build("m", cfg, 0)
    assert splits["train"].x.shape == (60, 32, 32, 3)
    assert np.array_equal(splits["train"].y, arrays["train"][1])
    assert len(splits["test"]) == 20 and np.all(np.bincount(splits["test"].y) == 2)
    native, _ = build("m", {**cfg, "options": {}}, 0)
    assert np.array_equal(native["train"].x[..., 0], arrays["train"][0])
    assert info["classes"] == [str(d) for d in range(10)]
    with pytest.raises(DataError, match="unknown split"):
        build("m", {**cfg, "splits": {"val": 1.0}}, 0)


def test_cifar10_archive(tmp_path, w):
    arrays = w.write_cifar_archive(tmp_path / "c10.tar.gz", "cifar10", n_per_batch=6)
    parts, classes = read_cifar_archive(tmp_path / "c10.tar.gz", "cifar10")
    x, y = parts["train"]
    assert x.shape == (30, 32, 32, 3) and x.dtype == np.uint8 and y.dtype == np.int64
    raw, labels = arrays["train"]
    # row layout: 1024 red, 1024 green, 1024 blue values, each row-major 32x32
    assert np.array_equal(x[3, :, :, 1], raw[3, 1024:2048].reshape(32, 32))
    assert np.array_equal(y, labels)
    assert parts["test"][0].shape == (6, 32, 32, 3)
    assert classes[:2] == ["class0", "class1"]


def test_cifar100_fine_and_coarse(tmp_path, w):
    arrays = w.write_cifar_archive(tmp_path / "c100.tar.gz", "cifar100", n_per_batch=8)
    fine, names = read_cifar_archive(tmp_path / "c100.tar.gz", "cifar100", "fine_labels")
    coarse, cnames = read_cifar_archive(tmp_path / "c100.tar.gz", "cifar100", "coarse_labels")
    assert np.array_equal(fine["test"][1], arrays["test"][1])
    assert np.array_equal(coarse["test"][1], arrays["test"][2])
    assert len(names) == 100 and len(cnames) == 20


def test_cifar_truncated_archive(tmp_path, w):
    w.write_cifar_archive(tmp_path / "c10.tar.gz", "cifar10", n_per_batch=50)
    data = (tmp_path / "c10.tar.gz").read_bytes()
    (tmp_path / "cut.tar.gz").write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(DataError, match=r"cut\.tar\.gz"):
        read_cifar_archive(tmp_path / "cut.tar.gz", "cifar10")


def test_cifar_unpickler_refuses_code():
    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    payload = pickle.dumps({b"data": Evil()}, protocol=2)
    with pytest.raises(DataError, match="not allowed"):
        load_cifar_pickle(payload, "evil")
    obj_array = pickle.dumps({b"data": np.array([1, "a"], dtype=object)}, protocol=2)
    with pytest.raises(DataError):
        load_cifar_pickle(obj_array, "objects")
    ok = load_cifar_pickle(pickle.dumps({b"data": np.arange(3, dtype=np.uint8)}), "ok")
    assert ok["data"].tolist() == [0, 1, 2]


def test_cifar_missing_member(tmp_path):
    with tarfile.open(tmp_path / "empty.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("cifar-10-batches-py/readme")
        info.size = 0
        tar.addfile(info, io.BytesIO(b""))
    with pytest.raises(DataError, match="no member cifar-10-batches-py/batches.meta"):
        read_cifar_archive(tmp_path / "empty.tar.gz", "cifar10")


def test_svhn_mat(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (32, 32, 3, 12), dtype=np.uint8)
    y = (np.arange(12) % 10 + 1).reshape(-1, 1).astype(np.uint8)  # 1..10, 10 = digit 0
    savemat(tmp_path / "test_32x32.mat", {"X": x, "y": y})
    xs, ys = read_svhn_mat(tmp_path / "test_32x32.mat")
    assert xs.shape == (12, 32, 32, 3)
    assert np.array_equal(xs[4], x[..., 4])
    assert ys.tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2]
    (tmp_path / "bad.mat").write_bytes(b"not a mat file at all" * 10)
    with pytest.raises(DataError, match=r"bad\.mat"):
        read_svhn_mat(tmp_path / "bad.mat")


def test_npy_truncated_and_no_pickle(w):
    arr = np.arange(100, dtype=np.uint8).reshape(10, 10)
    assert np.array_equal(parse_npy(w.npy_bytes(arr), "a"), arr)
    with pytest.raises(DataError, match="truncated or corrupt"):
        parse_npy(w.npy_bytes(arr)[:-20], "cut.npy")
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(DataError):
        parse_npy(buf.getvalue(), "objects.npy")


def test_cifar_batch_pickled_by_python2_numpy1(w):
    """Real CIFAR batches name numpy.core.multiarray (numpy 1, Python 2); that must load too."""
    data = np.arange(2 * 3072, dtype=np.uint8).reshape(2, 3072)
    raw = pickle.dumps({b"data": data, b"labels": [3, 4]}, protocol=2)
    assert b"numpy._core.multiarray" in raw
    legacy = raw.replace(b"numpy._core.multiarray", b"numpy.core.multiarray")
    got = load_cifar_pickle(legacy, "legacy")
    assert np.array_equal(got["data"], data) and got["labels"] == [3, 4]


def test_cifar_and_svhn_builders(tmp_path, w):
    (tmp_path / "cifar10").mkdir()
    arrays = w.write_cifar_archive(tmp_path / "cifar10" / "cifar-10-python.tar.gz", "cifar10", 4)
    cfg = {"source": "cifar10", "root": str(tmp_path), "splits": {"test": 1.0},
           "options": {"channels": 1}}  # fmt: skip
    splits, info = make_builder("cifar10")("c", cfg, 0)
    x = arrays["test"][0].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).astype(float)
    luma = np.rint(x @ np.array([0.299, 0.587, 0.114]))
    assert splits["test"].x.shape == (4, 32, 32, 1)
    assert np.abs(splits["test"].x[..., 0] - luma).max() <= 1
    assert info["classes"][0] == "class0"

    assert [f.name for f in files_needed("svhn", {"extra": 0.1})] == ["extra_32x32.mat"]
    (tmp_path / "svhn").mkdir()
    x = np.random.default_rng(0).integers(0, 256, (32, 32, 3, 20), dtype=np.uint8)
    savemat(
        tmp_path / "svhn" / "extra_32x32.mat",
        {"X": x, "y": np.arange(1, 21).reshape(-1, 1) % 10 + 1},
    )
    cfg = {"source": "svhn", "root": str(tmp_path), "splits": {"extra": 0.5}}
    splits, _ = make_builder("svhn")("s", cfg, 0)
    assert len(splits["extra"]) == 10 and np.all(np.bincount(splits["extra"].y) == 1)
    with pytest.raises(DataError, match=r"train_32x32\.mat: file not found"):
        make_builder("svhn")("s", {**cfg, "splits": {"train": 1.0}}, 0)
