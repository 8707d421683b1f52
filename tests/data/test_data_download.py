"""Checksummed downloads from a local HTTP server on 127.0.0.1 (labelfree.data.download)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from labelfree.data import classic, corrupted
from labelfree.data.base import DataError
from labelfree.data.download import FileSpec, fetch, verify_file
from labelfree.data.registry import download_dataset, prepare_dataset


def _spec(name: str, data: bytes, algo: str = "sha256", **kw) -> FileSpec:
    digest = hashlib.new(algo, data).hexdigest()
    return FileSpec(name, (), **{algo: digest}, **kw)


def _leftovers(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_fetch_verifies_and_renames(http_root, tmp_path):
    root, url = http_root
    data = b"payload" * 1000
    (root / "f.bin").write_bytes(data)
    dest = tmp_path / "dl"
    path = fetch(_spec("f.bin", data, "md5"), dest, base_url=url)
    assert path.read_bytes() == data
    assert _leftovers(dest) == ["f.bin"]
    # present and valid: verified, not downloaded again (server copy removed)
    (root / "f.bin").unlink()
    assert fetch(_spec("f.bin", data), dest, base_url=url) == path


def test_wrong_checksum_leaves_nothing(http_root, tmp_path):
    root, url = http_root
    (root / "f.bin").write_bytes(b"tampered")
    spec = FileSpec("f.bin", (), sha256="0" * 64)
    dest = tmp_path / "dl"
    with pytest.raises(
        DataError, match=r"f\.bin.*sha256 checksum.*does not match|f\.bin.*checksum"
    ):
        fetch(spec, dest, base_url=url)
    assert _leftovers(dest) == []


def test_truncated_transfer_leaves_nothing(http_root, tmp_path):
    root, url = http_root
    data = bytes(range(256)) * 400
    (root / "f.bin").write_bytes(data)
    dest = tmp_path / "dl"
    with pytest.raises(DataError, match="truncated"):
        fetch(_spec("f.bin", data), dest, base_url=url + "/truncated")
    assert _leftovers(dest) == []


def test_missing_remote_file_names_file_and_url(http_root, tmp_path):
    _, url = http_root
    with pytest.raises(DataError, match=r"nothere\.gz.*127\.0\.0\.1.*HTTP 404"):
        fetch(FileSpec("nothere.gz", (), md5="0" * 32), tmp_path / "dl", base_url=url)
    assert _leftovers(tmp_path / "dl") == []


def test_mirrors_tried_in_order(http_root, tmp_path):
    root, url = http_root
    data = b"mirror2"
    (root / "good").mkdir()
    (root / "good" / "f.bin").write_bytes(data)
    spec = FileSpec(
        "f.bin", (f"{url}/bad/f.bin", f"{url}/good/f.bin"), sha256=hashlib.sha256(data).hexdigest()
    )
    assert fetch(spec, tmp_path / "dl").read_bytes() == data


def test_existing_corrupt_file_is_an_error(tmp_path):
    (tmp_path / "f.bin").write_bytes(b"short")
    spec = FileSpec("f.bin", (), sha256="0" * 64, size=10)
    with pytest.raises(DataError, match=r"f\.bin: size 5 bytes, expected 10"):
        verify_file(tmp_path / "f.bin", spec)
    with pytest.raises(DataError, match="delete the file"):
        fetch(spec, tmp_path)
    with pytest.raises(DataError, match="file not found"):
        verify_file(tmp_path / "absent", spec)


def test_download_dataset_then_prepare(http_root, tmp_path, w, monkeypatch):
    """MNIST end to end: official names served locally, checksums patched to the fakes'."""
    served, url = http_root
    w.write_mnist_files(served, n_train=50, n_test=30)
    specs = [
        FileSpec(f.name, f.urls, md5=hashlib.md5((served / f.name).read_bytes()).hexdigest())
        for f in classic.FILES["mnist"]
    ]
    monkeypatch.setitem(classic.FILES, "mnist", specs)
    cfg = {"source": "mnist", "root": str(tmp_path / "raw"), "url": url,
           "splits": {"train": 1.0, "test": 1.0}, "test_split": "test"}  # fmt: skip
    paths = download_dataset("m", cfg, manifest=tmp_path / "manifest.json")
    assert set(paths) == {f.name for f in specs}
    assert (tmp_path / "manifest.json").exists()
    meta = prepare_dataset("m", cfg, 0, tmp_path / "out")
    assert meta["splits"]["train"]["n"] == 50
    z = np.load(tmp_path / "out" / "test.npz")
    assert z["x"].shape == (30, 28, 28, 1)


def test_official_checksums_unchanged():
    """The constants are those published with the files (torchvision 0.2x / Zenodo)."""
    md5 = {f.name: f.md5 for fs in classic.FILES.values() for f in fs}
    assert md5["cifar-10-python.tar.gz"] == "c58f30108f718f92721af3b95e74349a"
    assert md5["test_32x32.mat"] == "eb5a983be6a315427106f1b164d9cef3"
    assert corrupted.RELEASES["cifar10_c"].archive.md5 == "56bf5dcef84df0e2308c6dcbcbbd8499"
    assert corrupted.RELEASES["mnist_c"].archive.md5 == "4b34b33045869ee6d424616cd3a65da3"
    assert all(len(f.digest) in (32, 64) for fs in classic.FILES.values() for f in fs)
    # decompressed IDX md5s: MNIST as in ../shared/data/README.md (and yann.lecun.com's files)
    content = {f.name: f.content_md5 for f in classic.FILES["mnist"]}
    assert content["train-images-idx3-ubyte.gz"] == "6bbc9ace898e44ae57da46a324031adb"
    assert content["t10k-labels-idx1-ubyte.gz"] == "27ae3e4e09519cfbb04c329615203637"
    assert all(len(f.content_md5) == 32 for f in classic.FILES["fashion_mnist"])
