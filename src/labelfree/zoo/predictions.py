"""Prediction zoos: a user's arrays instead of models (docs/your-zoo.md, section 2; docs/cli.md).

A prediction zoo is a folder, laid out so that a listing of it is the zoo. Two layouts of its
predictions, one per zoo::

    <root>/predictions/<model>/<testset>.npy|.npz|.csv|.pt   one (N, K) matrix per model and set
    <root>/predictions/<testset>.npy|.npz|.pt                or one (M, N, K) tensor per set,
    <root>/predictions/models.txt                            its M model names, one per line
                                                             (or <testset>.models.txt beside it)
    <root>/labels/<testset>.npy|.csv|.pt                     optional, (N,) int class ids
    <root>/features/<model>/<testset>.<layer>.npy            optional, (N, D) features

The tensor layout is the one other tools write: CODA's benchmark stores each task as an (H, N, C)
tensor of probabilities in ``<task>.pt`` (github.com/justinkay/coda, ``coda/datasets.py`` at
3a341d6); the names file says which model each slice is. An ``.npz`` (or a ``.pt`` dict) holds
its array under ``logits`` or ``probs`` (or as its only array). ``kind`` says what the matrices
are: ``logits``, ``probabilities`` or ``auto`` (probabilities when every row of every file of a
model is non-negative and sums to 1; see :func:`classify`). Logits may hold ``-inf`` (the log of
a probability 0, as scikit-learn's ``predict_log_proba`` writes), never NaN or ``+inf``.
Probabilities enter the pipeline as their logarithm, so that softmax gives them back: every
study that reads logits reads these unchanged.

:func:`read_matrix`, :func:`read_models`, :func:`classify`, :func:`check_shapes`,
:func:`read_labels` and :func:`read_feature` are the one reader and validator of prediction
files: the ``labelfree`` command (labelfree.cli) reads its files through them too, with the same
messages.

:func:`scan` validates the whole folder before any job runs and reports every problem in one
message, each naming the file and the model; :func:`import_model` and :func:`import_labels`
(the workflow's import jobs) write the inference and test-set artefacts that studies read
(labelfree.store). Reading never unpickles an object: ``.npy``/``.npz`` without pickles, ``.pt``
through torch's weights-only loader (tensors and dicts of tensors only).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

#: Accepted array files, in order of preference when a test set has several.
EXTENSIONS = (".npy", ".npz", ".csv", ".pt")
#: Accepted files of one (models, inputs, classes) tensor (a csv holds a matrix only).
TENSOR_EXTENSIONS = (".npy", ".npz", ".pt")
LABEL_EXTENSIONS = (".npy", ".csv", ".pt")
#: The names of a tensor's models, one per line: ``<stem>.models.txt`` beside the tensor, else
#: this file in its folder.
MODELS_FILE = "models.txt"
NAMES_SUFFIX = ".models.txt"
KINDS = ("auto", "logits", "probabilities")
#: Tolerance on row sums for probabilities (float32 softmax outputs sum to 1 within ~1e-6).
SUM_TOL = 1e-3
#: log of float32's smallest normal number: where a log-probability of 0 (``-inf``) is floored,
#: relative to its row's maximum, so that means of logits stay finite and softmax gives ~0.
LOG_TINY32 = float(np.log(np.finfo(np.float32).tiny))
#: First header cells of a csv's row-index column (pandas' ``to_csv`` writes an empty one).
INDEX_HEADERS = ("", "unnamed: 0", "index")
#: Model ids as the workflow's `model` wildcard; test-set names without dots (feature files
#: are named <testset>.<layer>.npy).
MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
TESTSET_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+-]*$")
#: Bump when the scan's checks change, so cached scans made by an older version are redone.
SCAN_VERSION = 4


class PredictionZooError(ValueError):
    """A prediction zoo's folder or one of its files breaks the layout; names the culprit."""


@dataclass(frozen=True)
class PredictionZoo:
    """What :func:`scan` found: models, test sets, classes and rows, all checked.

    ``files[model][testset]`` and ``label_files[testset]`` are absolute paths (in the tensor
    layout every model of a test set has the same file, its tensor); ``features[model]`` lists
    the layers whose files exist for every test set of the model.
    """

    root: Path
    models: list[str]
    testsets: list[str]
    num_classes: int
    rows: dict[str, int]
    kind: dict[str, str] = field(default_factory=dict)  # model -> logits | probabilities
    files: dict[str, dict[str, str]] = field(default_factory=dict)
    label_files: dict[str, str] = field(default_factory=dict)
    features: dict[str, list[str]] = field(default_factory=dict)  # model -> layers

    @property
    def labelled(self) -> list[str]:
        """Test sets with labels, in test-set order."""
        return [t for t in self.testsets if t in self.label_files]

    def prediction_file(self, model: str, testset: str) -> Path:
        return Path(self.files[model][testset])

    def label_file(self, testset: str) -> Path | None:
        return Path(self.label_files[testset]) if testset in self.label_files else None

    def feature_file(self, model: str, testset: str, layer: str) -> Path:
        return self.root / "features" / model / f"{testset}.{layer}.npy"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "root": str(self.root)}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> PredictionZoo:
        return cls(**{**obj, "root": Path(obj["root"])})


