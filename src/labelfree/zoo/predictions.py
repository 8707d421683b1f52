"""Prediction zoos: a user's arrays instead of models (ARCHITECTURE.md, "Users' zoos").

A prediction zoo is a folder, laid out so that a listing of it is the zoo::

    <root>/predictions/<model>/<testset>.npy|.npz|.csv   (N, K) logits or probabilities
    <root>/labels/<testset>.npy|.csv                     optional, (N,) int class ids
    <root>/features/<model>/<testset>.<layer>.npy        optional, (N, D) features

An ``.npz`` holds its matrix under ``logits`` or ``probs`` (or as its only array). ``kind``
says what the matrices are: ``logits``, ``probabilities`` or ``auto`` (probabilities when every
row of every file of a model is non-negative and sums to 1; see :func:`classify`). Probabilities
enter the pipeline as their logarithm, so that softmax gives them back: every study that reads
logits reads these unchanged.

:func:`read_matrix`, :func:`classify`, :func:`check_shapes`, :func:`read_labels` and
:func:`read_feature` are the one reader and validator of prediction files: the ``labelfree``
command (labelfree.cli) reads its files through them too, with the same messages.

:func:`scan` validates the whole folder before any job runs and reports every problem in one
message, each naming the file and the model; :func:`import_model` and :func:`import_labels`
(the workflow's import jobs) write the inference and test-set artefacts that studies read
(labelfree.store). Reading never unpickles.
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
EXTENSIONS = (".npy", ".npz", ".csv")
LABEL_EXTENSIONS = (".npy", ".csv")
KINDS = ("auto", "logits", "probabilities")
#: Tolerance on row sums for probabilities (float32 softmax outputs sum to 1 within ~1e-6).
SUM_TOL = 1e-3
#: Model ids as the workflow's `model` wildcard; test-set names without dots (feature files
#: are named <testset>.<layer>.npy).
MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
TESTSET_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_+-]*$")
#: Bump when the scan's checks change, so cached scans made by an older version are redone.
SCAN_VERSION = 3


class PredictionZooError(ValueError):
    """A prediction zoo's folder or one of its files breaks the layout; names the culprit."""


