"""Parameter tables of the 15 corruptions (docs/shifts.md, reading R1).

Two tables, one entry per severity 1..5:

* ``mnist``: the grayscale custom values of LaF's MNIST-C / Fashion-MNIST-C (defined for 28x28);
* ``cifar``: the standard CIFAR-10-C values (Hendrycks & Dietterich 2019; defined for 32x32).

``auto`` picks ``mnist`` for one channel and ``cifar`` for three. Spatial parameters are given in
pixels of the table's reference size and are rescaled to the actual image size by
:mod:`labelfree.shifts.corruptions` (see :func:`scale_factor`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

CORRUPTIONS: tuple[str, ...] = (
    "gaussian_noise",
    "shot_noise",
    "impulse_noise",
    "defocus_blur",
    "glass_blur",
    "motion_blur",
    "zoom_blur",
    "snow",
    "frost",
    "fog",
    "brightness",
    "contrast",
    "elastic_transform",
    "pixelate",
    "jpeg_compression",
)
SEVERITIES: tuple[int, ...] = (1, 2, 3, 4, 5)
TABLES: tuple[str, ...] = ("mnist", "cifar")

#: Side length (pixels) for which each table's spatial parameters are defined.
REFERENCE_SIZE: dict[str, int] = {"mnist": 28, "cifar": 32}

_MNIST: dict[str, list[Any]] = {
    "gaussian_noise": [0.08, 0.12, 0.18, 0.26, 0.38],
    "shot_noise": [60, 25, 12, 5, 3],
    "impulse_noise": [0.03, 0.06, 0.09, 0.17, 0.27],
    # (disk radius px, alias-blur sigma px)
    "defocus_blur": [(3, 0.1), (4, 0.5), (6, 0.5), (8, 0.5), (10, 0.5)],
    # (gaussian sigma px, max swap delta px, iterations)
    "glass_blur": [(0.7, 1, 2), (0.9, 2, 1), (1, 2, 3), (1.1, 3, 2), (1.5, 4, 2)],
    # (radius px, sigma px); angle U(-45, 45) degrees
    "motion_blur": [(10, 3), (15, 5), (15, 8), (15, 12), (20, 15)],
    # zoom factors (relative, not rescaled)
    "zoom_blur": [
        np.arange(1, 1.11, 0.01),
        np.arange(1, 1.16, 0.01),
        np.arange(1, 1.21, 0.02),
        np.arange(1, 1.26, 0.02),
        np.arange(1, 1.31, 0.03),
    ],
    # (mean, std, flake zoom, threshold, motion radius px, motion sigma px, image mix)
    "snow": [
        (0.1, 0.3, 3, 0.5, 10, 4, 0.8),
        (0.2, 0.3, 2, 0.5, 12, 4, 0.7),
        (0.55, 0.3, 4, 0.9, 12, 8, 0.7),
        (0.55, 0.3, 4.5, 0.85, 12, 8, 0.65),
        (0.55, 0.3, 2.5, 0.85, 12, 12, 0.55),
    ],
    # (image weight, frost weight)
    "frost": [(1, 0.4), (0.8, 0.6), (0.7, 0.7), (0.65, 0.7), (0.6, 0.75)],
    # (fog strength, plasma wibble decay)
    "fog": [(1.5, 2), (2.0, 2), (2.5, 1.7), (2.5, 1.5), (3.0, 1.4)],
    "brightness": [0.1, 0.2, 0.3, 0.4, 0.5],
    "contrast": [0.4, 0.3, 0.2, 0.1, 0.05],
    # (alpha, sigma, affine) in px at the reference size: 28 x (...)
    "elastic_transform": [
        (28 * 2, 28 * 0.7, 28 * 0.1),
        (28 * 2, 28 * 0.08, 28 * 0.2),
        (28 * 0.05, 28 * 0.01, 28 * 0.02),
        (28 * 0.07, 28 * 0.01, 28 * 0.02),
        (28 * 0.12, 28 * 0.01, 28 * 0.02),
    ],
    "pixelate": [0.6, 0.5, 0.4, 0.3, 0.25],
    "jpeg_compression": [25, 18, 15, 10, 7],
}

_CIFAR: dict[str, list[Any]] = {
    "gaussian_noise": [0.04, 0.06, 0.08, 0.09, 0.10],
    "shot_noise": [500, 250, 100, 75, 50],
    "impulse_noise": [0.01, 0.02, 0.03, 0.05, 0.07],
    "defocus_blur": [(0.3, 0.4), (0.4, 0.5), (0.5, 0.6), (1, 0.2), (1.5, 0.1)],
    "glass_blur": [(0.05, 1, 1), (0.25, 1, 1), (0.4, 1, 1), (0.25, 1, 2), (0.4, 1, 2)],
    "motion_blur": [(6, 1), (6, 1.5), (6, 2), (8, 2), (9, 2.5)],
    "zoom_blur": [np.arange(1, top, 0.01) for top in (1.06, 1.11, 1.16, 1.21, 1.26)],
    "snow": [
        (0.1, 0.2, 1, 0.6, 8, 3, 0.95),
        (0.1, 0.2, 1, 0.5, 10, 4, 0.9),
        (0.15, 0.3, 1.75, 0.55, 10, 4, 0.9),
        (0.25, 0.3, 2.25, 0.6, 12, 6, 0.85),
        (0.3, 0.3, 1.25, 0.65, 14, 12, 0.8),
    ],
    "frost": [(1, 0.2), (1, 0.3), (0.9, 0.4), (0.85, 0.4), (0.75, 0.45)],
    "fog": [(0.2, 3), (0.5, 3), (0.75, 2.5), (1, 2), (1.5, 1.75)],
    "brightness": [0.05, 0.1, 0.15, 0.2, 0.3],
    "contrast": [0.75, 0.5, 0.4, 0.3, 0.15],
    "elastic_transform": [
        (32 * 0, 32 * 0, 32 * 0.08),
        (32 * 0.05, 32 * 0.2, 32 * 0.07),
        (32 * 0.08, 32 * 0.06, 32 * 0.06),
        (32 * 0.1, 32 * 0.04, 32 * 0.05),
        (32 * 0.1, 32 * 0.03, 32 * 0.03),
    ],
    "pixelate": [0.95, 0.9, 0.85, 0.75, 0.65],
    "jpeg_compression": [80, 65, 58, 50, 40],
}

_TABLE_DATA = {"mnist": _MNIST, "cifar": _CIFAR}


def resolve_table(params: str, channels: int) -> str:
    """The table name for ``params`` (``auto``/``mnist``/``cifar``) and a channel count."""
    if params == "auto":
        if channels == 1:
            return "mnist"
        if channels == 3:
            return "cifar"
        raise ValueError(f"shifts.params 'auto' needs 1 or 3 channels, got {channels}")
    if params not in TABLES:
        raise ValueError(f"shifts.params: {params!r} is not one of ['auto', 'mnist', 'cifar']")
    return params


def table_entry(table: str, corruption: str, severity: int) -> Any:
    """The parameter of ``corruption`` at ``severity`` in ``table`` (docs/shifts.md, reading R1)."""
    if table not in _TABLE_DATA:
        raise ValueError(f"unknown parameter table {table!r}; known: {list(TABLES)}")
    if corruption not in _TABLE_DATA[table]:
        raise ValueError(f"unknown corruption {corruption!r}; known: {list(CORRUPTIONS)}")
    if severity not in SEVERITIES:
        raise ValueError(f"severity must be one of {list(SEVERITIES)}, got {severity!r}")
    return _TABLE_DATA[table][corruption][severity - 1]


def scale_factor(table: str, height: int, width: int) -> float:
    """Spatial scale ``s = sqrt(H * W) / reference side`` (1 for 28x28 mnist, 32x32 cifar).

    Pixel-valued parameters (blur radii and sigmas, glass swap distance, motion radius, snow
    flake size, elastic alpha/sigma/affine) are multiplied by ``s``; relative parameters (zoom
    factors, pixelate ratio, fog/frost fields generated at the image size) are not.
    """
    return float(np.sqrt(height * width) / REFERENCE_SIZE[table])
