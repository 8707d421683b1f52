"""The per-zoo LaF study: read inference artefacts, run every method on every test set, write raw.

Spec sections 6 and 8. A zoo is analysed as stored, or as a clone control (section 8): the models
of a base zoo plus identical copies of one weak model of another zoo, built here from the stored
predictions (no training; the copies are the same model's outputs repeated).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from labelfree import store
from labelfree.laf.baselines import softmax
from labelfree.laf.experiment import StudyParams, analyse_testset, classify_testset
from labelfree.laf.metrics import ground_truth_accuracy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SetInputs:
    """Where one test set's artefacts are: the inference file (of its group) of each model, and
    the labels; the file holds test set ``name`` among others (labelfree.store.read_logits)."""

    name: str
    infer: tuple[str, ...]
    labels: str


def load_testset(inputs: SetInputs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(predictions (m, n) int64, labels (m,), softmax probabilities (n, m, K) float32)."""
    logits = [store.read_logits(p, inputs.name) for p in inputs.infer]
    shapes = {lg.shape for lg in logits}
    if len(shapes) != 1:
        raise store.ArtefactError(
            f"{inputs.name}: inference outputs differ in shape {sorted(shapes)} ({inputs.infer[0]})"
        )
    y = store.read_image_set(inputs.labels).y
    if y.ndim != 1:
        raise store.ArtefactError(f"{inputs.labels}: LaF needs single-label y, got {y.shape}")
    if y.shape[0] != logits[0].shape[0]:
        raise store.ArtefactError(
            f"{inputs.labels}: {y.shape[0]} labels but {logits[0].shape[0]} inference rows "
            f"in {inputs.infer[0]}"
        )
    probs = np.stack([softmax(lg).astype(np.float32) for lg in logits])
    preds = np.stack([lg.argmax(axis=1) for lg in logits], axis=1).astype(np.int64)
    return preds, y.astype(np.int64), probs


def pick_clone(source_id: SetInputs, target_accuracy: float) -> tuple[int, float]:
    """Index and ID accuracy of the source model whose ID accuracy is nearest to the target."""
    preds, y, _ = load_testset(source_id)
    acc = ground_truth_accuracy(preds, y)
    j = int(np.argmin(np.abs(acc - target_accuracy)))
    return j, float(acc[j])


def run_study(
    zoo: str,
    dataset: str,
    models: Sequence[str],
    testsets: Sequence[SetInputs],
    params: StudyParams,
    seed: int,
    out_dir: str | Path,
    clone: dict | None = None,
) -> None:
    """Analyse one zoo on all its test sets and write ``out_dir``/{metrics.csv.gz, testsets.csv,
    models.csv, rq4.csv, ces_guides.npz}.

    ``clone`` (control zoo): {"source": [SetInputs per test set, same order], "index": j,
    "copies": c, "base_models": N, "name": model id}: the base models (first N) plus c copies of
    source model j.
    """
    out = Path(out_dir)
    rows, infos, model_rows, rq4_rows = [], [], [], []
    guides: dict[str, np.ndarray] = {}
    names = list(models)
    for t_idx, ts in enumerate(testsets):
        preds, y, probs = load_testset(ts)
        if clone is not None:
            keep = clone["base_models"] or preds.shape[1]
            src_preds, src_y, src_probs = load_testset(clone["source"][t_idx])
            if not np.array_equal(src_y, y):
                raise store.ArtefactError(
                    f"clone control {zoo}: test set {ts.name} differs between base and source zoo"
                )
            j, c = clone["index"], clone["copies"]
            preds = np.concatenate([preds[:, :keep], np.repeat(src_preds[:, j : j + 1], c, 1)], 1)
            probs = np.concatenate([probs[:keep], np.repeat(src_probs[j : j + 1], c, 0)], 0)
            names = list(models)[:keep] + [f"{clone['name']}-copy{i}" for i in range(c)]
        K = probs.shape[2]
        group = classify_testset(ts.name)[0]
        res = analyse_testset(
            preds, y, probs, K, names, params, seed, zoo, dataset, ts.name, rq4=group == "id"
        )
        rows += res.rows
        infos.append(res.info)
        model_rows += res.models
        rq4_rows += res.rq4
        guides[ts.name] = res.ces_guides
        log.info(
            "%s/%s: LaF rho=%.3f (%d of %d rows kept, %d EM iterations)",
            zoo,
            ts.name,
            next(r["spearman"] for r in res.rows if r["method"] == "LaF"),
            res.info["m_kept"],
            res.info["m"],
            res.info["iterations"],
        )
    out.mkdir(parents=True, exist_ok=True)
    with store.atomic_path(out / "metrics.csv.gz", suffix=".gz") as tmp:
        pd.DataFrame(rows).to_csv(
            tmp, index=False, float_format="%.6g", compression={"method": "gzip", "mtime": 0}
        )
    with store.atomic_path(out / "testsets.csv") as tmp:
        pd.DataFrame(infos).to_csv(tmp, index=False, float_format="%.6g")
    with store.atomic_path(out / "models.csv") as tmp:
        pd.DataFrame(model_rows).to_csv(tmp, index=False, float_format="%.6g")
    with store.atomic_path(out / "rq4.csv") as tmp:
        pd.DataFrame(rq4_rows).to_csv(tmp, index=False, float_format="%.6g")
    store.save_npz(out / "ces_guides.npz", **{k.replace("-", "_"): v for k, v in guides.items()})
