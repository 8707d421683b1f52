"""Prediction zoos: a user's arrays instead of models (ARCHITECTURE.md, "Users' zoos").

A prediction zoo is a folder, laid out so that a listing of it is the zoo::

    <root>/predictions/<model>/<testset>.npy|.npz|.csv   (N, K) logits or probabilities
    <root>/labels/<testset>.npy|.csv                     optional, (N,) int class ids
    <root>/features/<model>/<testset>.<layer>.npy        optional, (N, D) features

An ``.npz`` holds its matrix under ``logits`` or ``probs`` (and may carry ``feat_<layer>``
arrays). ``kind`` says what the matrices are: ``logits``, ``probabilities`` or ``auto``
(probabilities when every row is non-negative and sums to 1). Probabilities enter the
pipeline as their logarithm, so that softmax gives them back: every study that reads logits
reads these unchanged.

Everything is validated before any job runs (:func:`scan`); each message names the file and
the model. Reading never unpickles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

#: Accepted array files, in order of preference when a test set has several.
EXTENSIONS = (".npy", ".npz", ".csv")
KINDS = ("auto", "logits", "probabilities")
#: Tolerance on row sums for probabilities (float32 softmax outputs sum to 1 within ~1e-6).
SUM_TOL = 1e-3


class PredictionZooError(ValueError):
    """A prediction zoo's folder or one of its files breaks the layout; names the culprit."""


@dataclass(frozen=True)
class PredictionZoo:
    """What :func:`scan` found: models, test sets, classes and rows, all checked."""

    root: Path
    models: list[str]
    testsets: list[str]
    num_classes: int
    rows: dict[str, int]
    kind: dict[str, str] = field(default_factory=dict)  # model -> logits | probabilities
    labelled: list[str] = field(default_factory=list)
    features: dict[str, list[str]] = field(default_factory=dict)  # model -> layers

    def prediction_file(self, model: str, testset: str) -> Path:
        return _find(self.root / "predictions" / model, testset)

    def label_file(self, testset: str) -> Path | None:
        return _find(self.root / "labels", testset) if testset in self.labelled else None


def _find(folder: Path, stem: str) -> Path:
    hits = [folder / f"{stem}{ext}" for ext in EXTENSIONS if (folder / f"{stem}{ext}").is_file()]
    if not hits:
        raise PredictionZooError(f"{folder}: no {stem}{{{','.join(EXTENSIONS)}}} file")
    if len(hits) > 1:
        raise PredictionZooError(
            f"{folder}: test set {stem!r} has several files {[h.name for h in hits]}; keep one"
        )
    return hits[0]