@dataclass(frozen=True)
class PredictionZoo:
    """What :func:`scan` found: models, test sets, classes and rows, all checked.

    ``files[model][testset]`` and ``label_files[testset]`` are absolute paths;
    ``features[model]`` lists the layers whose files exist for every test set of the model.
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


def read_matrix(path: str | Path) -> tuple[np.ndarray, str | None]:
    """Read one (N, K) matrix; return it as float64 and what the file says it is, if anything.

    npz: the array ``logits`` or ``probs`` (the key states the kind), else its only array; npy:
    the array; csv: a comma-separated table, one optional header row. The one reader of
    prediction files for the workflow's prediction zoos and the ``labelfree`` command. Raises
    PredictionZooError naming the file.
    """
    p = Path(path)
    declared: str | None = None
    suffix = p.suffix.lower()
    try:
        if suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                keys = [k for k in ("logits", "probs") if k in z.files]
                if len(keys) > 1 or (not keys and len(z.files) != 1):
                    raise PredictionZooError(
                        f"{p}: an npz must hold one array, or exactly one of 'logits' or "
                        f"'probs'; has {z.files}"
                    )
                if keys:
                    declared = "logits" if keys[0] == "logits" else "probabilities"
                arr = z[keys[0] if keys else z.files[0]]
        elif suffix == ".npy":
            arr = np.load(p, allow_pickle=False)
        elif suffix == ".csv":
            arr = _read_csv(p)
        else:
            raise PredictionZooError(f"{p}: unknown extension; use one of {EXTENSIONS}")
    except PredictionZooError:
        raise
    except Exception as exc:  # noqa: BLE001 - OSError, ValueError, BadZipFile...: name the file
        raise PredictionZooError(f"{p}: not readable as an array ({exc})") from None
    if arr.ndim != 2 or arr.shape[1] < 2:
        raise PredictionZooError(f"{p}: expected an (N, K) matrix with K >= 2, got shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number):
        raise PredictionZooError(f"{p}: expected numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64, copy=False)
    finite = np.isfinite(arr)
    if not finite.all():
        bad = int((~finite).any(axis=1).sum())
        r, c = np.argwhere(~finite)[0]
        raise PredictionZooError(f"{p}: {bad} row(s) hold NaN or infinite values (the first: "
                                 f"{arr[r, c]} at row {r}, column {c})")
    return arr, declared


def _read_csv(p: Path) -> np.ndarray:
    """A csv of numbers; a first row that is not numbers is taken as a header."""
    try:
        return np.loadtxt(p, delimiter=",", ndmin=2, dtype=np.float64)
    except ValueError:
        with open(p) as fh:
            first = fh.readline().split(",")
        if all(_is_number(x) for x in first):
            raise  # the bad value is further down: report it
        return np.loadtxt(p, delimiter=",", ndmin=2, dtype=np.float64, skiprows=1)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def is_probabilities(arr: np.ndarray, tol: float = SUM_TOL) -> bool:
    """Rows non-negative and summing to 1 (within ``tol``)."""
    return bool((arr >= 0).all() and np.abs(arr.sum(axis=1) - 1).max(initial=0) <= tol)


def check_probabilities(arr: np.ndarray, where: str, tol: float = SUM_TOL) -> None:
    """Refuse a matrix declared probabilities whose rows are negative or miss a sum of 1."""
    if not is_probabilities(arr, tol):
        sums = np.abs(arr.sum(axis=1) - 1)
        r = int(sums.argmax())
        raise PredictionZooError(
            f"{where}: declared probabilities, but rows are negative or do not sum to 1 "
            f"(row {r} sums to {arr[r].sum():.6g}, min value {arr.min():.3g}; tolerance {tol})"
        )


def classify(arr: np.ndarray, declared: str | None, kind: str, where: str,
             tol: float = SUM_TOL) -> str:
    """What one matrix holds, checked: ``declared`` by its file (an npz key) wins, then the
    given ``kind``; under ``auto``, probabilities when its rows are non-negative and sum to 1,
    logits otherwise, except that a matrix all in [0, 1] whose rows miss a sum of 1 is refused
    (probabilities rounded or with a column missing; logits are not confined to [0, 1]).
    Raises PredictionZooError naming ``where``."""
    if kind not in KINDS:
        raise PredictionZooError(f"{where}: kind {kind!r}: use one of {KINDS}")
    k = declared or (kind if kind != "auto" else
                     ("probabilities" if is_probabilities(arr, tol) else "logits"))
    if k == "probabilities":
        check_probabilities(arr, where, tol)
    elif not declared and kind == "auto":
        _refuse_unnormalised(arr, where, tol)
    return k


def to_logits(arr: np.ndarray, kind: str, where: str) -> np.ndarray:
    """float32 logits from a validated matrix: probabilities become log-probabilities
    (softmax(log p) = p), logits pass unchanged. ``where`` names the file in errors."""
    if kind == "probabilities":
        check_probabilities(arr, where)
        with np.errstate(divide="ignore"):
            out = np.log(arr)
        # log 0 = -inf would poison means; the smallest float32 log-probability stands in.
        return np.maximum(out, np.log(np.finfo(np.float32).tiny)).astype(np.float32)
    return arr.astype(np.float32)


def read_label_array(path: str | Path) -> np.ndarray:
    """The raw label vector of a file (.npy, or a one-column/one-row csv); names the file."""
    p = Path(path)
    try:
        y = (np.load(p, allow_pickle=False) if p.suffix.lower() == ".npy"
             else np.loadtxt(p, delimiter=",", ndmin=1))
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
    (N, K) matrix; K the same in every file; N the same across models per test set; the kind
    (declared, given, or detected per model), probabilities summing to 1; labels, when present,
    one per row in [0, K); features readable, (N, D), finite, every layer of ``features``
    present for every model. The zoo's K and each test set's N are the values most files
    agree on, so the odd file out is the one named. ``tol``: on probability row sums.
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
        raise PredictionZooError(f"{pred}: no model folders (predictions/<model>/<testset>.npy)")
    problems: list[str] = []
    for m in models:
        if not MODEL_ID.match(m):
            problems.append(f"{pred / m}: model {m!r}: a model folder's name may hold only "
                            "letters, digits and _ . + - (and starts with a letter or digit)")
    listing = {m: _listing(pred / m, EXTENSIONS) for m in models}
    found = sorted({t for m in models for t in listing[m]})
    wanted = list(testsets) if testsets else found
    if not wanted:
        raise PredictionZooError(f"{pred}: no prediction files ({', '.join(EXTENSIONS)}) "
                                 "in any model folder")
    for t in wanted:
        if not TESTSET_ID.match(t):
            problems.append(f"{pred}: test set {t!r}: a test-set name may hold only letters, "
                            "digits and _ + - (no dots)")
    files: dict[str, dict[str, str]] = {m: {} for m in models}
    for m in models:
        absent = [t for t in wanted if t not in listing[m]]
        if absent:
            problems.append(f"{pred / m}: model {m!r} has no file for test set(s) {absent}; "
                            f"every model needs the same test sets ({wanted})")
        for t in wanted:
            hits = listing[m].get(t, [])
            if len(hits) > 1:
                problems.append(f"{pred / m}: model {m!r} has several files for test set {t!r} "
                                f"{[h.name for h in hits]}; keep one")
            elif hits:
                files[m][t] = str(hits[0].resolve())

    shapes: dict[tuple[str, str], tuple[int, int]] = {}
    model_kinds: dict[str, set[str]] = {m: set() for m in models}
    for m in models:
        for t, f in files[m].items():
            try:
                arr, declared = read_matrix(f)
                shapes[(m, t)] = arr.shape
                model_kinds[m].add(classify(arr, declared, kind, f, tol))
            except PredictionZooError as exc:
                problems.append(with_model(str(exc), m))
    kinds: dict[str, str] = {}
    for m in models:
        if len(model_kinds[m]) > 1:
            problems.append(f"{pred / m}: model {m!r} mixes logits and probabilities across "
                            "test sets; set the zoo's kind or store one kind")
        kinds[m] = min(model_kinds[m]) if model_kinds[m] else "logits"

    num_classes, rows, shape_problems = check_shapes(
        shapes, {(m, t): f for m in models for t, f in files[m].items()}, wanted)
    problems += shape_problems

    label_files: dict[str, str] = {}
    lab = base / "labels"
    if lab.is_dir():
        labels = _listing(lab, LABEL_EXTENSIONS)
        stray = sorted(set(labels) - set(found))
        if stray:
            problems.append(f"{lab}: labels for unknown test set(s) {stray}; the test sets "
                            f"are {found}")
        for t in wanted:
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

    layers_of: dict[str, list[str]] = {}
    feat = base / "features"
    for m in models:
        folder = feat / m
        layers = sorted({f.name.split(".")[1] for f in folder.glob("*.*.npy")
                         if f.name.count(".") == 2}) if folder.is_dir() else []
        missing_layers = [layer for layer in features if layer not in layers]
        if missing_layers:
            problems.append(f"{folder}: model {m!r} has no {missing_layers} features, which "
                            "the zoo's `features` asks for")
        for layer in layers:
            for t in wanted:
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

    if problems:
        head = f"{len(problems)} problems in prediction zoo {base}: " if len(problems) > 1 else ""
        raise PredictionZooError(head + "; ".join(problems))
    return PredictionZoo(base.resolve(), models, wanted, int(num_classes), rows, kinds, files,
                         label_files, layers_of)


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
    arr, _ = read_matrix(path)
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
    from labelfree import store

    sets: dict[str, dict[str, np.ndarray]] = {}
    for t, f in files.items():
        arr, declared = read_matrix(f)
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
    from labelfree import store

    for t, out in outs.items():
        path = label_files.get(t)
        y = None if path is None else read_labels(path, rows[t], num_classes)
        store.write_labels(out, y, rows[t])