# ---------------------------------------------------------------------------------------------
# reading one file
# ---------------------------------------------------------------------------------------------


def read_array(path: str | Path, mmap: bool = False) -> tuple[np.ndarray, str | None]:
    """The array of one file as stored (any shape, not yet checked) and what the file says it
    is, if anything: an npz's (or a ``.pt`` dict's) key ``logits`` or ``probs``. ``mmap``: map
    an ``.npy`` instead of reading it (one model's slice of a large tensor). Raises
    PredictionZooError naming the file."""
    p = Path(path)
    suffix = p.suffix.lower()
    try:
        if suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                key, declared = _pick_key(list(z.files), p)
                return z[key], declared
        if suffix == ".npy":
            return np.load(p, allow_pickle=False, mmap_mode="r" if mmap else None), None
        if suffix == ".csv":
            return _read_csv(p), None
        if suffix == ".pt":
            return _read_pt(p)
    except PredictionZooError:
        raise
    except Exception as exc:  # noqa: BLE001 - OSError, ValueError, BadZipFile...: name the file
        raise PredictionZooError(f"{p}: not readable as an array ({exc})") from None
    raise PredictionZooError(f"{p}: unknown extension; use one of {EXTENSIONS}")


def _pick_key(keys: Sequence[str], p: Path) -> tuple[str, str | None]:
    """The key of an npz (or a ``.pt`` dict) to read, and the kind it declares."""
    found = [k for k in ("logits", "probs") if k in keys]
    if len(found) > 1 or (not found and len(keys) != 1):
        raise PredictionZooError(f"{p}: an npz (or a .pt dict) must hold one array, or exactly "
                                 f"one of 'logits' or 'probs'; has {list(keys)}")
    if found:
        return found[0], "logits" if found[0] == "logits" else "probabilities"
    return keys[0], None


def _read_pt(p: Path) -> tuple[np.ndarray, str | None]:
    """A ``.pt`` file's tensor (or the one tensor of its dict), through torch's weights-only
    loader; floating tensors as float64 (bfloat16 has no numpy type)."""
    import torch  # deferred: torch only for .pt files (this module is read at every parse)

    obj = torch.load(p, map_location="cpu", weights_only=True)
    declared = None
    if isinstance(obj, dict):
        key, declared = _pick_key([str(k) for k in obj], p)
        obj = obj[key]
    if not isinstance(obj, torch.Tensor):
        raise PredictionZooError(f"{p}: a .pt file must hold a tensor (or a dict of one), got "
                                 f"{type(obj).__name__}")
    t = obj.detach().cpu()
    return (t.double() if t.is_floating_point() else t).numpy(), declared


def _read_csv(p: Path) -> np.ndarray:
    """A csv of numbers, as pandas writes one too: a first row that is not all numbers (or is
    the column numbers 0, 1, ..., K-1, K >= 3) is a header; a leading row-index column (header
    cell empty, ``Unnamed: 0`` or ``index``: pandas' default ``to_csv``) is dropped; an
    unheaded first column counting 0, 1, ..., N-1 is refused (a row index read as a class)."""
    with open(p) as fh:
        first = [c.strip().strip('"') for c in fh.readline().rstrip("\r\n").split(",")]
    header = not all(_is_number(c) for c in first) or (
        len(first) >= 3 and first == [str(k) for k in range(len(first))])
    arr = np.loadtxt(p, delimiter=",", ndmin=2, dtype=np.float64, skiprows=int(header))
    while header and first and first[0].lower() in INDEX_HEADERS and arr.shape[1] > 1:
        if not np.all(arr[:, 0] == np.round(arr[:, 0])):
            raise PredictionZooError(
                f"{p}: the first column is headed {first[0]!r}, as a row index (pandas' to_csv "
                "writes one), but holds non-integers; write the file without an index column "
                "(pandas: to_csv(path, index=False))")
        arr, first = arr[:, 1:], first[1:]
    n = arr.shape[0]
    if not header and n >= 3 and arr.shape[1] > 2 and np.array_equal(arr[:, 0], np.arange(n)):
        raise PredictionZooError(
            f"{p}: the first column counts 0, 1, ..., {n - 1}: a row index, not a class; write "
            "the file without it (pandas: to_csv(path, index=False)) or with pandas' header")
    return arr


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _matrix(arr: np.ndarray, declared: str | None, where: str) -> tuple[np.ndarray, str | None]:
    """One model's (N, K) matrix checked (shape, numbers, values) and as float64."""
    if arr.ndim != 2 or arr.shape[1] < 2:
        hint = ("; a (models, inputs, classes) tensor goes straight in predictions/ with its "
                "model names in models.txt (docs/cli.md)" if arr.ndim == 3 else "")
        raise PredictionZooError(f"{where}: expected an (N, K) matrix with K >= 2, got shape "
                                 f"{arr.shape}{hint}")
    if not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
        raise PredictionZooError(f"{where}: expected numbers, got dtype {arr.dtype}")
    arr = np.asarray(arr, dtype=np.float64)
    check_values(arr, where)
    return arr, declared


