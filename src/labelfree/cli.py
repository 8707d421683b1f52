"""The ``labelfree`` command: rank, estimate and select on arrays, without the workflow
(docs/cli.md).

Inputs are one file per model (``.npy``, ``.npz``, ``.csv``, ``.pt``: N x K logits,
log-probabilities or probabilities), one (models, inputs, classes) tensor with its model names in
a names file (``<stem>.models.txt`` or ``models.txt``), a folder of such files (sorted by name),
or a prediction zoo folder as the workflow reads it (docs/your-zoo.md, section 2), of which
``--testset`` picks the test set. Every method is reached through
:mod:`labelfree.methods.registry`. Bad input ends the command with exit status 2 and one line on
stderr naming the file; a closed output pipe ends it quietly with status 141, as SIGPIPE would.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import textwrap
import threading
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labelfree import answer as A
from labelfree.joblog import progress
from labelfree.methods.arrays import MethodInputError, accuracy
from labelfree.methods.registry import (
    REGISTRY,
    Method,
    accuracy_from_labels,
    call,
    methods,
    missing,
)
from labelfree.numerics import softmax
from labelfree.scorecard.core import NEEDS_TWO_MODELS
from labelfree.zoo import predictions as PZ

EXAMPLES = """examples:
  labelfree rank preds/                         # every model file in preds/, LaF and baselines
  labelfree estimate preds/ --source val/ --source-labels val_labels.npy
  labelfree rank preds/ --features feats/ --method Dispersion   # feats/<model>.npy, N x D
  labelfree select preds/ --budget 50 --csv > to_label.csv
  labelfree rank myzoo/ --testset shifted --source id   # a prediction zoo: predictions/<model>/
  labelfree rank zoo.pt                         # one (models, inputs, classes) tensor + zoo.models.txt
  labelfree rank preds/ --export zoo.npy        # ... and write preds/ as such a tensor
  labelfree estimate preds/ --labels labelled.csv   # accuracy from the labelled picks
  labelfree answer myzoo/ --source id           # the workflow's answer page for a prediction zoo
  labelfree methods                             # what is registered, and what each needs

