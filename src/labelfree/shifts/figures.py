"""Example figure of a dataset's shifted test sets (the -C benchmarks' overview figure,
Hendrycks & Dietterich 2019 Fig. 1, for our sets): one image under every configured corruption
and severity, plus the natural shifts."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from os import PathLike

import numpy as np

from labelfree.plots import figure
from labelfree.store import read_image_set, save_figure


def example_grid(
    clean: np.ndarray,
    corrupted: Mapping[str, Mapping[int, np.ndarray]],
    natural: Mapping[str, np.ndarray],
    severities: Sequence[int],
    index: int = 0,
):
    """A figure: rows = corruptions (columns: clean, then each severity) and, last, the natural
    shifts side by side. Arrays are uint8 NHWC test sets; ``index`` picks the image shown."""
    severities = list(severities)
    ncols = max(len(severities), len(natural)) + 1
    nrows = len(corrupted) + (1 if natural else 0)
    fig, axes = figure(ncols=ncols, nrows=max(nrows, 1), width=0.9, height=0.9, squeeze=False)
    for ax in axes.ravel():
        ax.axis("off")

    def show(ax, img, title=None):
        img = img[..., 0] if img.shape[-1] == 1 else img
        ax.imshow(img, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
        if title:
            ax.set_title(title, fontsize=6)

    for r, (name, by_sev) in enumerate(corrupted.items()):
        show(axes[r, 0], clean[index], "clean" if r == 0 else None)
        axes[r, 0].text(
            -0.1, 0.5, name, transform=axes[r, 0].transAxes, fontsize=6, ha="right", va="center"
        )
        for c, s in enumerate(severities, start=1):
            show(axes[r, c], by_sev[s][index], f"severity {s}" if r == 0 else None)
    if natural:
        r = nrows - 1
        show(axes[r, 0], clean[index], "clean")
        for c, (name, x) in enumerate(natural.items(), start=1):
            show(axes[r, c], x[index], name.removeprefix("natural-"))
        axes[r, 0].text(
            -0.1,
            0.5,
            "natural",
            transform=axes[r, 0].transAxes,
            fontsize=6,
            ha="right",
            va="center",
        )
    fig.subplots_adjust(left=0.2, wspace=0.05, hspace=0.3)
    return fig


def write_example_figure(
    id_path: str | PathLike[str],
    corrupted_paths: Sequence[str | PathLike[str]],
    natural_paths: Sequence[str | PathLike[str]],
    corruptions: Sequence[str],
    severities: Sequence[int],
    natural: Sequence[str],
    png: str | PathLike[str],
    pdf: str | PathLike[str],
    index: int = 0,
) -> None:
    """The example figure of one dataset (:func:`example_grid`), from its written test sets:
    ``corrupted_paths`` in corruption-major, severity-minor order, ``natural_paths`` in the
    order of ``natural``. Both the examples job and the merged shifts job call it, so the
    figure is the same file whichever job drew it (docs/shifts.md)."""
    clean = read_image_set(id_path).x
    paths = iter(corrupted_paths)
    corrupted = {c: {s: read_image_set(next(paths)).x for s in severities} for c in corruptions}
    shifted = {n: read_image_set(f).x for n, f in zip(natural, natural_paths, strict=True)}
    fig = example_grid(clean, corrupted, shifted, severities, index=index)
    save_figure(fig, png, pdf)
    logging.info("%s: %d corruptions, %d natural shifts", png, len(corrupted), len(shifted))
