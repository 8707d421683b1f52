"""Train the local models of a zoo bundle in one process; resolve its other rows (docs/zoo.md)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from labelfree.device import resolve_device
from labelfree.joblog import progress
from labelfree.seeds import derive_seed
from labelfree.store import read_image_set
from labelfree.zoo.io import save_model
from labelfree.zoo.pretrained import resolve_row
from labelfree.zoo.train import (
    TrainResult,
    TrainSpec,
    epoch_family,
    train_family,
    validation_split,
)

log = logging.getLogger(__name__)


def train_local_zoo(
    zoo: str,
    rows: list[dict[str, Any]],
    train_path: str | Path,
    out_dirs: list[str | Path],
    val_fraction: float,
    base_seed: int,
    device: str = "cpu",
    progress_file: Any = None,
) -> list[dict[str, Any]]:
    """Train ``rows`` (normalised sheet rows, source ``local``) on the split at ``train_path``.

    The validation split is shared by the zoo: seeded by ``derive_seed(base_seed, zoo, "val")``.
    Writes each model to the matching ``out_dirs`` entry; returns the list of meta dicts. Rows
    that differ only in ``epochs`` are trained as one run, each saved at its epoch
    (:func:`labelfree.zoo.train.train_family`: the same weights as training it alone).
    """
    if len(rows) != len(out_dirs):
        raise ValueError(f"zoo {zoo}: {len(rows)} rows but {len(out_dirs)} output directories")
    data = read_image_set(train_path)
    if len(data) == 0:
        raise ValueError(f"{train_path}: the training split of zoo {zoo} is empty (0 images); "
                         "check the dataset's `splits`")
    multi = data.y.ndim == 2
    num_classes = int(data.y.shape[1]) if multi else int(data.y.max()) + 1
    tr, va = validation_split(data.y, val_fraction, derive_seed(base_seed, zoo, "val"))
    x_tr, y_tr, x_va, y_va = data.x[tr], data.y[tr], data.x[va], data.y[va]
    dev = resolve_device(device, key=f"zoos.{zoo}.train_device")
    log.info(
        "zoo %s: %d local models on %s (%d train / %d val images, %d classes, %s)",
        zoo, len(rows), train_path, len(tr), len(va), num_classes, dev,
    )
    recipes = [TrainSpec.from_row(row) for row in rows]
    # rows that differ only in `epochs` are checkpoints of one run: train it once
    families: dict[TrainSpec, list[int]] = {}
    for i, recipe in enumerate(recipes):
        families.setdefault(epoch_family(recipe), []).append(i)
    total_epochs = sum(max(recipes[i].epochs for i in idx) for idx in families.values())
    metas: list[dict[str, Any]] = [{} for _ in rows]
    with progress(
        total=total_epochs, desc=f"train {zoo}", unit="epoch", file=progress_file
    ) as bar:
        for family, idx in families.items():
            longest = max(idx, key=lambda i: recipes[i].epochs)
            bar.set_description(f"train {zoo}/{rows[longest]['model']}")
            runs = train_family(
                [recipes[i].epochs for i in idx], family, x_tr, y_tr, x_va, y_va,
                num_classes=num_classes, device=dev, progress=bar,
            )
            for i in idx:
                metas[i] = _save_trained(zoo, rows[i], out_dirs[i], runs[recipes[i].epochs],
                                         train_path, len(tr), len(va), val_fraction, base_seed)
    return metas


def _save_trained(
    zoo: str, row: dict[str, Any], out: str | Path, res: TrainResult, train_path: str | Path,
    n_train: int, n_val: int, val_fraction: float, base_seed: int,
) -> dict[str, Any]:
    """Write one trained model and its meta.json (with the zoo's training data); return the meta."""
    meta = {
        "model": row["model"],
        "zoo": zoo,
        **res.meta,
        "train_data": {
            "path": str(train_path),
            "n_train": int(n_train),
            "n_val": int(n_val),
            "val_fraction": float(val_fraction),
            "val_seed": int(derive_seed(base_seed, zoo, "val")),
        },
    }
    meta = save_model(out, res.model, meta)
    log.info(
        "%s: val_accuracy=%s params=%d time=%.2fs",
        row["model"],
        "n/a" if meta["val_accuracy"] is None else f"{meta['val_accuracy']:.4f}",
        meta["params"],
        meta["train_time_s"],
    )
    return meta


def build_bundle(
    zoo: str,
    rows: list[dict[str, Any]],
    out_dirs: list[str | Path],
    train_path: str | Path | None,
    idset_path: str | Path | None,
    val_fraction: float,
    base_seed: int,
    device: str = "cpu",
    progress_file: Any = None,
) -> list[dict[str, Any]]:
    """Build one bundle of a zoo (docs/zoo.md, bundles): train its local rows on ``train_path``
    and resolve its torchvision/hub/checkpoint rows (input shape and classes from the ``id`` set
    at ``idset_path``). Each model depends on its own row only, so a model is the same whichever
    bundle it is built in. Returns the meta dicts in row order.
    """
    if len(rows) != len(out_dirs):
        raise ValueError(f"zoo {zoo}: {len(rows)} rows but {len(out_dirs)} output directories")
    local = [i for i, r in enumerate(rows) if r["source"] == "local"]
    other = [i for i, r in enumerate(rows) if r["source"] != "local"]
    metas: dict[int, dict[str, Any]] = {}
    if local:
        if train_path is None:
            raise ValueError(f"zoo {zoo}: local models need the training split")
        trained = train_local_zoo(
            zoo, [rows[i] for i in local], train_path, [out_dirs[i] for i in local],
            val_fraction, base_seed, device, progress_file,
        )
        metas.update(zip(local, trained, strict=True))
    if other:
        if idset_path is None:
            raise ValueError(f"zoo {zoo}: pretrained/checkpoint models need the id test set")
        ids = read_image_set(idset_path)
        if len(ids) == 0:  # the test set is at fault, not the models resolved against it
            raise ValueError(f"{idset_path}: the id test set is empty (0 images); zoo {zoo} "
                             "takes its input shape and classes from it. Check the dataset's "
                             "`splits` and `test_split`")
        in_shape = tuple(int(s) for s in ids.x.shape[1:])
        num_classes = int(ids.y.shape[1]) if ids.y.ndim == 2 else int(ids.y.max()) + 1
        for i in other:
            meta = resolve_row(zoo, rows[i], out_dirs[i], ".", in_shape, num_classes)
            log.info("%s: %s %s -> %s (%d params)", rows[i]["model"], rows[i]["source"],
                     rows[i]["weights"], out_dirs[i], meta["params"])
            metas[i] = meta
    return [metas[i] for i in range(len(rows))]