def check_values(arr: np.ndarray, where: str) -> None:
    """Refuse NaN and ``+inf``; allow ``-inf`` (a log-probability of 0) except in every column
    of a row (no class would have any probability)."""
    if np.isfinite(arr).all():
        return
    bad = np.isnan(arr) | np.isposinf(arr)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise PredictionZooError(
            f"{where}: {int(bad.any(axis=1).sum())} row(s) hold NaN or infinite values (the "
            f"first: {arr[r, c]} at row {r}, column {c}); only -inf, a log-probability of 0, is "
            "allowed")
    dead = np.isneginf(arr).all(axis=1)
    if dead.any():
        raise PredictionZooError(
            f"{where}: {int(dead.sum())} row(s) are -inf in every class (the first: row "
            f"{int(np.flatnonzero(dead)[0])}): no class has any probability")


def read_matrix(path: str | Path) -> tuple[np.ndarray, str | None]:
    """Read one (N, K) matrix; return it as float64 and what the file says it is, if anything.

    npz: the array ``logits`` or ``probs`` (the key states the kind), else its only array; npy:
    the array; csv: a comma-separated table (a header row and pandas' index column allowed, see
    :func:`_read_csv`); pt: a tensor. The one reader of per-model prediction files for the
    workflow's prediction zoos and the ``labelfree`` command. Raises PredictionZooError naming
    the file.
    """
    p = Path(path)
    arr, declared = read_array(p)
    return _matrix(arr, declared, str(p))


def model_names_file(path: str | Path) -> Path:
    """The names file of a tensor: ``<stem>.models.txt`` beside it, else ``models.txt`` in its
    folder (the first when neither exists, for messages)."""
    p = Path(path)
    own = p.with_suffix(NAMES_SUFFIX)
    shared = p.parent / MODELS_FILE
    return shared if not own.is_file() and shared.is_file() else own


def read_model_names(path: str | Path, count: int) -> list[str]:
    """The ``count`` model names of the tensor at ``path`` (one per line, blank lines skipped),
    distinct; raises PredictionZooError naming the names file."""
    p = Path(path)
    side = model_names_file(p)
    if not side.is_file():
        raise PredictionZooError(
            f"{p}: a (models, inputs, classes) tensor needs its model names, one per line, in "
            f"{side} or {p.parent / MODELS_FILE}")
    names = [line.strip() for line in side.read_text().splitlines() if line.strip()]
    if len(names) != count:
        raise PredictionZooError(f"{side}: {len(names)} model names for the {count} models "
                                 f"(first axis) of {p}")
    twice = sorted(n for n, c in Counter(names).items() if c > 1)
    if twice:
        raise PredictionZooError(f"{side}: model name(s) {twice} appear more than once")
    return names


def read_tensor(path: str | Path, mmap: bool = False
                ) -> tuple[list[str], np.ndarray, str | None]:
    """A (models, inputs, classes) tensor as stored, its model names and its declared kind;
    each model's matrix is checked when read (:func:`read_models`, :func:`read_model_matrix`)."""
    p = Path(path)
    arr, declared = read_array(p, mmap)
    if arr.ndim != 3 or arr.shape[0] == 0:
        raise PredictionZooError(f"{p}: expected a (models, inputs, classes) tensor of one model "
                                 f"or more, got shape {arr.shape}")
    return read_model_names(p, arr.shape[0]), arr, declared


def read_models(path: str | Path) -> list[tuple[str, np.ndarray, str | None]]:
    """Every model of one file as (name, (N, K) float64 matrix, declared kind): an (N, K) file
    is one model named by its stem; an (M, N, K) tensor M models named by its names file. Each
    matrix checked as :func:`read_matrix` checks it; one PredictionZooError lists every bad
    model, each message naming the file and the model."""
    p = Path(path)
    try:
        arr, declared = read_array(p)
        if arr.ndim != 3:
            return [(p.stem, *_matrix(arr, declared, str(p)))]
    except PredictionZooError as exc:  # unreadable, or one model's file: named by its stem
        raise PredictionZooError(with_model(str(exc), p.stem)) from None
    if arr.shape[0] == 0:
        raise PredictionZooError(f"{p}: a (models, inputs, classes) tensor of no model, shape "
                                 f"{arr.shape}")
    names = read_model_names(p, arr.shape[0])
    out, problems = [], []
    for i, name in enumerate(names):
        try:
            out.append((name, *_matrix(arr[i], declared, f"{p}: model {name!r}")))
        except PredictionZooError as exc:
            problems.append(str(exc))
    if problems:
        raise PredictionZooError("; ".join(problems))
    return out


