"""The ``labelfree`` command: rank, estimate and select on arrays, without the workflow (issue 14).

Inputs are one file per model (``.npy``, ``.npz``, ``.csv``: N x K logits or probabilities), a
folder of such files (sorted by name), or a prediction zoo folder as the workflow reads it (one
file per model and test set, labels and features optional; docs/your-zoo.md section 2), of which
``--testset`` picks the test set. Every method is reached through
:mod:`labelfree.methods.registry`. Bad input ends the command with exit status 2 and one line on
stderr naming the file.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from labelfree.zoo import predictions as PZ

EXAMPLES = """examples:
  labelfree rank preds/                         # every model file in preds/, LaF and baselines
  labelfree estimate preds/ --source val/ --source-labels val_labels.npy
  labelfree rank preds/ --features feats/ --method Dispersion   # feats/<model>.npy, N x D
  labelfree select preds/ --budget 50 --csv > to_label.csv
  labelfree rank myzoo/ --testset shifted --source id   # a prediction zoo: predictions/<model>/
  labelfree estimate preds/ --labels labelled.csv   # accuracy from the labelled picks
  labelfree methods                             # what is registered, and what each needs
"""
#: --input choices; `probs` is short for `probabilities`.
INPUT_KINDS = {"auto": "auto", "probs": "probabilities", "probabilities": "probabilities",
               "logits": "logits"}


class InputError(Exception):
    """Bad input; the message names the file (and the model)."""


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
                raise InputError(f"{p}: folder holds no .npy, .npz or .csv file")
            out += files
        elif p.exists():
            out.append(p)
        else:
            raise InputError(f"{p}: no such file or folder")
    return out


def load_zoo(paths: Sequence[str], kind: str = "auto", tol: float = PZ.SUM_TOL,
             what: str = "model") -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """Model names (file stems), probabilities (M, N, K) and logits (None unless every file
    holds logits) from files/folders, each file read and checked by
    :func:`labelfree.zoo.predictions.read_matrix` and :func:`~labelfree.zoo.predictions.classify`
    and all together by :func:`~labelfree.zoo.predictions.check_shapes`; every problem in one
    InputError, each naming file and model."""
    files = model_files(paths)
    names = [f.stem for f in files]
    if len(set(names)) != len(names):
        names = [str(f) for f in files]
    kind = INPUT_KINDS[kind]
    problems: list[str] = []
    arrays: dict[str, tuple[np.ndarray, str]] = {}
    for name, f in zip(names, files, strict=True):
        try:
            arr, declared = PZ.read_matrix(f)
            arrays[name] = (arr, PZ.classify(arr, declared, kind, str(f), tol))
        except PZ.PredictionZooError as exc:
            problems.append(PZ.with_model(str(exc), name))
    _, _, off = PZ.check_shapes({(n, ""): a.shape for n, (a, _) in arrays.items()},
                                {(n, ""): str(f) for n, f in zip(names, files, strict=True)}, [""])
    problems += off
    if problems:
        head = f"{len(problems)} problems: " if len(problems) > 1 else ""
        raise InputError(head + "; ".join(problems))
    return names, *_stack(list(arrays.values()))


def _stack(arrays: Sequence[tuple[np.ndarray, str]]) -> tuple[np.ndarray, np.ndarray | None]:
    """Probabilities (M, N, K) and logits (None unless every model's are logits) of checked
    (matrix, kind) pairs: logits through softmax, probabilities renormalised."""
    probs, logits = [], []
    for arr, k in arrays:
        if k == "logits":
            from labelfree.numerics import softmax

            probs.append(softmax(arr))
            logits.append(arr)
        else:
            probs.append(arr / arr.sum(axis=1, keepdims=True))
            logits.append(None)
    lg = np.stack(logits) if all(z is not None for z in logits) else None
    return np.stack(probs), lg


# A prediction zoo folder (labelfree.zoo.predictions.scan, the workflow's reader): one file per
# model and test set; the command works on one test set of it, `--testset`.


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
    return _stack([(PZ.read_matrix(zoo.prediction_file(m, testset))[0], zoo.kind[m])
                   for m in zoo.models])


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
    prediction zoo, the zoo and its test set."""

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
        f = d / f"{Path(name).stem}.npy"
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
    """(indices, labels) of labelled picks: a csv of ``index,label`` rows or an (N,) array with
    a negative value for unlabelled inputs (read by labelfree.zoo.predictions.read_label_array)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.suffix.lower() == ".csv" and _has_header(p):
        try:
            df = pd.read_csv(p)
        except Exception as exc:
            raise InputError(f"{p}: cannot be read ({exc})") from None
        cols = {c.lower(): c for c in df.columns}
        if "index" not in cols or "label" not in cols:
            raise InputError(f"{p}: expected columns 'index' and 'label'")
        idx, y = df[cols["index"]].to_numpy(), df[cols["label"]].to_numpy()
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
    keep = np.isfinite(y) & (y >= 0)
    idx, y = idx[keep], y[keep]
    if np.any(np.round(y) != y) or np.any(np.round(idx) != idx):
        raise InputError(f"{p}: indices and labels must be integers")
    if y.size == 0:
        raise InputError(f"{p}: no labelled input")
    if y.max() >= K:
        raise InputError(f"{p}: label {int(y.max())} outside 0..{K - 1}")
    if idx.min() < 0 or idx.max() >= n:
        raise InputError(f"{p}: index {int(idx.max())} outside 0..{n - 1}")
    if len(np.unique(idx)) != len(idx):
        raise InputError(f"{p}: an input index appears twice")
    return idx.astype(np.int64), y.astype(np.int64)


def _has_header(p: Path) -> bool:
    with open(p) as fh:
        return not all(PZ._is_number(x) for x in fh.readline().split(","))


# ---------------------------------------------------------------------------------- output


def emit(df: pd.DataFrame, fmt: str, out=None) -> None:
    out = out or sys.stdout
    if fmt == "csv":
        df.to_csv(out, index=False)
    elif fmt == "json":
        json.dump(json.loads(df.to_json(orient="records")), out, indent=1)
        out.write("\n")
    else:
        out.write(df.to_string(index=False, float_format=lambda v: f"{v:.4f}") + "\n")


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
        sn, Ps, _ = load_zoo(args.source, args.input, args.tol, what="source model")
        if len(sn) != len(names):
            raise InputError(f"--source has {len(sn)} models but the zoo has {len(names)}")
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


def _run(kind: str, wanted: list[str] | None, P, ctx) -> tuple[pd.DataFrame, list[str]]:
    from labelfree.methods.registry import call, methods, missing

    cols, skipped = {}, []
    ms = methods(kind)
    if wanted:
        known = {m.name for m in ms}
        for w in wanted:
            if w not in known:
                raise InputError(f"--method {w}: no {kind} method of that name "
                                 f"(known: {', '.join(sorted(known))})")
        ms = [m for m in ms if m.name in wanted]
    for m in ms:
        if kind == "rank" and ("estimate", m.name) in _registry() and not wanted:
            continue  # estimators are listed by `labelfree estimate`
        lack = missing(m, ctx)
        if lack:
            skipped.append(f"{m.name} (needs {', '.join(lack)})")
            continue
        if m.name in ("COT", "COTT") and P.shape[1] > 3000 and not wanted:
            skipped.append(f"{m.name} (n > 3000: exact transport, seconds per model; "
                           "ask for it with --method)")
            continue
        cols[m.name] = call(kind, m.name, P, **ctx)
    return pd.DataFrame(cols), skipped


def _registry():
    from labelfree.methods.registry import REGISTRY

    return REGISTRY


def _with_truth(df: pd.DataFrame, z: Loaded) -> pd.DataFrame:
    """A prediction zoo's test set with labels: each model's true accuracy, as a last column."""
    y = z.labels
    if y is not None:
        from labelfree.methods.arrays import accuracy

        df["true_accuracy"] = accuracy(z.P, y)
    return df


def cmd_rank(args: argparse.Namespace) -> pd.DataFrame:
    z = Loaded(args)
    names, P = z.names, z.P
    df, skipped = _run("rank", args.method, P, _ctx(args, z))
    if df.empty:
        raise InputError("no ranking method could run: " + "; ".join(skipped))
    first = "LaF" if "LaF" in df else df.columns[0]
    df.insert(0, "model", names)
    df.insert(1, f"rank_{first}", df[first].rank(ascending=False, method="min").astype(int))
    _note(skipped)
    return _with_truth(df, z).sort_values(f"rank_{first}", kind="stable")


def cmd_estimate(args: argparse.Namespace) -> pd.DataFrame:
    z = Loaded(args)
    names, P = z.names, z.P
    if args.labels:
        from labelfree.methods.registry import accuracy_from_labels

        idx, y = load_labels(args.labels, P.shape[1], P.shape[2])
        acc = accuracy_from_labels(P, idx, y)
        se = np.sqrt(acc * (1 - acc) / len(idx))
        return pd.DataFrame({"model": names, "accuracy": acc, "std_error": se,
                             "labels": len(idx)})
    df, skipped = _run("estimate", args.method, P, _ctx(args, z))
    if df.empty:
        raise InputError("no estimator could run: " + "; ".join(skipped))
    df.insert(0, "model", names)
    _note(skipped)
    return _with_truth(df, z)


def cmd_select(args: argparse.Namespace) -> pd.DataFrame:
    from labelfree.methods.registry import call

    P = Loaded(args).P
    if not 1 <= args.budget <= P.shape[1]:
        raise InputError(f"--budget {args.budget}: must lie in 1..{P.shape[1]} (the inputs)")
    idx = call("select", args.method, P, args.budget, args.seed)
    return pd.DataFrame({"order": np.arange(len(idx)), "index": np.asarray(idx, dtype=np.int64)})


def cmd_methods(args: argparse.Namespace) -> pd.DataFrame:
    from labelfree.methods.registry import methods

    return pd.DataFrame([dict(kind=m.kind, name=m.name, study=m.study,
                              needs=",".join(sorted(m.needs)) or "-", source=m.cite)
                         for m in methods()])


def _note(skipped: list[str]) -> None:
    if skipped:
        print("labelfree: skipped " + "; ".join(skipped), file=sys.stderr)


# --------------------------------------------------------------------------------- parser


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labelfree", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Rank models, estimate their accuracy and choose inputs to label, from "
                    "arrays of predictions (one N x K file of logits or probabilities per model).",
        epilog=EXAMPLES)
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser, zoo: bool = True) -> None:
        if zoo:
            sp.add_argument("models", nargs="+",
                            help="model files (.npy/.npz/.csv) or folders of them, or one "
                                 "prediction zoo folder (predictions/<model>/<testset>.npy)")
            sp.add_argument("--testset", metavar="NAME",
                            help="a prediction zoo's test set to work on (default: its only one)")
            sp.add_argument("--input", choices=tuple(INPUT_KINDS), default="auto",
                            help="what the arrays hold (auto: probabilities if rows are "
                                 "non-negative and sum to 1; an npz's 'logits'/'probs' key "
                                 "says it for its file)")
            sp.add_argument("--tol", type=float, default=PZ.SUM_TOL,
                            help=f"tolerance of the row sums of probabilities (default "
                                 f"{PZ.SUM_TOL})")
        fmt = sp.add_mutually_exclusive_group()
        fmt.add_argument("--csv", dest="fmt", action="store_const", const="csv", help="CSV output")
        fmt.add_argument("--json", dest="fmt", action="store_const", const="json",
                         help="JSON output")
        sp.set_defaults(fmt="table")

    def source(sp: argparse.ArgumentParser) -> None:
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
        sp.add_argument("--method", action="append", help="run only this method (repeatable)")

    r = sub.add_parser("rank", help="rank models without labels (LaF and baselines)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="example:\n  labelfree rank preds/ --json")
    common(r)
    source(r)
    r.set_defaults(func=cmd_rank)
    e = sub.add_parser("estimate", help="estimate accuracy without labels, or from labelled picks",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n  labelfree estimate preds/\n"
                              "  labelfree estimate preds/ --labels picks.csv   "
                              "# csv columns index,label")
    common(e)
    source(e)
    e.add_argument("--labels", metavar="FILE",
                   help="labelled picks: csv 'index,label' or an (N,) array with -1 = unlabelled")
    e.set_defaults(func=cmd_estimate)
    s = sub.add_parser("select", help="which inputs to label (PACE by default)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="example:\n  labelfree select preds/ --budget 50 --csv > picks.csv")
    common(s)
    s.add_argument("--budget", type=int, required=True, help="number of inputs to label")
    s.add_argument("--method", default="PACE", help="PACE (default), CES, SDS or SRS")
    s.add_argument("--seed", type=int, default=0)
    s.set_defaults(func=cmd_select)
    m = sub.add_parser("methods", help="list the registered methods")
    common(m, zoo=False)
    m.set_defaults(func=cmd_methods)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        df = args.func(args)
    except InputError as exc:
        print(f"labelfree: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # method-level validation errors carry their own message
        from labelfree.methods.arrays import MethodInputError

        if isinstance(exc, MethodInputError):
            print(f"labelfree: error: {exc}", file=sys.stderr)
            return 2
        raise
    emit(df, args.fmt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
