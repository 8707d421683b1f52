"""Readers for the on-disk formats of the public datasets, written directly against the formats.

- IDX (MNIST, Fashion-MNIST): http://yann.lecun.com/exdb/mnist/ "FILE FORMATS" section;
  gzip-compressed or raw.
- CIFAR-10/100 "python version": a tar.gz of pickled dicts (https://www.cs.toronto.edu/~kriz/cifar.html).
- SVHN cropped digits: MATLAB .mat files with X (32, 32, 3, N) and y (N, 1), label 10 = digit 0.
- .npy arrays (MNIST-C, CIFAR-10-C), read with ``allow_pickle=False``.

Every reader raises :class:`DataError` naming the file on a truncated, corrupt or wrong-format
input. torchvision's dataset classes are not used for reading: they download on their own and
unpickle CIFAR batches with the unrestricted ``pickle.load``.
"""

from __future__ import annotations

import codecs
import gzip
import io
import os
import pickle
import tarfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

try:
    from numpy._core.multiarray import _reconstruct
except ImportError:  # numpy < 2
    from numpy.core.multiarray import _reconstruct

from labelfree.data.base import DataError

PathLike = str | os.PathLike[str]

# ---------------------------------------------------------------------------------------------
# IDX
# ---------------------------------------------------------------------------------------------