def read_model_matrix(path: str | Path, model: str) -> tuple[np.ndarray, str | None]:
    """One model's checked (N, K) float64 matrix and declared kind: the file itself, or, for a
    tensor, the slice its names file gives ``model`` (an ``.npy`` tensor is mapped, not read
    whole)."""
    p = Path(path)
    arr, declared = read_array(p, mmap=True)
    if arr.ndim != 3:
        return _matrix(arr, declared, str(p))
    names = read_model_names(p, arr.shape[0])
    if model not in names:
        raise PredictionZooError(f"{model_names_file(p)}: no model {model!r} among the names of "
                                 f"{p}")
    return _matrix(arr[names.index(model)], declared, f"{p}: model {model!r}")


def is_probabilities(arr: np.ndarray, tol: float = SUM_TOL) -> bool:
    """Rows non-negative and summing to 1 (within ``tol``)."""
    return bool((arr >= 0).all() and np.abs(arr.sum(axis=1) - 1).max(initial=0) <= tol)


def is_percent(arr: np.ndarray, tol: float = SUM_TOL) -> bool:
    """Rows non-negative and summing to 100 (within ``100 tol``): probabilities in percent."""
    return bool(len(arr) and (arr >= 0).all()
                and np.abs(arr.sum(axis=1) - 100).max() <= 100 * tol)


def check_probabilities(arr: np.ndarray, where: str, tol: float = SUM_TOL) -> None:
    """Refuse a matrix declared probabilities whose rows are negative or miss a sum of 1."""
    if not is_probabilities(arr, tol):
        if is_percent(arr, tol):
            raise PredictionZooError(_percent_message(where))
        sums = np.abs(arr.sum(axis=1) - 1)
        r = int(sums.argmax())
        raise PredictionZooError(
            f"{where}: declared probabilities, but rows are negative or do not sum to 1 "
            f"(row {r} sums to {arr[r].sum():.6g}, min value {arr.min():.3g}; tolerance {tol})"
        )


def _percent_message(where: str) -> str:
    return (f"{where}: every row is non-negative and sums to 100: probabilities in percent? "
            "Divide them by 100; they are refused rather than read as logits")


def classify(arr: np.ndarray, declared: str | None, kind: str, where: str,
             tol: float = SUM_TOL) -> str:
    """What one matrix holds, checked: ``declared`` by its file (an npz key) wins, then the
    given ``kind``; under ``auto``, probabilities when its rows are non-negative and sum to 1,
    logits otherwise (log-probabilities among them), except that two look-alikes are refused:
    a matrix all in [0, 1] whose rows miss a sum of 1 (probabilities rounded or with a column
    missing; logits are not confined to [0, 1]) and non-negative rows summing to 100
    (percentages). Raises PredictionZooError naming ``where``."""
    if kind not in KINDS:
        raise PredictionZooError(f"{where}: kind {kind!r}: use one of {KINDS}")
    k = declared or (kind if kind != "auto" else
                     ("probabilities" if is_probabilities(arr, tol) else "logits"))
    if k == "probabilities":
        check_probabilities(arr, where, tol)
    elif not declared and kind == "auto":
        if is_percent(arr, tol):
            raise PredictionZooError(_percent_message(where))
        _refuse_unnormalised(arr, where, tol)
    return k


def _refuse_unnormalised(arr: np.ndarray, path: str, tol: float = SUM_TOL) -> None:
    """Under ``kind: auto``, a matrix all in [0, 1] whose rows miss a sum of 1 (rounded or
    truncated probabilities, a class column missing) would silently be taken as logits:
    refuse it instead, saying how to declare the kind."""
    if (arr >= 0).all() and (arr <= 1).all():
        sums = arr.sum(axis=1)
        r = int(np.abs(sums - 1).argmax())
        raise PredictionZooError(
            f"{path}: rows look like probabilities (all in [0, 1]) but do not sum to 1 "
            f"(row {r} sums to {sums[r]:.6g}, tolerance {tol}); renormalise them, or say "
            "what they are (a zoo's `kind`, the command's --input: logits or probabilities)"
        )


def finite_logits(arr: np.ndarray) -> np.ndarray:
    """Logits with each ``-inf`` (a log-probability of 0) replaced by its row's maximum plus
    :data:`LOG_TINY32`, where softmax gives a probability below float32's smallest normal
    number; other values, and arrays without ``-inf``, unchanged (the same object)."""
    neg = np.isneginf(arr)
    if not neg.any():
        return arr
    return np.where(neg, arr.max(axis=-1, keepdims=True) + LOG_TINY32, arr)


def to_logits(arr: np.ndarray, kind: str, where: str) -> np.ndarray:
    """float32 logits from a validated matrix: probabilities become log-probabilities
    (softmax(log p) = p), logits pass unchanged but for ``-inf`` (:func:`finite_logits`).
    ``where`` names the file in errors."""
    if kind == "probabilities":
        check_probabilities(arr, where)
        with np.errstate(divide="ignore"):
            out = np.log(arr)
        # log 0 = -inf would poison means; the smallest float32 log-probability stands in.
        return np.maximum(out, LOG_TINY32).astype(np.float32)
    return finite_logits(arr).astype(np.float32)


