"""A zoo's scorecard inputs from the workflow's artefacts (labelfree.store): per labelled test set,
logits, probabilities, labels and, where asked for, each model's features (docs/methods.md, reading R1:
probs, optional logits and penultimate features; labels per set)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

import numpy as np

from labelfree import store
from labelfree.numerics import softmax


@dataclass
class ZooArrays:
    """What :func:`labelfree.scorecard.core.score_zoo` takes, per scored test set."""

    probs: dict[str, np.ndarray] = field(default_factory=dict)  # (M, N, K) float64
    logits: dict[str, np.ndarray] = field(default_factory=dict)  # (M, N, K) float32
    labels: dict[str, np.ndarray] = field(default_factory=dict)  # (N,) int64
    kinds: dict[str, str] = field(default_factory=dict)
    features: dict[str, list[np.ndarray]] | None = None  # M arrays (N, D_m) float32
    skipped: dict[str, str] = field(default_factory=dict)  # set -> "unlabelled" | "multi-label"

    def why_unscored(self) -> str:
        """Why no set is left to score (empty when one is): the scorecard's truth is
        ``mean(argmax P == y)`` on labels of shape (N,) (readings R1, R2); a multi-hot
        label has no such accuracy, and no other metric is substituted for it."""
        if self.probs:
            return ""
        multi = [t for t, why in self.skipped.items() if why == "multi-label"]
        if multi:
            return (f"multi-label labels only ({', '.join(multi)}): the scorecard's accuracy, "
                    "argmax == label (docs/methods.md, readings R1-R2), is not defined for multi-hot "
                    "labels, so no method is scored")
        return "no labelled test set to score"


def read_zoo(
    files: Mapping[str, Sequence[str | PathLike[str]]],
    testsets: Sequence[str],
    label_files: Sequence[str | PathLike[str]],
    kinds: Mapping[str, str],
    layer: str | None = None,
) -> ZooArrays:
    """Read every labelled single-label test set of ``testsets`` (``files``: test set -> each
    model's inference file; ``label_files``: the test sets' artefacts, same order). With
    ``layer``, each model's ``feat_<layer>`` features too (Dispersion needs them on every set,
    FD on the source set as well); unlabelled or multi-label sets are left out, logged."""
    out = ZooArrays(features={} if layer else None)
    with store.open_inference_files() as read:  # each model's group file opened once
        for t, path in zip(testsets, label_files, strict=True):
            y = store.read_labels(path)
            if y is None or y.ndim != 1:
                out.skipped[t] = "unlabelled" if y is None else "multi-label"
                logging.info("%s: %s test set, not scored", t, out.skipped[t])
                continue
            out.logits[t] = store.stack_logits(files[t], t, read)
            out.probs[t] = softmax(out.logits[t].astype(np.float64))
            out.labels[t], out.kinds[t] = y, kinds[t]
            if layer and out.features is not None:
                out.features[t] = [store.read_features(f, layer, t) for f in files[t]]
    return out


def model_sizes(meta_files: Sequence[str | PathLike[str]]) -> list[float] | None:
    """Each model's parameter count from its ``meta.json`` (key ``params``, in model order), for
    the model-size ranking baseline; None when some model's meta gives none (e.g. a prediction
    zoo's models)."""
    sizes = []
    for path in meta_files:
        with open(path) as fh:
            n = json.load(fh).get("params")
        if not isinstance(n, int | float) or isinstance(n, bool):
            return None
        sizes.append(float(n))
    return sizes


@dataclass(frozen=True)
class MethodOutputs:
    """The label-free methods' outputs of one zoo's scorecard (``Scorecard.outputs``), as its job
    writes them once for the zoo's answer to read instead of recomputing: (kind, method, set) ->
    (M,) float64 for the models ``models``, computed with ``source`` (None: none) as the labelled
    source set of every estimator's context."""

    models: tuple[str, ...]
    source: str | None
    values: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)

    def get(self, kind: str, method: str, testset: str, models: Sequence[str],
            source: str | None = None) -> np.ndarray | None:
        """The stored output, or None where there is none for these models, or (an estimate:
        estimators read the source set) it was computed with another source set."""
        if tuple(models) != self.models or (kind == "estimate" and source != self.source):
            return None
        return self.values.get((kind, method, testset))


def save_method_outputs(path: str | PathLike[str], outputs: MethodOutputs) -> None:
    """Write ``outputs`` to an npz (no pickles: names as string arrays, values as one (n, M)
    float64 array in key order); an output of another shape than (M,) is left out (a reader
    recomputes it)."""
    m = len(outputs.models)
    keys = [k for k, v in outputs.values.items() if np.shape(v) == (m,)]
    store.save_npz(
        path, models=np.array(outputs.models, dtype=str),
        source=np.array([] if outputs.source is None else [outputs.source], dtype=str),
        keys=np.array(keys, dtype=str).reshape(len(keys), 3),
        values=(np.stack([np.asarray(outputs.values[k], dtype=np.float64) for k in keys])
                if keys else np.empty((0, m))))


def read_method_outputs(path: str | PathLike[str]) -> MethodOutputs:
    """The :class:`MethodOutputs` :func:`save_method_outputs` wrote to ``path``."""
    z = store.load_npz(Path(path), ("models", "source", "keys", "values"))
    src = [str(x) for x in z["source"]]
    return MethodOutputs(tuple(str(x) for x in z["models"]), src[0] if src else None,
                         {(str(k), str(n), str(t)): v.copy()
                          for (k, n, t), v in zip(z["keys"], z["values"], strict=True)})