_IDX_DTYPES = {
    0x08: np.dtype(np.uint8),
    0x09: np.dtype(np.int8),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def parse_idx(data: bytes, where: str) -> np.ndarray:
    """Parse the bytes of an IDX file: magic (0, 0, dtype code, ndim), big-endian dims, data."""
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise DataError(f"{where}: not an IDX file (bad magic number)")
    code, ndim = data[2], data[3]
    if code not in _IDX_DTYPES:
        raise DataError(f"{where}: unknown IDX data type code 0x{code:02x}")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DataError(f"{where}: truncated IDX header")
    dims = tuple(int(d) for d in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    dtype = _IDX_DTYPES[code]
    expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if len(data) - header != expected:
        raise DataError(
            f"{where}: IDX payload has {len(data) - header} bytes, dims {dims} need {expected} "
            "(truncated or corrupt file)"
        )
    arr = np.frombuffer(data, dtype=dtype, offset=header).reshape(dims)
    return arr.astype(dtype.newbyteorder("="), copy=True)


def read_idx(path: PathLike) -> np.ndarray:
    """Read an IDX file, gzip-compressed (by content, not name) or raw."""
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: file not found")
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as exc:
            raise DataError(f"{p}: truncated or corrupt gzip archive ({exc})") from exc
    return parse_idx(raw, str(p))


# ---------------------------------------------------------------------------------------------
# CIFAR python batches (pickles) read with a restricted unpickler
# ---------------------------------------------------------------------------------------------


def _safe_dtype(obj: Any, align: bool = False, copy: bool = False) -> np.dtype:
    dt = np.dtype(obj, align=align, copy=copy)
    if dt.hasobject:
        raise pickle.UnpicklingError(f"object dtype {dt} refused")
    return dt


class _CifarUnpickler(pickle.Unpickler):
    """Unpickler for CIFAR batches: only plain containers and numpy arrays of plain dtypes.

    The CIFAR "python version" batches *are* pickles (dicts of bytes keys, lists of ints or
    filenames, and uint8 numpy arrays). ``pickle.load`` would execute any callable a
    tampered file names, so this unpickler resolves only the three globals numpy needs to
    rebuild an array (``_reconstruct``, ``ndarray``, ``dtype``), refuses object dtypes, and
    refuses every other global. Builtin containers (dict, list, bytes, str, int) need no
    global and load normally; ``_codecs.encode`` (str -> bytes, no side effects) is also
    allowed because Python 3 writes bytes that way at protocol 2, so re-pickled batches load.
    """

    _ALLOWED = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("_codecs", "encode"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self._ALLOWED:
            raise pickle.UnpicklingError(
                f"global '{module}.{name}' is not allowed in a CIFAR batch"
            )
        if name == "_reconstruct":
            return _reconstruct
        if name == "dtype":
            return _safe_dtype
        if module == "_codecs":
            return codecs.encode
        return np.ndarray


def load_cifar_pickle(data: bytes, where: str) -> dict[str, Any]:
    """Unpickle one CIFAR batch safely; keys are decoded to str."""
    try:
        obj = _CifarUnpickler(io.BytesIO(data), encoding="bytes").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as exc:
        raise DataError(f"{where}: not a readable CIFAR batch ({exc})") from exc
    if not isinstance(obj, dict):
        raise DataError(f"{where}: CIFAR batch is a {type(obj).__name__}, expected a dict")
    return {k.decode() if isinstance(k, bytes) else k: v for k, v in obj.items()}


CIFAR_LAYOUT = {
    # variant: (folder in the archive, {split: [batch files]}, meta file, meta key, label key)
    "cifar10": (
        "cifar-10-batches-py",
        {"train": [f"data_batch_{i}" for i in range(1, 6)], "test": ["test_batch"]},
        "batches.meta",
        "label_names",
    ),
    "cifar100": (
        "cifar-100-python",
        {"train": ["train"], "test": ["test"]},
        "meta",
        "fine_label_names",
    ),
}


def read_cifar_archive(
    path: PathLike, variant: str, label_key: str = ""
) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], list[str]]:
    """Read a CIFAR-10/100 python tar.gz into ``{split: (x NHWC uint8, y int64)}`` and class names.

    ``label_key``: "labels" (CIFAR-10), "fine_labels" or "coarse_labels" (CIFAR-100).
    """
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: file not found")
    folder, layout, meta_name, names_key = CIFAR_LAYOUT[variant]
    label_key = label_key or ("labels" if variant == "cifar10" else "fine_labels")
    if label_key == "coarse_labels":
        names_key = "coarse_label_names"
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    try:
        with tarfile.open(p, "r:*") as tar:

            def member(name: str) -> bytes:
                try:
                    fh = tar.extractfile(f"{folder}/{name}")
                except KeyError:
                    raise DataError(f"{p}: archive has no member {folder}/{name}") from None
                if fh is None:
                    raise DataError(f"{p}: {folder}/{name} is not a regular file")
                return fh.read()

            meta = load_cifar_pickle(member(meta_name), f"{p}:{meta_name}")
            classes = [c.decode() if isinstance(c, bytes) else str(c) for c in meta[names_key]]
            for split, batches in layout.items():
                xs, ys = [], []
                for b in batches:
                    d = load_cifar_pickle(member(b), f"{p}:{folder}/{b}")
                    if "data" not in d or label_key not in d:
                        raise DataError(f"{p}:{folder}/{b}: batch lacks 'data' or '{label_key}'")
                    data = np.asarray(d["data"], dtype=np.uint8)
                    if data.ndim != 2 or data.shape[1] != 3072:
                        raise DataError(
                            f"{p}:{folder}/{b}: data shape {data.shape}, expected (N, 3072)"
                        )
                    xs.append(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
                    ys.append(np.asarray(d[label_key], dtype=np.int64))
                out[split] = (np.ascontiguousarray(np.concatenate(xs)), np.concatenate(ys))
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise DataError(f"{p}: truncated or corrupt archive ({exc})") from exc
    return out, classes


# ---------------------------------------------------------------------------------------------
# SVHN .mat
# ---------------------------------------------------------------------------------------------


def read_svhn_mat(path: PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Read an SVHN cropped-digits .mat file: X (32, 32, 3, N) -> NHWC; label 10 -> digit 0."""
    # deferred: parse-time module; scipy.io takes 1.9 s to import
    from scipy.io import loadmat

    p = Path(path)
    if not p.is_file():
        raise DataError(f"{p}: file not found")
    try:
        mat = loadmat(p, variable_names=["X", "y"])
    except (ValueError, OSError, TypeError, zlib.error) as exc:
        raise DataError(f"{p}: not a readable .mat file ({exc})") from exc
    if "X" not in mat or "y" not in mat:
        raise DataError(f"{p}: .mat file lacks 'X' or 'y'")
    x = np.ascontiguousarray(np.transpose(mat["X"], (3, 0, 1, 2))).astype(np.uint8)
    y = mat["y"].astype(np.int64).ravel()
    if x.shape[1:] != (32, 32, 3) or len(y) != len(x):
        raise DataError(f"{p}: X {mat['X'].shape} / y {mat['y'].shape} are not SVHN's layout")
    y[y == 10] = 0
    return x, y


# ---------------------------------------------------------------------------------------------
# .npy (MNIST-C, CIFAR-10-C)
# ---------------------------------------------------------------------------------------------


def parse_npy(data: bytes, where: str) -> np.ndarray:
    """Parse .npy bytes without unpickling; a short payload is reported as truncated."""
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, EOFError, OSError) as exc:
        raise DataError(f"{where}: truncated or corrupt .npy array ({exc})") from exc
