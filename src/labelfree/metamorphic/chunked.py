"""Bounded-memory reading and writing of large image sets (issue 16, metamorphic.md 6 cluster cost).

At paper scale a follow-up set is 7 x 50,000 ImageNet images (about 69 GB at 256 px), so it is
never held whole: sources are read a chunk of rows at a time from the split's ``.npz`` (plain
reads at the member's offset, no memory map whose touched pages would stay resident) and follow-
ups are written a chunk at a time into an ``.npz`` member by member. The files are ordinary
uncompressed ``.npz`` archives (what :func:`labelfree.store.save_npz` writes), readable by
:func:`labelfree.store.read_image_set`.
"""

from __future__ import annotations

import os
import struct
import zipfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np


class ChunkedError(ValueError):
    """A member is missing, compressed or written with the wrong number of rows."""


class NpzRows:
    """Rows of one array of an uncompressed ``.npz``, read on demand: ``a[i:j]`` reads rows i..j-1.

    Supports ``len``, ``shape``, ``dtype`` and slicing with step 1 (what chunked loops need).
    """

    def __init__(self, path: str | os.PathLike[str], key: str) -> None:
        self.path = Path(path)
        with zipfile.ZipFile(self.path) as zf:
            try:
                info = zf.getinfo(f"{key}.npy")
            except KeyError:
                raise ChunkedError(f"{self.path}: no array {key!r}; has {sorted(zf.namelist())}") from None
        if info.compress_type != zipfile.ZIP_STORED:
            raise ChunkedError(f"{self.path}: array {key!r} is compressed; chunked reads need np.savez")
        with open(self.path, "rb") as f:
            f.seek(info.header_offset)
            local = f.read(30)
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            f.seek(info.header_offset + 30 + name_len + extra_len)
            version = np.lib.format.read_magic(f)
            reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                      else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = reader(f)
            self.offset = f.tell()
        if fortran and len(shape) > 1:
            raise ChunkedError(f"{self.path}: array {key!r} is Fortran-ordered")
        self.shape: tuple[int, ...] = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.row_bytes = int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, sl: slice) -> np.ndarray:
        if not isinstance(sl, slice) or sl.step not in (None, 1):
            raise ChunkedError("NpzRows supports row slices a[i:j] only")
        start, stop, _ = sl.indices(len(self))
        n = max(0, stop - start)
        out = np.empty((n, *self.shape[1:]), dtype=self.dtype)
        if n:
            with open(self.path, "rb") as f:
                f.seek(self.offset + start * self.row_bytes)
                f.readinto(memoryview(out.reshape(-1).view(np.uint8)))
        return out


def npz_rows(path: str | os.PathLike[str]) -> dict[str, NpzRows]:
    """Every array of an uncompressed ``.npz`` as :class:`NpzRows` (nothing is read yet)."""
    with zipfile.ZipFile(path) as zf:
        keys = [n[:-4] for n in zf.namelist() if n.endswith(".npy")]
    return {k: NpzRows(path, k) for k in keys}


class NpzStreamWriter:
    """Write an ``.npz`` one member at a time, each member one chunk of rows at a time.

    Atomic: the archive is written to ``<path>.tmp`` and renamed on :meth:`close`; use as a
    context manager (an exception removes the partial file).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._tmp = self.path.with_name(self.path.name + ".tmp")
        self._zf = zipfile.ZipFile(self._tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True)

    def add_chunks(
        self, name: str, shape: tuple[int, ...], dtype: np.dtype | type, chunks: Iterable[np.ndarray]
    ) -> None:
        """Member ``name`` of ``shape``/``dtype`` from row chunks whose lengths sum to shape[0]."""
        dt = np.dtype(dtype)
        header = {"descr": np.lib.format.dtype_to_descr(dt), "fortran_order": False,
                  "shape": tuple(int(s) for s in shape)}
        rows = 0
        with self._zf.open(f"{name}.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array_header_2_0(f, header)
            for c in chunks:
                c = np.ascontiguousarray(c, dtype=dt)
                if c.shape[1:] != tuple(shape[1:]):
                    raise ChunkedError(f"{self.path}: {name} chunk {c.shape} does not fit {shape}")
                f.write(memoryview(c.reshape(-1).view(np.uint8)))
                rows += len(c)
        if rows != (shape[0] if shape else 1):
            raise ChunkedError(f"{self.path}: {name} got {rows} rows, declared {shape}")

    def add(self, name: str, array: np.ndarray | NpzRows, rows: int = 256) -> None:
        """Member ``name`` copied from an array or :class:`NpzRows`, ``rows`` rows at a time."""
        if not isinstance(array, NpzRows):
            array = np.asarray(array)
            if array.ndim == 0:
                self.add_chunks(name, (), array.dtype, [array.reshape(1)])
                return
        n = len(array)
        self.add_chunks(name, tuple(array.shape), array.dtype,
                        (array[i : min(i + rows, n)] for i in range(0, n, rows)))

    def close(self) -> None:
        self._zf.close()
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        self._zf.close()
        self._tmp.unlink(missing_ok=True)

    def __enter__(self) -> NpzStreamWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