def read_label_array(path: str | Path) -> np.ndarray:
    """The raw label vector of a file (.npy, .pt, or a one-column/one-row csv, pandas' header
    and index column allowed); names the file."""
    p = Path(path)
    try:
        suffix = p.suffix.lower()
        if suffix == ".npy":
            y = np.load(p, allow_pickle=False)
        elif suffix == ".pt":
            y = _read_pt(p)[0]
        else:
            y = _read_csv(p)
    except Exception as exc:  # noqa: BLE001 - any reader failure: name the file
        raise PredictionZooError(f"{p}: labels not readable ({exc})") from None
    y = np.asarray(y)
    if y.ndim == 2 and 1 in y.shape:  # a single csv column or row
        y = y.reshape(-1)
    return y


def read_labels(path: str | Path, rows: int, num_classes: int) -> np.ndarray:
    """(N,) int64 class ids in [0, K), checked against the test set's rows; names the file."""
    p = Path(path)
    y = read_label_array(p)
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


def check_shapes(
    shapes: Mapping[tuple[str, str], tuple[int, int]],
    files: Mapping[tuple[str, str], str],
    testsets: Sequence[str],
) -> tuple[int, dict[str, int], list[str]]:
    """K and each test set's N from the matrices' ``shapes`` ((model, test set) -> (N, K)), and
    a problem naming file and model for every matrix off them. The reference K and N are the
    values most files agree on, so the odd file out is the one named. A test set named ``""``
    (the command's single set of inputs) is not named in messages."""
    num_classes = _mode([s[1] for s in shapes.values()]) if shapes else 0
    rows: dict[str, int] = {}
    for t in testsets:
        ns = [s[0] for (m, tt), s in shapes.items() if tt == t]
        rows[t] = _mode(ns) if ns else 0
    problems: list[str] = []
    for (m, t), (n, k) in shapes.items():
        on = f" on test set {t!r}" if t else ""
        if k != num_classes:
            problems.append(f"{files[(m, t)]}: model {m!r} has K = {k} classes; the zoo's other "
                            f"files have K = {num_classes}")
        if n != rows[t]:
            problems.append(f"{files[(m, t)]}: model {m!r} has {n} rows{on}; the other models "
                            f"have {rows[t]}: every model must score the same inputs in the "
                            "same order")
        if n == 0:
            problems.append(f"{files[(m, t)]}: model {m!r}: {'test set ' + repr(t) if t else 'the file'} "
                            "has no rows")
    return int(num_classes), rows, problems


