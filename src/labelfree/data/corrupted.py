"""The released corruption benchmarks MNIST-C and CIFAR-10-C, read from their archives.

- MNIST-C (Mu & Gilmer 2019), Zenodo record 3239543, ``mnist_c.zip``: members
  ``mnist_c/{corruption}/{train,test}_{images,labels}.npy``, one severity per corruption,
  images (N, 28, 28, 1). md5 ``4b34b33045869ee6d424616cd3a65da3`` as listed on Zenodo.
- CIFAR-10-C (Hendrycks & Dietterich 2019), Zenodo record 2535967, ``CIFAR-10-C.tar``:
  members ``CIFAR-10-C/{corruption}.npy`` (50,000 x 32 x 32 x 3 uint8, severities 1..5 in
  blocks of 10,000) and ``CIFAR-10-C/labels.npy``. md5 ``56bf5dcef84df0e2308c6dcbcbbd8499``
  as listed on Zenodo.

Arrays are read straight from the archive with ``allow_pickle=False`` (no extraction step);
an already extracted folder ``{root}/{name}/{folder}/`` is used instead when present.
"""

from __future__ import annotations

import os
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from labelfree.data.base import DataError, to_uint8
from labelfree.data.download import FileSpec, fetch
from labelfree.data.formats import parse_npy
from labelfree.store import ImageSet


@dataclass(frozen=True)
class CorruptedRelease:
    """A released corruption benchmark: its archive, folder inside it, and corruption names."""

    name: str
    archive: FileSpec
    folder: str
    corruptions: tuple[str, ...]
    severities: tuple[int, ...]
    per_severity: int


RELEASES: dict[str, CorruptedRelease] = {
    "mnist_c": CorruptedRelease(
        name="mnist_c",
        archive=FileSpec(
            "mnist_c.zip",
            ("https://zenodo.org/records/3239543/files/mnist_c.zip",),
            md5="4b34b33045869ee6d424616cd3a65da3",
        ),
        folder="mnist_c",
        corruptions=(
            "identity", "shot_noise", "impulse_noise", "glass_blur", "motion_blur", "shear",
            "scale", "rotate", "brightness", "translate", "stripe", "fog", "spatter",
            "dotted_line", "zigzag", "canny_edges",
        ),
        severities=(1,),
        per_severity=10000,
    ),
    "cifar10_c": CorruptedRelease(
        name="cifar10_c",
        archive=FileSpec(
            "CIFAR-10-C.tar",
            ("https://zenodo.org/records/2535967/files/CIFAR-10-C.tar",),
            md5="56bf5dcef84df0e2308c6dcbcbbd8499",
        ),
        folder="CIFAR-10-C",
        corruptions=(
            "gaussian_noise", "shot_noise", "impulse_noise", "defocus_blur", "glass_blur",
            "motion_blur", "zoom_blur", "snow", "frost", "fog", "brightness", "contrast",
            "elastic_transform", "pixelate", "jpeg_compression", "speckle_noise",
            "gaussian_blur", "spatter", "saturate",
        ),
        severities=(1, 2, 3, 4, 5),
        per_severity=10000,
    ),
}  # fmt: skip


def release(name: str) -> CorruptedRelease:
    if name not in RELEASES:
        raise DataError(f"unknown corruption release {name!r}; known: {sorted(RELEASES)}")
    return RELEASES[name]


def fetch_release(
    name: str, root: str | os.PathLike[str] = "resources/data", url: str = ""
) -> Path:
    """Download (or verify) the release archive into ``{root}/{name}/``; return its path."""
    rel = release(name)
    return fetch(rel.archive, Path(root) / name, base_url=url)


def _read_member(root: Path, rel: CorruptedRelease, member: str) -> np.ndarray:
    """Read ``{folder}/{member}`` from the extracted folder if present, else from the archive."""
    extracted = root / rel.name / rel.folder / member
    if extracted.is_file():
        return parse_npy(extracted.read_bytes(), str(extracted))
    archive = root / rel.name / rel.archive.name
    if not archive.is_file():
        raise DataError(
            f"{archive}: file not found (nor the extracted {extracted}); run the data_download "
            f"rule or place {rel.archive.name} there"
        )
    inner = f"{rel.folder}/{member}"
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                try:
                    data = zf.read(inner)
                except KeyError:
                    raise DataError(f"{archive}: archive has no member {inner}") from None
        else:
            with tarfile.open(archive, "r:*") as tar:
                try:
                    fh = tar.extractfile(inner)
                except KeyError:
                    raise DataError(f"{archive}: archive has no member {inner}") from None
                if fh is None:
                    raise DataError(f"{archive}: {inner} is not a regular file")
                data = fh.read()
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise DataError(f"{archive}: truncated or corrupt archive ({exc})") from exc
    return parse_npy(data, f"{archive}:{inner}")


def _as_images(arr: np.ndarray, where: str) -> np.ndarray:
    """Released images as uint8 NHWC; float arrays must hold 0..255 values."""
    if arr.ndim == 3:
        arr = arr[..., None]
    if arr.ndim != 4 or arr.shape[3] not in (1, 3):
        raise DataError(f"{where}: images of shape {arr.shape} are not NHWC with 1 or 3 channels")
    if arr.dtype != np.uint8:
        if arr.size and (arr.min() < 0 or arr.max() > 255):
            raise DataError(f"{where}: values outside 0..255 ({arr.min()}..{arr.max()})")
        arr = to_uint8(arr)
    return arr


def load_corrupted(
    name: str,
    corruption: str,
    severity: int = 1,
    root: str | os.PathLike[str] = "resources/data",
    split: str = "test",
) -> ImageSet:
    """One (corruption, severity) test set of a release as an ImageSet.

    MNIST-C has one severity (1) and a ``train``/``test`` split; CIFAR-10-C has severities 1..5
    of the CIFAR-10 test set (rows ``(s - 1) * 10000 : s * 10000`` of each file).
    """
    rel = release(name)
    root = Path(root)
    if corruption not in rel.corruptions:
        raise DataError(
            f"{name}: unknown corruption {corruption!r}; released: {list(rel.corruptions)}"
        )
    if severity not in rel.severities:
        raise DataError(
            f"{name}: severity {severity} not released; available: {list(rel.severities)}"
        )
    if name == "mnist_c":
        if split not in ("train", "test"):
            raise DataError(f"mnist_c: split {split!r} must be 'train' or 'test'")
        x = _read_member(root, rel, f"{corruption}/{split}_images.npy")
        y = _read_member(root, rel, f"{corruption}/{split}_labels.npy")
    else:
        if split != "test":
            raise DataError(f"{name}: only the 'test' split is released")
        x = _read_member(root, rel, f"{corruption}.npy")
        y = _read_member(root, rel, "labels.npy")
        if len(x) != len(y) or len(x) % len(rel.severities):
            raise DataError(f"{name}/{corruption}: {len(x)} images vs {len(y)} labels")
        block = len(x) // len(rel.severities)
        rows = slice((severity - 1) * block, severity * block)
        x, y = x[rows], y[rows]
    where = f"{root / rel.name}:{corruption}"
    x = _as_images(x, where)
    y = np.asarray(y).astype(np.int64).ravel()
    if len(x) != len(y):
        raise DataError(f"{where}: {len(x)} images vs {len(y)} labels")
    return ImageSet(x=np.ascontiguousarray(x), y=y)
