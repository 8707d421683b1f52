"""Readers of released -C archives (LaF paper, Section 4.3), preferred over regeneration when configured.

Two on-disk layouts are recognised:

* **CIFAR-10-C** (Zenodo 2535967): ``<root>/<corruption>.npy`` of 5 x N images (severities
  1..5 in order, N = 10,000 for CIFAR-10) and ``<root>/labels.npy`` of 5 x N labels.
* **MNIST-C** (Mu & Gilmer 2019): ``<root>/<corruption>/test_images.npy`` (N, 28, 28[, 1]) and
  ``test_labels.npy``; one level per corruption, no severities. MNIST-C ships only 6 of the 15
  corruptions (shot_noise, impulse_noise, glass_blur, motion_blur, fog, brightness) - LaF built
  its MNIST-C with the 15 CIFAR-10-C types instead (docs/shifts.md, reading R3), which is what
  regeneration does.

Instead of a directory, a source may name a release of the data layer (``mnist_c`` or
``cifar10_c``, :mod:`labelfree.data.corrupted`): it is then read straight from the verified
download under ``resources/data`` (the data layer's ``data_download_corrupted`` rule).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from labelfree.data.base import DataError
from labelfree.data.corrupted import RELEASES, load_corrupted, release
from labelfree.shifts.params import CORRUPTIONS, SEVERITIES


class ReleasedArchiveError(ValueError):
    """A released -C archive is missing, malformed or lacks a requested set; names the path."""


#: Our corruption name -> directory name in MNIST-C (only these exist there).
MNIST_C_NAMES: dict[str, str] = {
    "shot_noise": "shot_noise",
    "impulse_noise": "impulse_noise",
    "glass_blur": "glass_blur",
    "motion_blur": "motion_blur",
    "fog": "fog",
    "brightness": "brightness",
}


DATA_ROOT = "resources/data"


def release_name(source: str | Path) -> str | None:
    """The data layer's release name if ``source`` is one (``mnist_c``, ``cifar10_c``)."""
    return str(source) if str(source) in RELEASES else None


def layout(root: str | Path) -> str:
    """``cifar_c`` or ``mnist_c`` for an archive directory or release name; raises otherwise."""
    name = release_name(root)
    if name is not None:
        return "mnist_c" if name == "mnist_c" else "cifar_c"
    root = Path(root)
    if not root.is_dir():
        raise ReleasedArchiveError(f"{root}: released -C archive directory not found")
    if (root / "labels.npy").is_file():
        return "cifar_c"
    if any((d / "test_images.npy").is_file() for d in root.iterdir() if d.is_dir()):
        return "mnist_c"
    raise ReleasedArchiveError(
        f"{root}: not a released -C archive (expected labels.npy + <corruption>.npy as in "
        "CIFAR-10-C, or <corruption>/test_images.npy as in MNIST-C)"
    )


def available(root: str | Path, single_level_severity: int = 3) -> set[tuple[str, int]]:
    """The (corruption, severity) pairs the archive holds, in our names."""
    name = release_name(root)
    if name is not None:
        rel = release(name)
        levels = rel.severities if len(rel.severities) > 1 else (single_level_severity,)
        return {(c, s) for c in CORRUPTIONS if c in rel.corruptions for s in levels}
    root = Path(root)
    kind = layout(root)
    if kind == "cifar_c":
        return {(c, s) for c in CORRUPTIONS if (root / f"{c}.npy").is_file() for s in SEVERITIES}
    return {
        (c, single_level_severity)
        for c, d in MNIST_C_NAMES.items()
        if (root / d / "test_images.npy").is_file()
    }


def missing_message(
    root: str | Path, wanted: list[tuple[str, int]], single_level_severity: int = 3
) -> str:
    """A one-paragraph explanation of which requested sets the archive lacks."""
    have = available(root, single_level_severity)
    lacking = [f"{c}-{s}" for c, s in wanted if (c, s) not in have]
    kind = layout(root)
    extra = ""
    if kind == "mnist_c":
        absent = sorted(set(CORRUPTIONS) - set(MNIST_C_NAMES))
        extra = (
            f"; MNIST-C has no {absent} and only one level per corruption (used as severity "
            f"{single_level_severity}, shifts.released_single_level_severity)"
        )
    return (
        f"{root}: released {kind} archive lacks {lacking}{extra}. Set "
        "shifts.released_fallback: generate to regenerate the missing sets, or drop them from "
        "shifts.corruptions / shifts.severities."
    )


def _as_uint8_images(arr: np.ndarray, path: Path) -> np.ndarray:
    if arr.ndim == 3:
        arr = arr[..., None]
    if arr.ndim != 4 or arr.shape[3] not in (1, 3):
        raise ReleasedArchiveError(f"{path}: expected images (N, H, W[, C]), got shape {arr.shape}")
    if arr.dtype != np.uint8:
        if not np.issubdtype(arr.dtype, np.number) or arr.min() < 0 or arr.max() > 255:
            raise ReleasedArchiveError(
                f"{path}: images must be uint8 or numbers in [0, 255], got {arr.dtype}"
            )
        arr = np.rint(arr).astype(np.uint8)
    return arr


def _load(path: Path) -> np.ndarray:
    if not path.is_file():
        raise ReleasedArchiveError(f"{path}: file not found")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise ReleasedArchiveError(f"{path}: not a readable .npy file ({exc})") from exc


def load_released(
    root: str | Path, corruption: str, severity: int, single_level_severity: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """Images (uint8 NHWC) and labels (int64) of one released set; raises if it is absent."""
    if (corruption, severity) not in available(root, single_level_severity):
        raise ReleasedArchiveError(
            missing_message(root, [(corruption, severity)], single_level_severity)
        )
    name = release_name(root)
    if name is not None:
        levels = release(name).severities
        level = severity if len(levels) > 1 else levels[0]
        try:
            got = load_corrupted(name, corruption, level, root=DATA_ROOT)
        except DataError as exc:
            raise ReleasedArchiveError(str(exc)) from exc
        return got.x, got.y
    root = Path(root)
    if layout(root) == "cifar_c":
        xp, yp = root / f"{corruption}.npy", root / "labels.npy"
        x, y = _load(xp), _load(yp)
        if len(x) != len(y) or len(x) % len(SEVERITIES):
            raise ReleasedArchiveError(
                f"{xp}: {len(x)} images and {len(y)} labels; expected equal counts of 5 severities x N"
            )
        n = len(x) // len(SEVERITIES)
        rows = slice((severity - 1) * n, severity * n)
        return _as_uint8_images(x[rows], xp), y[rows].astype(np.int64)
    d = root / MNIST_C_NAMES[corruption]
    x, y = _load(d / "test_images.npy"), _load(d / "test_labels.npy")
    if len(x) != len(y):
        raise ReleasedArchiveError(f"{d}: {len(x)} images but {len(y)} labels")
    return _as_uint8_images(x, d / "test_images.npy"), y.astype(np.int64)