def read_feature(path: str | Path, rows: int) -> np.ndarray:
    """(N, D) features of one model on one test set, checked for shape and finiteness."""
    p = Path(path)
    try:
        f = np.load(p, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001
        raise PredictionZooError(f"{p}: features not readable ({exc})") from None
    if f.ndim != 2 or f.shape[0] != rows or not np.issubdtype(f.dtype, np.number):
        raise PredictionZooError(
            f"{p}: expected ({rows}, D) numeric features, got {f.dtype} shape {f.shape}"
        )
    if not np.isfinite(f).all():
        raise PredictionZooError(f"{p}: features hold NaN or infinite values")
    return f


# ---------------------------------------------------------------------------------------------
# the whole folder
# ---------------------------------------------------------------------------------------------


def _listing(folder: Path, exts: Sequence[str]) -> dict[str, list[Path]]:
    """stem -> files with an accepted extension (hidden files ignored)."""
    out: dict[str, list[Path]] = {}
    for f in sorted(folder.iterdir()):
        if f.is_file() and f.suffix.lower() in exts and not f.name.startswith("."):
            out.setdefault(f.stem, []).append(f)
    return out


def _mode(values: Sequence[int]) -> int:
    """The most common value (ties: the first seen), the zoo's reference for K and N."""
    return Counter(values).most_common(1)[0][0]


@dataclass
class _Found:
    """What one layout's steps of :func:`scan` found: models, the test sets present and used,
    each (model, test set)'s file and (N, K), each model's kinds, and the problems."""

    models: list[str] = field(default_factory=list)
    found: list[str] = field(default_factory=list)
    wanted: list[str] = field(default_factory=list)
    files: dict[str, dict[str, str]] = field(default_factory=dict)
    shapes: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    kinds: dict[str, set[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def scan(
    root: str | Path,
    kind: str = "auto",
    testsets: Sequence[str] | None = None,
    features: Sequence[str] = (),
    tol: float = SUM_TOL,
) -> PredictionZoo:
    """List and validate a whole prediction zoo; raise one PredictionZooError listing every
    problem, each naming the file and the model.

    Checks: the layout and names; every model has the zoo's test sets (``testsets``: the ones
    to use, in order; default every test set of the folder); each file reads as a finite
    (N, K) matrix (or an (M, N, K) tensor with M names); K the same in every file; N the same
    across models per test set; the kind (declared, given, or detected per model),
    probabilities summing to 1; labels, when present, one per row in [0, K); features
    readable, (N, D), finite, every layer of ``features`` present for every model. The zoo's K
    and each test set's N are the values most files agree on, so the odd file out is the one
    named. ``tol``: on probability row sums. Steps: :func:`_scan_model_folders` or
    :func:`_scan_tensors` (the layout), :func:`_model_kinds`, :func:`check_shapes`,
    :func:`_scan_labels`, :func:`_scan_features`.
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
    f = (_scan_tensors if _tensor_layout(pred) else _scan_model_folders)(pred, testsets, kind, tol)
    problems = f.problems
    kinds = _model_kinds(pred, f, problems)
    num_classes, rows, shape_problems = check_shapes(
        f.shapes, {(m, t): p for m in f.models for t, p in f.files[m].items()}, f.wanted)
    problems += shape_problems
    label_files = _scan_labels(base / "labels", f, rows, num_classes, problems)
    layers_of = _scan_features(base / "features", f, rows, features, problems)
    if problems:
        head = f"{len(problems)} problems in prediction zoo {base}: " if len(problems) > 1 else ""
        raise PredictionZooError(head + "; ".join(problems))
    return PredictionZoo(base.resolve(), f.models, f.wanted, int(num_classes), rows, kinds,
                         f.files, label_files, layers_of)


def _tensor_layout(pred: Path) -> bool:
    """Whether ``predictions/`` holds tensors (files) rather than model folders; both refused."""
    dirs = sorted(d.name for d in pred.iterdir() if d.is_dir() and not d.name.startswith("."))
    tensors = sorted(_listing(pred, TENSOR_EXTENSIONS))
    if dirs and tensors:
        raise PredictionZooError(
            f"{pred}: holds both model folders {dirs} (one file per model and test set) and "
            f"tensor files {tensors} (one (models, inputs, classes) file per test set); use one "
            "layout")
    return bool(tensors)


def _wanted(pred: Path, found: list[str], testsets: Sequence[str] | None,
            problems: list[str]) -> list[str]:
    """The test sets to use (``testsets``, default every one found), names checked."""
    wanted = list(testsets) if testsets else found
    if not wanted:
        raise PredictionZooError(f"{pred}: no prediction files ({', '.join(EXTENSIONS)}) "
                                 "in any model folder")
    for t in wanted:
        if not TESTSET_ID.match(t):
            problems.append(f"{pred}: test set {t!r}: a test-set name may hold only letters, "
                            "digits and _ + - (no dots)")
    return wanted


def _bad_model_name(where: Path, model: str) -> str | None:
    if MODEL_ID.match(model):
        return None
    return (f"{where}: model {model!r}: a model's name may hold only letters, digits and "
            "_ . + - (and starts with a letter or digit)")


def _scan_model_folders(pred: Path, testsets: Sequence[str] | None, kind: str,
                        tol: float) -> _Found:
    """The per-model layout: ``predictions/<model>/<testset>.<ext>``, every file read."""
    f = _Found()
    f.models = sorted(d.name for d in pred.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not f.models:
        raise PredictionZooError(f"{pred}: no model folders (predictions/<model>/<testset>.npy) "
                                 "and no tensor files (predictions/<testset>.npy with "
                                 "models.txt)")
    f.problems += [p for m in f.models if (p := _bad_model_name(pred / m, m))]
    listing = {m: _listing(pred / m, EXTENSIONS) for m in f.models}
    f.found = sorted({t for m in f.models for t in listing[m]})
    f.wanted = _wanted(pred, f.found, testsets, f.problems)
    f.files = {m: {} for m in f.models}
    for m in f.models:
        absent = [t for t in f.wanted if t not in listing[m]]
        if absent:
            f.problems.append(f"{pred / m}: model {m!r} has no file for test set(s) {absent}; "
                              f"every model needs the same test sets ({f.wanted})")
        for t in f.wanted:
            hits = listing[m].get(t, [])
            if len(hits) > 1:
                f.problems.append(f"{pred / m}: model {m!r} has several files for test set "
                                  f"{t!r} {[h.name for h in hits]}; keep one")
            elif hits:
                f.files[m][t] = str(hits[0].resolve())
    f.kinds = {m: set() for m in f.models}
    for m in f.models:
        for t, path in f.files[m].items():
            try:
                arr, declared = read_matrix(path)
                f.shapes[(m, t)] = arr.shape
                f.kinds[m].add(classify(arr, declared, kind, path, tol))
            except PredictionZooError as exc:
                f.problems.append(with_model(str(exc), m))
    return f


def _scan_tensors(pred: Path, testsets: Sequence[str] | None, kind: str, tol: float) -> _Found:
    """The tensor layout: ``predictions/<testset>.<ext>``, one (M, N, K) tensor per test set
    with its names file; models in the first test set's order, each present in every set."""
    f = _Found()
    listing = _listing(pred, TENSOR_EXTENSIONS)
    f.found = sorted(listing)
    f.wanted = _wanted(pred, f.found, testsets, f.problems)
    names_of: dict[str, list[str]] = {}
    path_of: dict[str, str] = {}
    for t in f.wanted:
        hits = listing.get(t, [])
        if len(hits) != 1:
            f.problems.append(f"{pred}: test set {t!r} has " + (
                f"several tensor files {[h.name for h in hits]}; keep one" if hits else
                f"no tensor file (predictions/{t}.npy); the test sets are {f.found}"))
            continue
        path = str(hits[0].resolve())
        try:
            names, arr, declared = read_tensor(path)
        except PredictionZooError as exc:
            f.problems.append(str(exc))
            continue
        names_of[t], path_of[t] = names, path
        for i, m in enumerate(names):
            f.files.setdefault(m, {})[t] = path
            where = f"{path}: model {m!r}"
            try:
                mat, _ = _matrix(arr[i], declared, where)
                f.shapes[(m, t)] = mat.shape
                f.kinds.setdefault(m, set()).add(classify(mat, declared, kind, where, tol))
            except PredictionZooError as exc:
                f.problems.append(str(exc))
    f.models = next(iter(names_of.values()), [])
    f.problems += [p for m in f.models if (p := _bad_model_name(pred / MODELS_FILE, m))]
    for t, names in names_of.items():
        absent, extra = set(f.models) - set(names), set(names) - set(f.models)
        if absent or extra:
            f.problems.append(f"{model_names_file(path_of[t])}: test set {t!r} names other models than the first "
                              f"test set: missing {sorted(absent)}, extra {sorted(extra)}; "
                              "every model needs the same test sets")
    for m in list(f.files):
        if m not in f.models:
            del f.files[m]
    return f


def _model_kinds(pred: Path, f: _Found, problems: list[str]) -> dict[str, str]:
    """Each model's one kind across its test sets (a model mixing them is a problem)."""
    kinds: dict[str, str] = {}
    for m in f.models:
        seen = f.kinds.get(m, set())
        if len(seen) > 1:
            problems.append(f"{pred / m}: model {m!r} mixes logits and probabilities across "
                            "test sets; set the zoo's kind or store one kind")
        kinds[m] = min(seen) if seen else "logits"
    return kinds


def _scan_labels(lab: Path, f: _Found, rows: Mapping[str, int], num_classes: int,
                 problems: list[str]) -> dict[str, str]:
    """Label files of the used test sets, each checked (one per row, in [0, K))."""
    label_files: dict[str, str] = {}
    if not lab.is_dir():
        return label_files
    labels = _listing(lab, LABEL_EXTENSIONS)
    stray = sorted(set(labels) - set(f.found))
    if stray:
        problems.append(f"{lab}: labels for unknown test set(s) {stray}; the test sets "
                        f"are {f.found}")
    for t in f.wanted:
        hits = labels.get(t, [])
        if len(hits) > 1:
            problems.append(f"{lab}: test set {t!r} has several label files "
                            f"{[h.name for h in hits]}; keep one")
        elif hits:
            try:
                if num_classes:
                    read_labels(hits[0], rows[t], num_classes)
                label_files[t] = str(hits[0].resolve())
            except PredictionZooError as exc:
                problems.append(str(exc))
    return label_files


def _scan_features(feat: Path, f: _Found, rows: Mapping[str, int], features: Sequence[str],
                   problems: list[str]) -> dict[str, list[str]]:
    """Each model's feature layers, every file checked; ``features``: layers every model needs."""
    layers_of: dict[str, list[str]] = {}
    for m in f.models:
        folder = feat / m
        layers = sorted({p.name.split(".")[1] for p in folder.glob("*.*.npy")
                         if p.name.count(".") == 2}) if folder.is_dir() else []
        missing_layers = [layer for layer in features if layer not in layers]
        if missing_layers:
            problems.append(f"{folder}: model {m!r} has no {missing_layers} features, which "
                            "the zoo's `features` asks for")
        for layer in layers:
            for t in f.wanted:
                fpath = folder / f"{t}.{layer}.npy"
                if not fpath.is_file():
                    problems.append(f"{fpath}: model {m!r} has {layer!r} features for some test "
                                    f"sets but not {t!r}")
                    continue
                try:
                    read_feature(fpath, rows[t])
                except PredictionZooError as exc:
                    problems.append(with_model(str(exc), m))
        layers_of[m] = layers
    return layers_of


def with_model(message: str, model: str) -> str:
    """Insert the model after the file name of a one-file message ("<file>: ...")."""
    path, sep, rest = message.partition(": ")
    return f"{path}: model {model!r}: {rest}" if sep else f"{message} (model {model!r})"


def _signature(base: Path, kind: str, testsets: Sequence[str] | None,
               features: Sequence[str]) -> str:
    """Hash of every file's path, size and mtime under the zoo's folders, and the arguments."""
    h = hashlib.sha256(json.dumps([SCAN_VERSION, str(base.resolve()), kind,
                                   list(testsets or []), list(features)]).encode())
    for part in ("predictions", "labels", "features"):
        folder = base / part
        if not folder.is_dir():
            continue
        for f in sorted(folder.rglob("*")):
            st = f.stat()
            h.update(f"{f.relative_to(base)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def scan_cached(
    root: str | Path,
    kind: str = "auto",
    testsets: Sequence[str] | None = None,
    features: Sequence[str] = (),
    cache: str | Path | None = None,
) -> PredictionZoo:
    """:func:`scan`, skipped when ``cache`` (a json file) holds the result of a scan of the
    same files (paths, sizes, modification times) with the same arguments.

    Parsing a workflow reads the whole folder once; later parses (dry runs, the report, cluster
    jobs) stat the files only. Only successful scans are cached.
    """
    base = Path(root)
    if cache is None:
        return scan(base, kind, testsets, features)
    sig = _signature(base, kind, testsets, features) if (base / "predictions").is_dir() else ""
    cpath = Path(cache)
    if sig and cpath.is_file():
        try:
            obj = json.loads(cpath.read_text())
            if obj.get("signature") == sig:
                return PredictionZoo.from_json(obj["zoo"])
        except (OSError, ValueError, KeyError, TypeError):
            pass  # an unreadable cache is redone
    zoo = scan(base, kind, testsets, features)
    if sig:
        try:
            cpath.parent.mkdir(parents=True, exist_ok=True)
            tmp = cpath.with_name(f".{cpath.name}.tmp")
            tmp.write_text(json.dumps({"signature": sig, "zoo": zoo.to_json()}))
            tmp.replace(cpath)
        except OSError:
            pass  # a read-only working directory only loses the cache
    return zoo


# ---------------------------------------------------------------------------------------------
# reading the zoo and importing it into the workflow's artefacts
# ---------------------------------------------------------------------------------------------


def load_logits(zoo: PredictionZoo, model: str, testset: str) -> np.ndarray:
    """float32 (N, K) logits of ``model`` on ``testset`` (probabilities as log-probabilities)."""
    path = zoo.prediction_file(model, testset)
    arr, _ = read_model_matrix(path, model)
    return to_logits(arr, zoo.kind[model], f"{path} (model {model!r})")


def load_labels(zoo: PredictionZoo, testset: str) -> np.ndarray | None:
    path = zoo.label_file(testset)
    return None if path is None else read_labels(path, zoo.rows[testset], zoo.num_classes)


def load_features(zoo: PredictionZoo, model: str, testset: str, layer: str) -> np.ndarray:
    return read_feature(zoo.feature_file(model, testset, layer), zoo.rows[testset])


def _sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def import_model(
    zoo: str,
    model: str,
    files: Mapping[str, str],
    kind: str,
    num_classes: int,
    rows: Mapping[str, int],
    features: Mapping[str, Mapping[str, str]],
    infer_out: str | Path,
    meta_out: str | Path,
) -> dict[str, Any]:
    """Write one model's inference artefact (every test set of ``files``, logits float32 and
    the ``features`` layers) and its meta.json; the files are checked again against the
    zoo's K and rows, since they may have changed since the workflow was parsed.

    ``files``: test set -> prediction file; ``features``: layer -> test set -> file.
    Returns the meta dict (source, kind, classes, each file's path and sha256).
    """
    from labelfree import store  # deferred: store imports pandas (~0.3 s) for every parse

    sets: dict[str, dict[str, np.ndarray]] = {}
    for t, f in files.items():
        arr, declared = read_model_matrix(f, model)
        where = f"{f} (model {model!r})"
        if arr.shape != (rows[t], num_classes):
            raise PredictionZooError(f"{where}: shape {arr.shape}, the zoo was validated with "
                                     f"({rows[t]}, {num_classes}); rerun after fixing the file")
        sets[t] = {"logits": to_logits(arr, declared or kind, where)}
        for layer, by_set in features.items():
            sets[t][layer] = read_feature(by_set[t], rows[t])
    store.write_inference(infer_out, sets)
    meta = {
        "model": model,
        "zoo": zoo,
        "source": "predictions",
        "kind": kind,
        "num_classes": int(num_classes),
        "arch": None,
        "params": None,
        "val_accuracy": None,
        "testsets": {t: {"file": str(f), "sha256": _sha256(f), "rows": int(rows[t])}
                     for t, f in files.items()},
        "features": sorted(features),
    }
    store.save_json(meta, meta_out)
    return meta


def import_labels(
    label_files: Mapping[str, str | None],
    rows: Mapping[str, int],
    num_classes: int,
    outs: Mapping[str, str | Path],
) -> None:
    """Write each test set's artefact (labelfree.store.write_labels): its labels where the
    zoo has them, else only its size. ``label_files``: test set -> label file or None."""
    from labelfree import store  # deferred: store imports pandas (~0.3 s) for every parse

    for t, out in outs.items():
        path = label_files.get(t)
        y = None if path is None else read_labels(path, rows[t], num_classes)
        store.write_labels(out, y, rows[t])
