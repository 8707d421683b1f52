"""Writers of small files in each real on-disk format, and a local HTTP server (127.0.0.1).

The writers follow the published formats independently of the readers under test:
IDX (yann.lecun.com/exdb/mnist), CIFAR python batches (cs.toronto.edu/~kriz/cifar.html),
SVHN .mat (X (32, 32, 3, N), y (N, 1), 10 = digit 0), MNIST-C zip / CIFAR-10-C tar of .npy,
Pascal VOC XML, COCO instances JSON.
"""

from __future__ import annotations

import gzip
import http.server
import io
import json
import pickle
import struct
import tarfile
import threading
import types
import zipfile
from pathlib import Path

import numpy as np
import pytest

# ---------------------------------------------------------------------------------------------
# format writers
# ---------------------------------------------------------------------------------------------


def idx_bytes(arr: np.ndarray) -> bytes:
    """IDX: 0, 0, type code (0x08 = ubyte), ndim, big-endian uint32 dims, data."""
    assert arr.dtype == np.uint8
    header = struct.pack(">BBBB", 0, 0, 0x08, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    return header + arr.tobytes()


def write_idx_gz(path: Path, arr: np.ndarray) -> Path:
    path.write_bytes(gzip.compress(idx_bytes(arr)))
    return path


def write_mnist_files(folder: Path, n_train: int = 60, n_test: int = 40, seed: int = 0) -> dict:
    """The four MNIST .gz files with random images and balanced labels; returns the arrays."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for split, n, img, lab in [
        ("train", n_train, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
        ("test", n_test, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"),
    ]:
        x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        y = (np.arange(n) % 10).astype(np.uint8)
        write_idx_gz(folder / img, x)
        write_idx_gz(folder / lab, y)
        arrays[split] = (x, y)
    return arrays


def _pickled(obj: dict) -> bytes:
    return pickle.dumps(obj, protocol=2)


def write_cifar_archive(path: Path, variant: str, n_per_batch: int = 20, seed: int = 0) -> dict:
    """A CIFAR-10 or CIFAR-100 python tar.gz: pickled dicts with bytes keys, data (N, 3072)."""
    rng = np.random.default_rng(seed)
    members: dict[str, bytes] = {}
    arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if variant == "cifar10":
        folder = "cifar-10-batches-py"
        names = [f"class{i}" for i in range(10)]
        members["batches.meta"] = _pickled({b"label_names": [n.encode() for n in names]})
        batches = {"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]}
        for split, files in batches.items():
            xs, ys = [], []
            for f in files:
                data = rng.integers(0, 256, (n_per_batch, 3072), dtype=np.uint8)
                labels = [int(v) for v in rng.integers(0, 10, n_per_batch)]
                members[f] = _pickled(
                    {b"batch_label": f.encode(), b"labels": labels, b"data": data,
                     b"filenames": [b"x.png"] * n_per_batch}
                )  # fmt: skip
                xs.append(data)
                ys.append(labels)
            arrays[split] = (np.concatenate(xs), np.concatenate(ys))
    else:
        folder = "cifar-100-python"
        members["meta"] = _pickled(
            {b"fine_label_names": [f"fine{i}".encode() for i in range(100)],
             b"coarse_label_names": [f"coarse{i}".encode() for i in range(20)]}
        )  # fmt: skip
        for split in ("train", "test"):
            data = rng.integers(0, 256, (n_per_batch, 3072), dtype=np.uint8)
            fine = [int(v) for v in rng.integers(0, 100, n_per_batch)]
            coarse = [v // 5 for v in fine]
            members[split] = _pickled(
                {b"data": data, b"fine_labels": fine, b"coarse_labels": coarse,
                 b"filenames": [b"x.png"] * n_per_batch, b"batch_label": split.encode()}
            )  # fmt: skip
            arrays[split] = (data, np.array(fine), np.array(coarse))
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(f"{folder}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return arrays


def npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


# ---------------------------------------------------------------------------------------------
# local HTTP server
# ---------------------------------------------------------------------------------------------


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the fixture directory; ``/truncated/<name>`` announces more bytes than it sends."""

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        if self.path.startswith("/truncated/"):
            data = (Path(self.directory) / self.path.removeprefix("/truncated/")).read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        super().do_GET()


@pytest.fixture
def http_root(tmp_path: Path):
    """(directory served, base URL) of a threaded HTTP server on 127.0.0.1."""
    root = tmp_path / "served"
    root.mkdir()

    def handler(*args, **kwargs):
        return _Handler(*args, directory=str(root), **kwargs)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def write_json(path: Path, obj) -> Path:
    path.write_text(json.dumps(obj))
    return path


def write_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def write_tar(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def w():
    """The format writers of this module, as one namespace (test files import nothing from here)."""
    return types.SimpleNamespace(
        idx_bytes=idx_bytes,
        write_idx_gz=write_idx_gz,
        write_mnist_files=write_mnist_files,
        write_cifar_archive=write_cifar_archive,
        npy_bytes=npy_bytes,
        write_json=write_json,
        write_zip=write_zip,
        write_tar=write_tar,
    )