def read_matrix(path: str | Path) -> tuple[np.ndarray, str | None]:
    """Read one (N, K) matrix; return it as float64 and what the file says it is, if anything.

    npz: the array ``logits`` or ``probs`` (the key states the kind); npy: the array; csv: a
    headerless comma-separated table. Raises PredictionZooError naming the file.
    """
    p = Path(path)
    declared: str | None = None
    try:
        if p.suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                keys = [k for k in ("logits", "probs") if k in z.files]
                if len(keys) != 1:
                    raise PredictionZooError(
                        f"{p}: an npz must hold exactly one of 'logits' or 'probs'; has {z.files}"
                    )
                declared = "logits" if keys[0] == "logits" else "probabilities"
                arr = z[keys[0]]
        elif p.suffix == ".npy":
            arr = np.load(p, allow_pickle=False)
        elif p.suffix == ".csv":
            arr = np.loadtxt(p, delimiter=",", ndmin=2, dtype=np.float64)
        else:
            raise PredictionZooError(f"{p}: unknown extension; use one of {EXTENSIONS}")
    except PredictionZooError:
        raise
    except (OSError, ValueError, EOFError) as exc:
        raise PredictionZooError(f"{p}: not readable as an array ({exc})") from None
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise PredictionZooError(f"{p}: expected an (N, K) matrix with K >= 2, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number):
        raise PredictionZooError(f"{p}: expected numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        bad = int((~np.isfinite(arr)).any(axis=1).sum())
        raise PredictionZooError(f"{p}: {bad} row(s) hold NaN or infinite values")
    return arr, declared


def is_probabilities(arr: np.ndarray) -> bool:
    """Rows non-negative and summing to 1 (within SUM_TOL)."""
    return bool((arr >= 0).all() and np.abs(arr.sum(axis=1) - 1).max(initial=0) <= SUM_TOL)


def to_logits(arr: np.ndarray, kind: str, where: str) -> np.ndarray:
    """float32 logits from a validated matrix: probabilities become log-probabilities
    (softmax(log p) = p), logits pass unchanged. ``where`` names the file in errors."""
    if kind == "probabilities":
        if not is_probabilities(arr):
            worst = float(np.abs(arr.sum(axis=1) - 1).max())
            raise PredictionZooError(
                f"{where}: declared probabilities, but rows are negative or do not sum to 1 "
                f"(largest |sum - 1| = {worst:.3g}, tolerance {SUM_TOL})"
            )
        with np.errstate(divide="ignore"):
            out = np.log(arr)
        # log 0 = -inf would poison means; the smallest float32 log-probability stands in.
        return np.maximum(out, np.log(np.finfo(np.float32).tiny)).astype(np.float32)
    return arr.astype(np.float32)


def read_labels(path: str | Path, rows: int, num_classes: int) -> np.ndarray:
    """(N,) int64 class ids in [0, K), checked against the test set's rows; names the file."""
    p = Path(path)
    try:
        y = (np.load(p, allow_pickle=False) if p.suffix == ".npy"
             else np.loadtxt(p, delimiter=",", ndmin=1))
    except (OSError, ValueError, EOFError) as exc:
        raise PredictionZooError(f"{p}: labels not readable ({exc})") from None
    y = np.asarray(y)
    if y.ndim == 2 and 1 in y.shape:  # a single csv column or row
        y = y.reshape(-1)
    if y.ndim != 1 or len(y) != rows:
        raise PredictionZooError(f"{p}: expected {rows} labels (one per row), got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.number) or not np.all(np.isfinite(y)) \
            or not np.all(y == np.round(y)):
        raise PredictionZooError(f"{p}: labels must be integer class ids")
    y = y.astype(np.int64)
    if len(y) and (y.min() < 0 or y.max() >= num_classes):
        raise PredictionZooError(
            f"{p}: labels must lie in [0, {num_classes}) (K from the predictions); "
            f"found {y.min()}..{y.max()}"
        )
    return y


def scan(root: str | Path, kind: str = "auto") -> PredictionZoo:
    """List and validate a whole prediction zoo; raise one error naming the first culprit.

    Checks: the layout; every model has the same test sets; each file reads as a finite
    (N, K) matrix; K equal across all files; N equal across models per test set; the kind
    (declared, given, or detected per model); labels, when present, one per row in [0, K).
    Each file is read once, here, before any job runs.
    """
    if kind not in KINDS:
        raise PredictionZooError(f"prediction zoo kind {kind!r}: use one of {KINDS}")
    base = Path(root)
    pred = base / "predictions"
    if not pred.is_dir():
        raise PredictionZooError(
            f"{base}: a prediction zoo needs a folder predictions/<model>/<testset>.npy "
            f"(see docs/your-zoo.md); {pred} does not exist"
        )
    models = sorted(d.name for d in pred.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not models:
        raise PredictionZooError(f"{pred}: no model folders")
    sets: dict[str, list[str]] = {
        m: sorted({f.stem for f in (pred / m).iterdir() if f.suffix in EXTENSIONS})
        for m in models
    }
    testsets = sets[models[0]]
    for m in models:
        if not sets[m]:
            raise PredictionZooError(f"{pred / m}: model {m!r} has no prediction files")
        if sets[m] != testsets:
            diff = sorted(set(sets[m]) ^ set(testsets))
            raise PredictionZooError(
                f"{pred / m}: model {m!r} has test sets {sets[m]}, model {models[0]!r} has "
                f"{testsets} (differ in {diff}); every model needs the same test sets"
            )
    num_classes: int | None = None
    rows: dict[str, int] = {}
    kinds: dict[str, str] = {}
    for m in models:
        model_kinds = set()
        for t in testsets:
            path = _find(pred / m, t)
            arr, declared = read_matrix(path)
            if num_classes is None:
                num_classes = arr.shape[1]
            elif arr.shape[1] != num_classes:
                raise PredictionZooError(
                    f"{path}: model {m!r} has K = {arr.shape[1]} classes, the zoo has "
                    f"{num_classes} (from {_find(pred / models[0], testsets[0])})"
                )
            if t in rows and arr.shape[0] != rows[t]:
                raise PredictionZooError(
                    f"{path}: model {m!r} has {arr.shape[0]} rows on {t!r}, model "
                    f"{models[0]!r} has {rows[t]}; every model must score the same inputs in "
                    "the same order"
                )
            rows.setdefault(t, arr.shape[0])
            k = declared or (kind if kind != "auto" else
                             ("probabilities" if is_probabilities(arr) else "logits"))
            to_logits(arr, k, f"{path} (model {m!r})")  # validates declared probabilities
            model_kinds.add(k)
        if len(model_kinds) > 1:
            raise PredictionZooError(
                f"{pred / m}: model {m!r} mixes logits and probabilities across test sets; "
                "set the zoo's kind or store one kind"
            )
        kinds[m] = model_kinds.pop()
    labelled: list[str] = []
    lab = base / "labels"
    if lab.is_dir():
        stray = sorted({f.stem for f in lab.iterdir() if f.suffix in (".npy", ".csv")}
                       - set(testsets))
        if stray:
            raise PredictionZooError(f"{lab}: labels for unknown test set(s) {stray}; "
                                     f"test sets are {testsets}")
        for t in testsets:
            for ext in (".npy", ".csv"):
                if (lab / f"{t}{ext}").is_file():
                    read_labels(lab / f"{t}{ext}", rows[t], int(num_classes))
                    labelled.append(t)
                    break
    features: dict[str, list[str]] = {}
    feat = base / "features"
    for m in models:
        folder = feat / m
        if not folder.is_dir():
            continue
        layers = sorted({f.name.split(".")[1] for f in folder.glob("*.*.npy")})
        for layer in layers:
            for t in testsets:
                fpath = folder / f"{t}.{layer}.npy"
                if not fpath.is_file():
                    raise PredictionZooError(f"{fpath}: model {m!r} has {layer!r} features for "
                                             f"some test sets but not {t!r}")
                f = np.load(fpath, mmap_mode="r", allow_pickle=False)
                if f.ndim != 2 or f.shape[0] != rows[t]:
                    raise PredictionZooError(f"{fpath}: expected ({rows[t]}, D) features, got "
                                             f"shape {f.shape}")
        features[m] = layers
    return PredictionZoo(base, models, testsets, int(num_classes), rows, kinds, labelled, features)


def load_logits(zoo: PredictionZoo, model: str, testset: str) -> np.ndarray:
    """float32 (N, K) logits of ``model`` on ``testset`` (probabilities as log-probabilities)."""
    path = zoo.prediction_file(model, testset)
    arr, _ = read_matrix(path)
    return to_logits(arr, zoo.kind[model], f"{path} (model {model!r})")


def load_labels(zoo: PredictionZoo, testset: str) -> np.ndarray | None:
    path = zoo.label_file(testset)
    return None if path is None else read_labels(path, zoo.rows[testset], zoo.num_classes)


def load_features(zoo: PredictionZoo, model: str, testset: str, layer: str) -> np.ndarray:
    return np.load(zoo.root / "features" / model / f"{testset}.{layer}.npy", allow_pickle=False)
