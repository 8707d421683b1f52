"""Accuracy of a zoo on its test sets, read from the inference artefacts (rule accuracy_table,
or the zoo's inference job where one job infers the whole zoo: workflow/rules/inference.smk).

Kept apart from :mod:`labelfree.inference` so that the accuracy job imports neither torch nor
the models: a job's interpreter start is most of its cost on small zoos.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labelfree import plots
from labelfree.store import (
    load_json,
    open_inference_files,
    read_labels,
    save_figure,
    save_table,
)


class AccuracyError(ValueError):
    """Inference artefacts that do not fit the test set's labels, naming the file at fault."""


def accuracy_long(
    models: Sequence[str],
    testsets: Sequence[str],
    infer_paths: Sequence[Sequence[str | Path]],
    label_paths: Sequence[str | Path],
) -> Any:
    """Long table ``model, testset, n, accuracy`` from inference artefacts and test-set labels.

    ``infer_paths[i][j]``: the inference file (of a test-set group) holding model i on test set j.

    Single-label sets: top-1 accuracy. Multi-hot labels: exact-match accuracy at logit 0.
    """
    with open_inference_files() as read:  # a group file holds many sets: opened once
        return _accuracy_rows(models, testsets, infer_paths, label_paths, read)


def _accuracy_rows(
    models: Sequence[str], testsets: Sequence[str], infer_paths: Sequence[Sequence[str | Path]],
    label_paths: Sequence[str | Path], read: Any,
) -> Any:
    """:func:`accuracy_long`'s table, reading logits with ``read(path, testset)``."""
    rows = []
    for j, ts in enumerate(testsets):
        y = read_labels(label_paths[j])
        logits_of = [read(infer_paths[i][j], ts) for i in range(len(models))]
        if y is not None and y.ndim == 1 and len(y):
            _check_label_range(y, logits_of, models, [p[j] for p in infer_paths], label_paths[j])
        for i, m in enumerate(models):
            logits = logits_of[i]
            if y is None:  # an unlabelled test set (prediction zoos): no accuracy
                rows.append({"model": m, "testset": ts, "n": int(len(logits)),
                             "accuracy": float("nan")})
                continue
            if len(logits) != len(y):
                raise AccuracyError(
                    f"{infer_paths[i][j]}: {len(logits)} rows but {label_paths[j]} has {len(y)} labels"
                )
            if y.ndim == 2:
                acc = float(((logits > 0) == (y > 0)).all(axis=1).mean()) if len(y) else float("nan")
            else:
                acc = float((logits.argmax(1) == y).mean()) if len(y) else float("nan")
            rows.append({"model": m, "testset": ts, "n": int(len(y)), "accuracy": acc})
    return pd.DataFrame(rows)


def _check_label_range(
    y: np.ndarray, logits: Sequence[np.ndarray], models: Sequence[str],
    paths: Sequence[str | Path], label_path: str | Path,
) -> None:
    """Labels beyond some model's K: blame the models whose output layer is too small when
    another model of the zoo covers the labels, else the labels (or every model alike)."""
    top, low = int(y.max()), int(y.min())
    ks = [lg.shape[1] for lg in logits]
    if low >= 0 and top < min(ks):
        return
    short = [i for i, k in enumerate(ks) if k <= top]
    if low >= 0 and len(short) < len(ks):
        i = short[0]
        others = sorted({ks[j] for j in range(len(ks)) if j not in short})
        raise AccuracyError(
            f"{paths[i]}: model {models[i]!r} gives {ks[i]} logits per input, but the labels of "
            f"{label_path} reach class {top} and other models of the zoo give {others}; the "
            f"model's output layer does not match the dataset's classes"
            + (f" (also: {[models[j] for j in short[1:]]})" if len(short) > 1 else "")
        )
    raise AccuracyError(
        f"{label_path}: labels out of range [0, {min(ks)}) (min {low}, max {top}); every model "
        f"of the zoo gives {sorted(set(ks))} logits, so either these labels or all the models' "
        "output layers are wrong"
    )


def accuracy_wide(long: Any, metas: Sequence[dict[str, Any]] | None = None) -> Any:
    """Wide table: one row per model (sheet order), one column per test set (zoo order).

    Leading columns ``model, arch, params, val_accuracy`` come from the models' meta.json.
    """
    models = list(dict.fromkeys(long["model"]))
    testsets = list(dict.fromkeys(long["testset"]))
    wide = long.pivot(index="model", columns="testset", values="accuracy")
    wide = wide.loc[models, testsets].reset_index()
    wide.columns.name = None
    if metas is not None:
        info = pd.DataFrame(
            {
                "model": [m.get("model") for m in metas],
                "arch": [m.get("arch") for m in metas],
                "params": [m.get("params") for m in metas],
                "val_accuracy": [m.get("val_accuracy") for m in metas],
            }
        )
        wide = info.merge(wide, on="model", how="right")
    return wide


def accuracy_heatmap(wide: Any, testsets: Sequence[str], title: str = "") -> Any:
    """Heatmap figure of a wide accuracy table (models x test sets); returns the figure."""
    values = wide[list(testsets)].to_numpy(dtype=float)
    width = min(3.0 + 0.12 * len(testsets), 22.0)
    height = min(1.2 + 0.18 * len(wide), 16.0)
    fig, ax = plots.figure(width=width, height=height)
    plots.heatmap(
        ax, values, wide["model"].tolist(), list(testsets), vmin=0.0, vmax=1.0,
        colorbar_label="accuracy",
    )
    if title:
        ax.set_title(title)
    return fig


def write_accuracy_table(
    zoo: str,
    models: Sequence[str],
    testsets: Sequence[str],
    groups: Mapping[str, str],
    infer_pattern: str,
    label_paths: Sequence[str | Path],
    meta_paths: Sequence[str | Path],
    csv: str | Path,
    md: str | Path,
    png: str | Path,
    pdf: str | Path,
) -> None:
    """The zoo's accuracy table (csv + md) and heatmap (png + pdf), read from its inference
    files: model m's file of test set t is ``infer_pattern.format(model=m, group=groups[t])``;
    ``label_paths`` and ``meta_paths`` follow ``testsets`` and ``models``."""
    grid = [[infer_pattern.format(model=m, group=groups[t]) for t in testsets] for m in models]
    long = accuracy_long(models, testsets, grid, list(label_paths))
    wide = accuracy_wide(long, [load_json(p) for p in meta_paths])
    save_table(
        wide, csv, md,
        title=f"Accuracy of every model of zoo '{zoo}' (rows) on every test set (columns)",
    )
    fig = accuracy_heatmap(wide, testsets, title=f"zoo {zoo}: accuracy per test set")
    save_figure(fig, png, pdf)
    logging.info("%d models x %d test sets; mean accuracy %.4f", len(wide), len(testsets),
                 long["accuracy"].mean())
