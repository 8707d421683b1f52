"""A zoo's scorecard inputs from the workflow's artefacts (labelfree.store): per labelled test set,
logits, probabilities, labels and, where asked for, each model's features (docs/methods.md, reading R1:
probs, optional logits and penultimate features; labels per set)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike

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
    for t, path in zip(testsets, label_files, strict=True):
        y = store.read_labels(path)
        if y is None or y.ndim != 1:
            out.skipped[t] = "unlabelled" if y is None else "multi-label"
            logging.info("%s: %s test set, not scored", t, out.skipped[t])
            continue
        out.logits[t] = store.stack_logits(files[t], t)
        out.probs[t] = softmax(out.logits[t].astype(np.float64))
        out.labels[t], out.kinds[t] = y, kinds[t]
        if layer and out.features is not None:
            out.features[t] = [store.read_features(f, layer, t) for f in files[t]]
    return out
