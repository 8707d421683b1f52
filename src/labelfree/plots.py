"""Shared figure style so every study's figures look alike (non-interactive backend)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

STYLE = {
    "figure.dpi": 100,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "svg.hashsalt": "labelfree",
}


def figure(ncols: int = 1, nrows: int = 1, width: float = 4.0, height: float = 3.0, **kw):
    """A figure with the project style; returns (fig, axes) like ``plt.subplots``."""
    with plt.rc_context(STYLE):
        return plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), **kw)


def heatmap(
    ax,
    values: np.ndarray,
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    cmap: str = "viridis",
    vmin: float | None = None,
    vmax: float | None = None,
    colorbar_label: str = "",
):
    """Draw a labelled heatmap of a (rows, cols) matrix on ``ax``; returns the image."""
    im = ax.imshow(values, aspect="auto", cmap=cmap, vmin=vmin, vmax=vmax, interpolation="nearest")
    ax.set_yticks(range(len(row_labels)), labels=row_labels, fontsize=6)
    ax.set_xticks(range(len(col_labels)), labels=col_labels, fontsize=5, rotation=90)
    ax.grid(False)
    cbar = ax.figure.colorbar(im, ax=ax, fraction=0.03, pad=0.01)
    if colorbar_label:
        cbar.set_label(colorbar_label)
    return im