Scores: higher = better. `rank` orders models by predicted accuracy (rank 1 = predicted best;
each method's column is its score, higher = predicted more accurate); `estimate` prints
estimated accuracies in [0, 1].
"""
#: --input choices; `probs` is short for `probabilities`.
INPUT_KINDS = {"auto": "auto", "probs": "probabilities", "probabilities": "probabilities",
               "logits": "logits"}
#: What each command's numbers mean, said under its output (stderr).
DIRECTION = {
    "rank": "higher score = predicted more accurate; rank 1 = predicted best",
    "estimate": "estimates are accuracies in [0, 1]; higher = better",
}
#: What each selector picks on, said under its picks (stderr).
SELECT_BASIS = {"PACE": "on the zoo's mean probabilities (N x K)",
                "CES": "on the zoo's mean probabilities (N x K)",
                "SDS": "on the models' predicted classes", "SRS": "uniformly at random"}
#: The label that marks an input as unlabelled in ``estimate --labels`` (an empty csv cell too).
UNLABELLED = -1
#: Width of the `labelfree methods` table.
WIDTH = 100
#: Exit status after the reader of stdout went away (128 + SIGPIPE).
EXIT_PIPE = 141


class InputError(Exception):
    """Bad input; the message names the file (and the model)."""


# --------------------------------------------------------------------------------- progress


def _tty() -> bool:
    """Progress is drawn only where a person watches: stderr a terminal."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _bar(iterable: Sequence[Any], desc: str, unit: str) -> Any:
    """A progress bar on stderr over ``iterable``, off when stderr is not a terminal."""
    return progress(iterable, desc=desc, unit=unit, total=len(iterable), mininterval=0.5,
                    disable=not _tty())


@contextlib.contextmanager
def _elapsed(desc: str) -> Iterator[None]:
    """The time spent so far in one long call (a selection), redrawn twice a second on
    stderr while it runs; nothing when stderr is not a terminal."""
    if not _tty():
        yield
        return
    bar = progress(desc=desc, bar_format="{desc}: {elapsed}", mininterval=0.5)
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(0.5):
            bar.refresh()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        bar.close()


def _note(text: str) -> None:
    print(f"labelfree: {text}", file=sys.stderr)


# --------------------------------------------------------------------------------- loading
# Every prediction, label and feature file is read and checked by labelfree.zoo.predictions,
# the reader of the workflow's prediction zoos: the same formats, checks and messages.


def model_files(paths: Sequence[str]) -> list[Path]:
    """Expand folders into their array files (sorted); keep files as given."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.suffix.lower() in PZ.EXTENSIONS
                           and f.is_file() and not f.name.startswith("."))
            if not files:
                raise InputError(f"{p}: folder holds no .npy, .npz, .csv or .pt file")
            out += files
        elif p.exists():
            out.append(p)
        else:
            raise InputError(f"{p}: no such file or folder")
    return out


def load_zoo(paths: Sequence[str], kind: str = "auto", tol: float = PZ.SUM_TOL,
             ) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """Model names, probabilities (M, N, K) and logits (None unless every model's are logits)
    from files/folders: each file read by :func:`labelfree.zoo.predictions.read_models` (an
    (N, K) file is one model named by its stem, a tensor one model per name), each model
    checked by :func:`~labelfree.zoo.predictions.classify`, all together by
    :func:`~labelfree.zoo.predictions.check_shapes`; two files for one name are refused. Every
    problem in one InputError, each naming file and model."""
    files = model_files(paths)
    kind = INPUT_KINDS[kind]
    problems: list[str] = []
    arrays: dict[str, tuple[np.ndarray, str]] = {}
    owner: dict[str, Path] = {}
    for f in _bar(files, "reading", "file"):
        try:
            models = PZ.read_models(f)
        except PZ.PredictionZooError as exc:
            problems.append(str(exc))
            continue
        for name, arr, declared in models:
            if name in owner:
                problems.append(f"{f}: model {name!r} comes from {owner[name]} too: two files "
                                "for one model name (the name is the file's stem); keep one")
                continue
            owner[name] = f
            try:
                arrays[name] = (arr, PZ.classify(arr, declared, kind, f"{f}: model {name!r}",
                                                 tol))
            except PZ.PredictionZooError as exc:
                problems.append(str(exc))
    _, _, off = PZ.check_shapes({(n, ""): a.shape for n, (a, _) in arrays.items()},
                                {(n, ""): str(owner[n]) for n in arrays}, [""])
    problems += off
    if problems:
        head = f"{len(problems)} problems: " if len(problems) > 1 else ""
        raise InputError(head + "; ".join(problems))
    return list(arrays), *_stack(list(arrays.values()))


def _stack(arrays: Sequence[tuple[np.ndarray, str]]) -> tuple[np.ndarray, np.ndarray | None]:
    """Probabilities (M, N, K) and logits (None unless every model's are logits) of checked
    (matrix, kind) pairs: logits (``-inf`` floored, :func:`labelfree.zoo.predictions.
    finite_logits`) through softmax, probabilities renormalised."""
    probs, logits = [], []
    for arr, k in arrays:
        if k == "logits":
            z = PZ.finite_logits(arr)
            probs.append(softmax(z))
            logits.append(z)
        else:
            probs.append(arr / arr.sum(axis=1, keepdims=True))
            logits.append(None)
    lg = np.stack(logits) if all(z is not None for z in logits) else None
    return np.stack(probs), lg


def export(path: str, names: Sequence[str], P: np.ndarray, logits: np.ndarray | None) -> None:
    """Write the models read as one (models, inputs, classes) tensor (logits when every model
    gave logits, else probabilities) to ``path`` (.npy; .npz under the key ``logits`` or
    ``probs``; .pt) and their names, one per line, to ``<stem>.models.txt`` beside it: the
    layout :func:`labelfree.zoo.predictions.read_models` reads back."""
    p = Path(path)
    data, key = (logits, "logits") if logits is not None else (P, "probs")
    suffix = p.suffix.lower()
    if suffix not in PZ.TENSOR_EXTENSIONS:
        raise InputError(f"--export {p}: use a .npy, .npz or .pt file name")
    try:
        if suffix == ".npy":
            np.save(p, data)
        elif suffix == ".npz":
            np.savez(p, **{key: data})
        else:
            import torch  # deferred: torch only for a .pt export (about 1 s to import)

            torch.save(torch.from_numpy(np.ascontiguousarray(data)), p)
        side = p.with_suffix(PZ.NAMES_SUFFIX)
        side.write_text("".join(f"{n}\n" for n in names))
    except OSError as exc:
        raise InputError(f"--export {p}: cannot write ({exc})") from None
    _note(f"wrote {key} {data.shape} to {p}, model names to {side}")


# A prediction zoo folder (labelfree.zoo.predictions.scan, the workflow's reader): one file per
# model and test set, or one tensor per test set; the command works on one test set of it.


def zoo_root(paths: Sequence[str]) -> Path | None:
    """The prediction zoo folder when ``paths`` is one (it holds ``predictions/``), else None."""
    roots = [Path(p) for p in paths if (Path(p) / "predictions").is_dir()]
    if not roots:
        return None
    if len(paths) > 1:
        raise InputError(f"{roots[0]}: a prediction zoo folder must be the only MODELS argument")
    return roots[0]


def scan_zoo(root: Path, args: argparse.Namespace) -> tuple[PZ.PredictionZoo, str]:
    """The zoo, checked by :func:`labelfree.zoo.predictions.scan` on the test sets the command
    reads (``--testset``, and ``--source`` when it names one of the zoo's test sets), and the
    test set to work on: ``--testset``, or the zoo's only one."""
    kind = INPUT_KINDS[args.input]
    wanted = [args.testset] if args.testset else None
    src = getattr(args, "source", None)
    if wanted and src and len(src) == 1 and not Path(src[0]).exists() and src[0] not in wanted:
        wanted.append(src[0])
    try:
        zoo = PZ.scan(root, kind, wanted, tol=args.tol)
    except PZ.PredictionZooError as exc:
        raise InputError(str(exc)) from None
    if args.testset:
        return zoo, args.testset
    if len(zoo.testsets) > 1:
        raise InputError(f"{root}: prediction zoo with test sets {zoo.testsets}; pick one with "
                         "--testset")
    return zoo, zoo.testsets[0]


def zoo_arrays(zoo: PZ.PredictionZoo, testset: str) -> tuple[np.ndarray, np.ndarray | None]:
    """Probabilities and logits of every model of a scanned zoo on ``testset``."""
    return _stack([(PZ.read_model_matrix(zoo.prediction_file(m, testset), m)[0], zoo.kind[m])
                   for m in _bar(zoo.models, "reading", "model")])


def zoo_features(zoo: PZ.PredictionZoo, testset: str, layer: str | None) -> list[np.ndarray] | None:
    """Per model, the zoo's ``layer`` features on ``testset``; ``layer`` None: the one layer
    every model has, if there is exactly one (else no features)."""
    common = set.intersection(*(set(zoo.features.get(m, [])) for m in zoo.models))
    if layer is None:
        if len(common) != 1:
            return None
        layer = next(iter(common))
    if layer not in common:
        lack = [m for m in zoo.models if layer not in zoo.features.get(m, [])]
        raise InputError(f"{zoo.feature_file(lack[0], testset, layer)}: model {lack[0]!r} has no "
                         f"{layer!r} features (--layer)")
    return [PZ.load_features(zoo, m, testset, layer) for m in zoo.models]


class Loaded:
    """What a command works on: model names, probabilities (M, N, K), logits or None, and, for a
    prediction zoo, the zoo and its test set. ``--export`` writes it as one tensor."""

    def __init__(self, args: argparse.Namespace) -> None:
        root = zoo_root(args.models)
        self.zoo: PZ.PredictionZoo | None = None
        self.testset: str | None = None
        if root is None:
            if getattr(args, "testset", None):
                raise InputError("--testset needs a prediction zoo folder (predictions/<model>/"
                                 "<testset>.npy); MODELS are single files here")
            self.names, self.P, self.logits = load_zoo(args.models, args.input, args.tol)
        else:
            self.zoo, self.testset = scan_zoo(root, args)
            self.names = list(self.zoo.models)
            self.P, self.logits = zoo_arrays(self.zoo, self.testset)
        if getattr(args, "export", None):
            export(args.export, self.names, self.P, self.logits)

    @property
    def labels(self) -> np.ndarray | None:
        """True labels of the test set (a prediction zoo's labels file), else None."""
        return None if self.zoo is None else PZ.load_labels(self.zoo, self.testset)


def load_features(folder: str, names: Sequence[str], rows: int) -> list[np.ndarray]:
    """Per model, (N, D) features from ``folder/<model>.npy`` (labelfree.zoo.predictions.
    read_feature: N rows, finite)."""
    d = Path(folder)
    if not d.is_dir():
        raise InputError(f"{d}: no such folder (features: <folder>/<model>.npy, N x D)")
    out, problems = [], []
    for name in names:
        f = d / f"{name}.npy"
        if not f.is_file():
            problems.append(f"{f}: model {name!r} has no features file")
            continue
        try:
            out.append(PZ.read_feature(f, rows))
        except PZ.PredictionZooError as exc:
            problems.append(PZ.with_model(str(exc), name))
    if problems:
        raise InputError("; ".join(problems))
    return out


def load_labels(path: str, n: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices, labels) of labelled picks: a csv with columns ``index`` and ``label`` (other
    columns ignored) or an (N,) array (read by labelfree.zoo.predictions.read_label_array).
    ``-1`` (:data:`UNLABELLED`) or an empty cell marks an unlabelled input; any other negative
    label is refused."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.suffix.lower() == ".csv" and _has_header(p):
        idx, y = _label_columns(p)
    else:
        try:
            y = PZ.read_label_array(p)
        except PZ.PredictionZooError as exc:
            raise InputError(str(exc)) from None
        if y.ndim != 1 or len(y) != n:
            raise InputError(f"{p}: {y.shape} labels for {n} inputs")
        idx = np.arange(n)
    try:
        y = np.asarray(y, dtype=np.float64)
        idx = np.asarray(idx, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{p}: indices and labels must be integers") from None
    keep = ~(np.isnan(y) | (y == UNLABELLED))
    idx, y = idx[keep], y[keep]
    _check_picks(p, idx, y, n, K)
    return idx.astype(np.int64), y.astype(np.int64)


def _label_columns(p: Path) -> tuple[np.ndarray, np.ndarray]:
    """The ``index`` and ``label`` columns of a labelled-picks csv (names in any case)."""
    try:
        df = pd.read_csv(p)
    except Exception as exc:  # noqa: BLE001 - any pandas failure: name the file
        raise InputError(f"{p}: cannot be read ({exc})") from None
    cols = {str(c).lower(): c for c in df.columns}
    if "index" not in cols or "label" not in cols:
        raise InputError(f"{p}: expected columns 'index' and 'label'")
    return df[cols["index"]].to_numpy(), df[cols["label"]].to_numpy()


def _check_picks(p: Path, idx: np.ndarray, y: np.ndarray, n: int, K: int) -> None:
    """Labelled picks: integer indices in [0, N), each once; integer labels in [0, K)."""
    if not (np.isfinite(y).all() and np.isfinite(idx).all()) \
            or np.any(np.round(y) != y) or np.any(np.round(idx) != idx):
        raise InputError(f"{p}: indices and labels must be integers")
    if y.size == 0:
        raise InputError(f"{p}: no labelled input")
    if y.min() < 0:
        i = int(np.flatnonzero(y < 0)[0])
        raise InputError(f"{p}: label {int(y[i])} at input {int(idx[i])}: labels are class ids "
                         f"0..{K - 1}; {UNLABELLED} (or an empty csv cell) marks an unlabelled "
                         "input")
    if y.max() >= K:
        raise InputError(f"{p}: label {int(y.max())} outside 0..{K - 1}")
    if idx.min() < 0 or idx.max() >= n:
        raise InputError(f"{p}: index {int(idx.max())} outside 0..{n - 1}")
    if len(np.unique(idx)) != len(idx):
        raise InputError(f"{p}: an input index appears twice")


def _has_header(p: Path) -> bool:
    with open(p) as fh:
        return not all(PZ._is_number(x.strip()) for x in fh.readline().split(","))


# ---------------------------------------------------------------------------------- output


def render(df: pd.DataFrame, fmt: str) -> str:
    """The table as the command prints it: csv, json records, or aligned text."""
    if fmt == "csv":
        return df.to_csv(index=False)
    if fmt == "json":
        return json.dumps(json.loads(df.to_json(orient="records")), indent=1) + "\n"
    return df.to_string(index=False, float_format=lambda v: f"{v:.4f}") + "\n"


def render_methods(df: pd.DataFrame, width: int = WIDTH) -> str:
    """The `labelfree methods` table in ``width`` columns: kind, name, study and needs aligned,
    each method's source wrapped in the columns left (csv and json keep it on one line)."""
    cols = ["kind", "name", "study", "needs"]
    widths = [max(len(c), *(len(str(v)) for v in df[c])) + 2 for c in cols]
    left = sum(widths)
    room = max(width - left, 30)
    pad = " " * (left if left + room <= width else width - room)
    lines = ["".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)) + "source"]
    for row in df.itertuples(index=False):
        head = "".join(str(getattr(row, c)).ljust(w) for c, w in zip(cols, widths, strict=True))
        wrapped = textwrap.wrap(str(row.source), room) or [""]
        if len(head) + len(wrapped[0]) > width:
            lines.append(head.rstrip())
            lines += [pad + w for w in wrapped]
        else:
            lines.append(head + wrapped[0])
            lines += [pad + w for w in wrapped[1:]]
    return "\n".join(line.rstrip() for line in lines) + "\n"


# ------------------------------------------------------------------------------- commands


def _ctx(args: argparse.Namespace, z: Loaded) -> dict:
    names, P = z.names, z.P
    ctx: dict = {}
    if z.logits is not None:
        ctx["logits"] = z.logits
    if z.zoo is not None:
        return _zoo_ctx(args, z, ctx)
    if getattr(args, "layer", None):
        raise InputError("--layer needs a prediction zoo folder; use --features DIR for files")
    if getattr(args, "features", None):
        ctx["features"] = load_features(args.features, names, P.shape[1])
    if getattr(args, "source", None):
        if not args.source_labels:
            raise InputError("--source needs --source-labels")
        sn, Ps, _ = load_zoo(args.source, args.input, args.tol)
        if sorted(sn) != sorted(names):
            raise InputError(f"--source has models {sn} but the zoo has {list(names)}: each "
                             "model needs its source file under the same name")
        Ps = Ps[[sn.index(n) for n in names]]  # the zoo's model order
        if Ps.shape[2] != P.shape[2]:
            raise InputError(f"{args.source[0]}: {Ps.shape[2]} classes, the zoo has {P.shape[2]}")
        try:
            y = PZ.read_labels(args.source_labels, Ps.shape[1], P.shape[2])
        except PZ.PredictionZooError as exc:
            raise InputError(f"{exc} (--source-labels: one label per --source input)") from None
        ctx["source_probs"], ctx["source_labels"] = Ps, y
        if args.source_features:
            ctx["source_features"] = load_features(args.source_features, names, Ps.shape[1])
    elif getattr(args, "source_features", None):
        raise InputError("--source-features needs --source")
    return ctx


def _zoo_ctx(args: argparse.Namespace, z: Loaded, ctx: dict) -> dict:
    """Features and source set of a prediction zoo: its own files. ``--source`` names one of
    its labelled test sets; ``--layer`` its features (default: the one layer every model has)."""
    zoo = z.zoo
    assert zoo is not None and z.testset is not None
    for opt in ("features", "source_features", "source_labels"):
        if getattr(args, opt, None):
            raise InputError(f"--{opt.replace('_', '-')}: a prediction zoo brings its own "
                             "(features/<model>/<testset>.<layer>.npy, labels/<testset>.npy); "
                             "use --layer and --source TESTSET")
    layer = getattr(args, "layer", None)
    feats = zoo_features(zoo, z.testset, layer)
    if feats is not None:
        ctx["features"] = feats
    src = getattr(args, "source", None)
    if src:
        if len(src) != 1 or src[0] not in zoo.testsets:
            raise InputError(f"--source {' '.join(src)}: with a prediction zoo, name one of its "
                             f"test sets {zoo.testsets}")
        y = PZ.load_labels(zoo, src[0])
        if y is None:
            raise InputError(f"{zoo.root / 'labels'}: test set {src[0]!r} has no labels file "
                             f"(labels/{src[0]}.npy), which --source needs")
        ctx["source_probs"], _ = zoo_arrays(zoo, src[0])
        ctx["source_labels"] = y
        sfeats = zoo_features(zoo, src[0], layer)
        if sfeats is not None:
            ctx["source_features"] = sfeats
    return ctx


#: The options that give a method what it lacks (``missing``): model files, prediction zoo;
#: in the order they are said.
FLAGS = {"source_probs": "--source", "source_labels": "--source-labels",
         "features": "--features", "source_features": "--source-features",
         "logits": "logits (--input logits)"}
ZOO_FLAGS = {"source_probs": "--source NAME of a labelled test set",
             "source_labels": "--source NAME of a labelled test set",
             "features": "--layer (features/<model>/<testset>.<layer>.npy)",
             "source_features": "features on the --source test set",
             "logits": "logits (--input logits)"}


def _needs(lack: Sequence[str], zoo: bool) -> str:
    """``lack`` (context keys) as the options that would give them, each once."""
    flags = ZOO_FLAGS if zoo else FLAGS
    order = sorted(lack, key=lambda k: list(FLAGS).index(k) if k in FLAGS else len(FLAGS))
    said = list(dict.fromkeys(flags.get(k, k) for k in order))
    return "needs " + (" and ".join(said) if len(said) < 3 else
                       ", ".join(said[:-1]) + " and " + said[-1])


def pick_methods(kind: str, wanted: Sequence[str] | None) -> list[Method]:
    """The registered methods of ``kind``, or those named in ``wanted`` (any case, in order)."""
    ms = methods(kind)
    if not wanted:
        return ms
    by_name = {m.name.lower(): m for m in ms}
    out: list[Method] = []
    for w in wanted:
        m = by_name.get(w.lower())
        if m is None:
            raise InputError(f"--method {w}: no {kind} method of that name "
                             f"(known: {', '.join(sorted(m.name for m in ms))})")
        if m not in out:
            out.append(m)
    return out


def _skip_reason(kind: str, m: Method, P: np.ndarray, ctx: dict, zoo: bool,
                 asked: bool) -> str:
    """Why ``m`` does not run here ("" if it runs): one model, a missing input, its cost."""
    if P.shape[0] < 2 and m.name in NEEDS_TWO_MODELS:
        return "needs two or more models: it reads agreement between models"
    lack = missing(m, ctx)
    if lack:
        return _needs(lack, zoo)
    if m.name in ("COT", "COTT") and P.shape[1] > 3000 and not asked:
        return "n > 3000: exact transport, seconds per model; ask for it with --method"
    return ""


def _run(kind: str, wanted: list[str] | None, P: np.ndarray, ctx: dict,
         zoo: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """Every method of ``kind`` that can run (or those asked for), as columns, and the skipped
    ones with why. A method that refuses the input is skipped, unless it was asked for."""
    cols, skipped, todo = {}, [], []
    for m in pick_methods(kind, wanted):
        if kind == "rank" and ("estimate", m.name) in REGISTRY and not wanted:
            continue  # estimators are listed by `labelfree estimate`
        why = _skip_reason(kind, m, P, ctx, zoo, bool(wanted))
        if why:
            skipped.append(f"{m.name} ({why})")
        else:
            todo.append(m)
    for m in _bar(todo, kind, "method"):
        try:
            cols[m.name] = call(kind, m.name, P, **ctx)
        except MethodInputError as exc:
            if wanted:
                raise
            skipped.append(f"{m.name} ({exc})")
    return pd.DataFrame(cols), skipped


def _with_truth(df: pd.DataFrame, z: Loaded) -> pd.DataFrame:
    """A prediction zoo's test set with labels: each model's true accuracy, as a last column."""
    y = z.labels
    if y is not None:
        df["true_accuracy"] = accuracy(z.P, y)
    return df


def _skipped(skipped: list[str]) -> None:
    if skipped:
        _note("skipped " + "; ".join(skipped))


def cmd_rank(args: argparse.Namespace) -> pd.DataFrame:
    z = Loaded(args)
    names, P = z.names, z.P
    if len(names) < 2:
        raise InputError(f"one model ({names[0]!r}): nothing to rank; `labelfree estimate` "
                         "estimates its accuracy")
    df, skipped = _run("rank", args.method, P, _ctx(args, z), z.zoo is not None)
    if df.empty:
        raise InputError("no ranking method could run: " + "; ".join(skipped))
    first = "LaF" if "LaF" in df else df.columns[0]
    df.insert(0, "model", names)
    df.insert(1, f"rank_{first}", df[first].rank(ascending=False, method="min").astype(int))
    _skipped(skipped)
    _note(f"{DIRECTION['rank']} (rank_{first}: by {first})")
    return _with_truth(df, z).sort_values(f"rank_{first}", kind="stable")


def cmd_estimate(args: argparse.Namespace) -> pd.DataFrame:
    z = Loaded(args)
    names, P = z.names, z.P
    if args.labels:
        idx, y = load_labels(args.labels, P.shape[1], P.shape[2])
        acc = accuracy_from_labels(P, idx, y)
        se = np.sqrt(acc * (1 - acc) / len(idx))
        _note(f"accuracy on the {len(idx)} labelled inputs; higher = better")
        return pd.DataFrame({"model": names, "accuracy": acc, "std_error": se,
                             "labels": len(idx)})
    df, skipped = _run("estimate", args.method, P, _ctx(args, z), z.zoo is not None)
    if df.empty:
        raise InputError("no estimator could run: " + "; ".join(skipped))
    df.insert(0, "model", names)
    _skipped(skipped)
    _note(DIRECTION["estimate"])
    if z.zoo is not None:
        _note(f"which estimate to trust: `labelfree answer {z.zoo.root}` chooses the estimator "
              "with the lowest error on the zoo's other labelled test sets, with a prediction "
              "interval")
    return _with_truth(df, z)


def cmd_select(args: argparse.Namespace) -> pd.DataFrame:
    P = Loaded(args).P
    method = pick_methods("select", [args.method])[0]
    if not 1 <= args.budget <= P.shape[1]:
        raise InputError(f"--budget {args.budget}: must lie in 1..{P.shape[1]} (the inputs)")
    with _elapsed(f"select {method.name}"):
        idx = call("select", method.name, P, args.budget, args.seed)
    basis = SELECT_BASIS.get(method.name, "on the predictions")
    _note(f"{method.name} picked {len(idx)} of {P.shape[1]} inputs {basis}; label them (a "
          "'label' column) and run `labelfree estimate MODELS --labels FILE`")
    return pd.DataFrame({"order": np.arange(len(idx)), "index": np.asarray(idx, dtype=np.int64)})


def answer_arrays(zoo: PZ.PredictionZoo) -> tuple[dict[str, np.ndarray],
                                                  dict[str, np.ndarray | None]]:
    """Logits (test set -> (M, N, K) float32) and labels (test set -> (N,) or None) of a scanned
    prediction zoo, converted as the workflow's import stores them
    (:func:`labelfree.zoo.predictions.load_logits`: probabilities as log-probabilities)."""
    logits = {t: np.stack([PZ.load_logits(zoo, m, t) for m in zoo.models])
              for t in _bar(zoo.testsets, "reading", "test set")}
    return logits, {t: PZ.load_labels(zoo, t) for t in zoo.testsets}


#: Said where `labelfree answer`'s page has the workflow's scorecard paragraph.
NO_SCORECARD = ("Scorecard: not run by `labelfree answer`; the workflow's scorecard scores every "
                "method on this zoo's labelled sets (docs/your-zoo.md, section 2).")


def cmd_answer(args: argparse.Namespace) -> pd.DataFrame | str:
    """The workflow's answer (labelfree.answer.answer, the same function its answer job calls)
    for a prediction zoo folder: the page, or with --csv/--json its table; --out DIR writes
    answer.md, answer.csv and label-these.csv as the workflow does."""
    root = zoo_root(args.models)
    if root is None or len(args.models) != 1:
        raise InputError(f"{args.models[0]}: `labelfree answer` reads one prediction zoo folder "
                         "(predictions/<model>/<testset>.npy, labels/<testset>.npy; "
                         "docs/your-zoo.md, section 2)")
    try:
        zoo = PZ.scan(root, INPUT_KINDS[args.input], None, tol=args.tol)
    except PZ.PredictionZooError as exc:
        raise InputError(str(exc)) from None
    try:
        A.headline_first(zoo.testsets, args.headline)
    except ValueError as exc:
        raise InputError(f"--headline: {exc}") from None
    source = args.source if args.source is not None else A.DEFAULTS["source"]
    if source not in zoo.testsets:
        if args.source is not None:
            raise InputError(f"--source {source}: not one of the zoo's test sets {zoo.testsets}")
        _note(f"no test set named {source!r}: no labelled source set, so the estimators that "
              "need one are left out (--source NAME names it)")
        source = None
    elif zoo.label_file(source) is None:
        _note(f"test set {source!r} has no labels (labels/{source}.npy): it cannot calibrate "
              "the estimators that need a labelled source set")
    if not 0 < args.level < 1:
        raise InputError(f"--level {args.level}: must lie strictly between 0 and 1")
    if args.budget < 1 or args.bootstrap < 10 or args.max_mae < 0:
        raise InputError("--budget must be at least 1, --bootstrap at least 10, --max-mae at "
                         "least 0")
    logits, labels = answer_arrays(zoo)
    estimators = [m.name for m in pick_methods("estimate", args.method)] if args.method else None
    name = root.resolve().name
    with _elapsed("answer"):
        a = A.answer(name, zoo.models, logits, labels, source, budget=args.budget,
                     seed=args.seed, n_boot=args.bootstrap,
                     kinds=A.prediction_zoo_kinds(zoo.testsets), level=args.level,
                     max_mae=args.max_mae, estimators=estimators, headline=args.headline,
                     scorecard_line=NO_SCORECARD)
    if args.out:
        out = Path(args.out)
        try:
            out.mkdir(parents=True, exist_ok=True)
            A.save(a, name, out / "answer.md", out / "answer.csv", out / "label-these.csv")
        except OSError as exc:
            raise InputError(f"--out {out}: cannot write ({exc})") from None
        _note(f"wrote {out / 'answer.md'}, {out / 'answer.csv'} and {out / 'label-these.csv'}")
    _note("estimates and intervals are accuracies in [0, 1] (the page: %); higher = better")
    return a.table if args.fmt != "table" else a.markdown


def cmd_methods(args: argparse.Namespace) -> pd.DataFrame:
    return pd.DataFrame([dict(kind=m.kind, name=m.name, study=m.study,
                              needs=",".join(sorted(m.needs)) or "-", source=m.cite)
                         for m in methods()])


# --------------------------------------------------------------------------------- parser


def version() -> str:
    try:
        return metadata.version("labelfree")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _common(sp: argparse.ArgumentParser, zoo: bool = True, one_set: bool = True) -> None:
    """Options every command has: what to read (not `methods`) and the output format;
    ``one_set``: the options of commands that work on one test set (`--testset`, `--export`)."""
    if zoo:
        sp.add_argument("models", nargs="+" if one_set else 1, metavar="MODELS" if one_set else "ZOO",
                        help="model files (.npy/.npz/.csv/.pt, N x K each) or folders of them; "
                             "or one (models, inputs, classes) tensor with its names in "
                             "<stem>.models.txt; or one prediction zoo folder "
                             "(predictions/<model>/<testset>.npy)" if one_set else
                             "one prediction zoo folder (predictions/<model>/<testset>.npy, "
                             "labels/<testset>.npy; docs/your-zoo.md, section 2)")
        if one_set:
            sp.add_argument("--testset", metavar="NAME",
                            help="a prediction zoo's test set to work on (default: its only "
                                 "one)")
        sp.add_argument("--input", choices=tuple(INPUT_KINDS), default="auto",
                        help="what the arrays hold (auto: probabilities if rows are "
                             "non-negative and sum to 1, else logits or log-probabilities; an "
                             "npz's 'logits'/'probs' key says it for its file)")
        sp.add_argument("--tol", type=float, default=PZ.SUM_TOL,
                        help=f"tolerance of the row sums of probabilities (default "
                             f"{PZ.SUM_TOL})")
        if one_set:
            sp.add_argument("--export", metavar="PATH",
                            help="also write the predictions read as one (models, inputs, "
                                 "classes) tensor to PATH (.npy, .npz or .pt) and the model "
                                 "names to <stem>.models.txt beside it")
    fmt = sp.add_mutually_exclusive_group()
    fmt.add_argument("--csv", dest="fmt", action="store_const", const="csv",
                     help="CSV output (default: an aligned table)")
    fmt.add_argument("--json", dest="fmt", action="store_const", const="json",
                     help="JSON output, one record per row")
    sp.set_defaults(fmt="table")


def _source(sp: argparse.ArgumentParser) -> None:
    """Options that give methods more than the predictions: a labelled source set, features."""
    sp.add_argument("--source", nargs="+", metavar="PATH",
                    help="the same models on a labelled in-distribution set (for ATC, DoC, "
                         "COT, ALine); with a prediction zoo, the name of its labelled test "
                         "set")
    sp.add_argument("--source-labels", metavar="FILE",
                    help="labels of the --source set (.npy or one-column csv, one per input)")
    sp.add_argument("--features", metavar="DIR",
                    help="per-model features DIR/<model>.npy, N x D (for Dispersion, FD)")
    sp.add_argument("--source-features", metavar="DIR",
                    help="per-model features on the --source set (for FD)")
    sp.add_argument("--layer", metavar="NAME",
                    help="a prediction zoo's features layer (features/<model>/<testset>."
                         "<layer>.npy; default: the one layer every model has)")
    sp.add_argument("--method", action="append", metavar="NAME",
                    help="run only this method (repeatable; any case; `labelfree methods` "
                         "lists them)")


def parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(
        prog="labelfree", formatter_class=raw,
        description="Rank models, estimate their accuracy and choose inputs to label, from "
                    "arrays of predictions (one N x K file of logits or probabilities per model).",
        epilog=EXAMPLES)
    p.add_argument("--version", action="version", version=f"labelfree {version()}",
                   help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    r = sub.add_parser("rank", formatter_class=raw,
                       help="rank models without labels (LaF and baselines; higher = better)",
                       description="Rank models without labels. Each method's column is its "
                                   f"score: {DIRECTION['rank']}.",
                       epilog="example:\n  labelfree rank preds/ --json")
    _common(r)
    _source(r)
    r.set_defaults(func=cmd_rank)
    e = sub.add_parser("estimate", formatter_class=raw,
                       help="estimate accuracy without labels, or from labelled picks",
                       description=f"Estimate each model's accuracy: {DIRECTION['estimate']}.",
                       epilog="examples:\n  labelfree estimate preds/\n"
                              "  labelfree estimate preds/ --labels picks.csv   "
                              "# csv columns index,label")
    _common(e)
    _source(e)
    e.add_argument("--labels", metavar="FILE",
                   help=f"labelled picks: csv 'index,label' or an (N,) array; {UNLABELLED} (or "
                        "an empty csv cell) = unlabelled, other negative labels are refused")
    e.set_defaults(func=cmd_estimate)
    s = sub.add_parser("select", help="which inputs to label (PACE by default)",
                       formatter_class=raw,
                       epilog="example:\n  labelfree select preds/ --budget 50 --csv > picks.csv")
    _common(s)
    s.add_argument("--budget", type=int, required=True, help="number of inputs to label")
    s.add_argument("--method", default="PACE", metavar="NAME",
                   help="PACE (default), CES, SDS or SRS (any case)")
    s.add_argument("--seed", type=int, default=0,
                   help="random seed of the selection (default 0); the same seed gives the "
                        "same picks")
    s.set_defaults(func=cmd_select)
    d = A.DEFAULTS
    a = sub.add_parser(
        "answer", formatter_class=raw,
        help="the workflow's answer for a prediction zoo folder: estimator chosen on its "
             "labelled sets, split-conformal interval, LaF ranking, inputs to label",
        description="The answer the workflow writes to results/answer/<zoo>/answer.md, from a "
                    "prediction zoo folder, by the same code: LaF's ranking; each model's "
                    "accuracy estimated without labels by the estimator with the lowest error "
                    "on the zoo's other labelled sets, with a split-conformal prediction "
                    "interval from those errors; whether to trust it; the inputs PACE would "
                    "have a person label. Estimates are accuracies (higher = better). Prints "
                    "the page (markdown); --csv and --json print its table (one row per test "
                    "set and model). The defaults are the workflow's (config answer:).",
        epilog="examples:\n  labelfree answer myzoo/ --source id\n"
               "  labelfree answer myzoo/ --headline shifted --csv > answer.csv\n"
               "  labelfree answer myzoo/ --out results/answer/myzoo")
    _common(a, one_set=False)
    a.add_argument("--source", metavar="NAME",
                   help=f"the labelled in-distribution test set that calibrates ATC, DoC, COT "
                        f"and ALine; never evidence for choosing (default {d['source']!r} when "
                        "the zoo has it)")
    a.add_argument("--headline", metavar="NAME",
                   help="the test set that heads the answer (default: the zoo's first, "
                        "alphabetically; config answer.headline)")
    a.add_argument("--level", type=float, default=d["level"],
                   help=f"stated coverage of the prediction interval (default {d['level']})")
    a.add_argument("--max-mae", type=float, default=d["max_mae"],
                   help="trust threshold on the chosen estimator's held-out mean absolute "
                        f"error, as a fraction (default {d['max_mae']} = 10 points)")
    a.add_argument("--budget", type=int, default=d["budget"],
                   help=f"inputs PACE picks to label (default {d['budget']})")
    a.add_argument("--bootstrap", type=int, default=d["bootstrap"],
                   help="resamples behind the sampling-spread column (default "
                        f"{d['bootstrap']})")
    a.add_argument("--seed", type=int, default=d["seed"],
                   help=f"seed of the bootstrap and of PACE's picks (default {d['seed']}, the "
                        "workflow's `seed`)")
    a.add_argument("--method", action="append", metavar="NAME",
                   help="an estimator the answer may choose (repeatable, any case; default: "
                        "every registered one; config answer.estimators)")
    a.add_argument("--out", metavar="DIR",
                   help="also write answer.md, answer.csv and label-these.csv to DIR")
    a.set_defaults(func=cmd_answer)
    m = sub.add_parser("methods", help="list the registered methods")
    _common(m, zoo=False)
    m.set_defaults(func=cmd_methods)
    return p


def _write(text: str) -> int:
    """Write the output; a reader that went away (``| head``) ends the command quietly."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # the interpreter flushes stdout again at exit: point it at /dev/null first
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_PIPE
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        df = args.func(args)
    except (InputError, MethodInputError) as exc:
        print(f"labelfree: error: {exc}", file=sys.stderr)
        return 2
    if isinstance(df, str):
        return _write(df)
    if args.command == "methods" and args.fmt == "table":
        return _write(render_methods(df))
    return _write(render(df, args.fmt))


if __name__ == "__main__":
    sys.exit(main())
