"""The ``labelfree`` command: rank, estimate and select on arrays, without the workflow (issue 14).

Inputs are one file per model (``.npy``, ``.npz``, ``.csv``: N x K logits or probabilities) or a
folder of such files (sorted by name). Every method is reached through
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

SUFFIXES = (".npy", ".npz", ".csv")
EXAMPLES = """examples:
  labelfree rank preds/                         # every model file in preds/, LaF and baselines
  labelfree estimate preds/ --source val/ --source-labels val_labels.npy
  labelfree select preds/ --budget 50 --csv > to_label.csv
  labelfree estimate preds/ --labels labelled.csv   # accuracy from the labelled picks
  labelfree methods                             # what is registered, and what each needs
"""


class InputError(Exception):
    """Bad input; the message names the file."""


# --------------------------------------------------------------------------------- loading


def model_files(paths: Sequence[str]) -> list[Path]:
    """Expand folders into their array files (sorted); keep files as given."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.suffix.lower() in SUFFIXES and f.is_file())
            if not files:
                raise InputError(f"{p}: folder holds no .npy, .npz or .csv file")
            out += files
        elif p.exists():
            out.append(p)
        else:
            raise InputError(f"{p}: no such file or folder")
    return out


def read_array(path: Path) -> np.ndarray:
    """Read one array: .npy, .npz (key 'probs', 'logits' or the only array), .csv (no header)."""
    try:
        suf = path.suffix.lower()
        if suf == ".npy":
            return np.load(path, allow_pickle=False)
        if suf == ".npz":
            with np.load(path, allow_pickle=False) as z:
                keys = list(z.keys())
                for k in ("probs", "logits", "labels"):
                    if k in keys:
                        return z[k]
                if len(keys) != 1:
                    raise InputError(f"{path}: .npz holds {keys}; name one 'probs' or 'logits'")
                return z[keys[0]]
        if suf == ".csv":
            df = pd.read_csv(path, header=None)
            if not all(pd.api.types.is_numeric_dtype(t) for t in df.dtypes):
                df = pd.read_csv(path)  # a header row
            return df.to_numpy()
        raise InputError(f"{path}: unknown file type {suf!r} (use .npy, .npz or .csv)")
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None


def to_probs(a: np.ndarray, path: Path, kind: str, tol: float) -> tuple[np.ndarray, np.ndarray | None]:
    """Validate an N x K array and return (probabilities, logits or None)."""
    if a.ndim != 2:
        raise InputError(f"{path}: expected an N x K matrix, got shape {a.shape}")
    if a.shape[0] < 1 or a.shape[1] < 2:
        raise InputError(f"{path}: expected N >= 1 rows and K >= 2 columns, got {a.shape}")
    if not np.issubdtype(a.dtype, np.number):
        raise InputError(f"{path}: values are not numbers (dtype {a.dtype})")
    a = a.astype(np.float64)
    bad = ~np.isfinite(a)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise InputError(f"{path}: non-finite value {a[r, c]} at row {r}, column {c}")
    if kind == "auto":
        kind = "probs" if a.min() >= 0 and a.max() <= 1 else "logits"
    if kind == "logits":
        from labelfree.methods import softmax

        return softmax(a), a
    if a.min() < 0:
        raise InputError(f"{path}: probabilities must be >= 0 (min {a.min():.3g})")
    dev = np.abs(a.sum(axis=1) - 1.0)
    if dev.max() > tol:
        r = int(dev.argmax())
        raise InputError(f"{path}: probabilities do not sum to 1 (row {r} sums to "
                         f"{a[r].sum():.6g}); pass --input logits if these are logits")
    return a / a.sum(axis=1, keepdims=True), None


def load_zoo(paths: Sequence[str], kind: str = "auto", tol: float = 1e-3, what: str = "model"
             ) -> tuple[list[str], np.ndarray, np.ndarray | None]:
    """Model names, probabilities (M, N, K) and logits (or None) from files/folders."""
    files = model_files(paths)
    probs, logits, names = [], [], []
    for f in files:
        p, z = to_probs(read_array(f), f, kind, tol)
        if probs and p.shape[1] != probs[0].shape[1]:
            raise InputError(f"{f}: {p.shape[1]} classes, but {files[0]} has {probs[0].shape[1]} "
                             "(K must match across models)")
        if probs and p.shape[0] != probs[0].shape[0]:
            raise InputError(f"{f}: {p.shape[0]} rows, but {files[0]} has {probs[0].shape[0]} "
                             f"(every {what} must score the same inputs in the same order)")
        probs.append(p)
        logits.append(z)
        names.append(f.stem)
    if len(set(names)) != len(names):
        names = [str(f) for f in files]
    lg = np.stack(logits) if all(z is not None for z in logits) else None
    return names, np.stack(probs), lg


def load_labels(path: str, n: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices, labels) from a csv of ``index,label`` rows or an (N,) array (negative = none)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.suffix.lower() == ".csv":
        try:
            df = pd.read_csv(p)
        except Exception as exc:
            raise InputError(f"{p}: cannot be read ({exc})") from None
        cols = {c.lower(): c for c in df.columns}
        if "index" in cols and "label" in cols:
            idx, y = df[cols["index"]].to_numpy(), df[cols["label"]].to_numpy()
        elif df.shape[1] == 1:
            y = np.concatenate([[float(df.columns[0])], df.iloc[:, 0].to_numpy()])
            idx = np.arange(len(y))
        else:
            raise InputError(f"{p}: expected columns 'index' and 'label'")
    else:
        y = read_array(p).reshape(-1)
        if len(y) != n:
            raise InputError(f"{p}: {len(y)} labels for {n} inputs")
        idx = np.arange(n)
    y = np.asarray(y, dtype=np.float64)
    idx = np.asarray(idx, dtype=np.float64)
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


def _ctx(args: argparse.Namespace, names: list[str], P: np.ndarray, logits) -> dict:
    ctx: dict = {}
    if logits is not None:
        ctx["logits"] = logits
    if args.source:
        if not args.source_labels:
            raise InputError("--source needs --source-labels")
        sn, Ps, _ = load_zoo(args.source, args.input, args.tol, what="source model")
        if len(sn) != len(names):
            raise InputError(f"--source has {len(sn)} models but the zoo has {len(names)}")
        if Ps.shape[2] != P.shape[2]:
            raise InputError(f"{args.source[0]}: {Ps.shape[2]} classes, the zoo has {P.shape[2]}")
        idx, y = load_labels(args.source_labels, Ps.shape[1], P.shape[2])
        if len(idx) != Ps.shape[1]:
            raise InputError(f"{args.source_labels}: every source input needs a label")
        ctx["source_probs"], ctx["source_labels"] = Ps, y[np.argsort(idx)]
    return ctx


def _run(kind: str, wanted: list[str] | None, P, ctx) -> tuple[pd.DataFrame, list[str]]:
    from labelfree.methods import call, methods, missing

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
            skipped.append(f"{m.name} (n > 3000: slow, ask for it with --method)")
            continue
        cols[m.name] = call(kind, m.name, P, **ctx)
    return pd.DataFrame(cols), skipped


def _registry():
    from labelfree.methods import REGISTRY

    return REGISTRY


def cmd_rank(args: argparse.Namespace) -> pd.DataFrame:
    names, P, lg = load_zoo(args.models, args.input, args.tol)
    df, skipped = _run("rank", args.method, P, _ctx(args, names, P, lg))
    if df.empty:
        raise InputError("no ranking method could run: " + "; ".join(skipped))
    first = "LaF" if "LaF" in df else df.columns[0]
    df.insert(0, "model", names)
    df.insert(1, f"rank_{first}", df[first].rank(ascending=False, method="min").astype(int))
    _note(skipped)
    return df.sort_values(f"rank_{first}", kind="stable")


def cmd_estimate(args: argparse.Namespace) -> pd.DataFrame:
    names, P, lg = load_zoo(args.models, args.input, args.tol)
    if args.labels:
        from labelfree.methods import accuracy_from_labels

        idx, y = load_labels(args.labels, P.shape[1], P.shape[2])
        acc = accuracy_from_labels(P, idx, y)
        se = np.sqrt(acc * (1 - acc) / len(idx))
        return pd.DataFrame({"model": names, "accuracy": acc, "std_error": se,
                             "labels": len(idx)})
    df, skipped = _run("estimate", args.method, P, _ctx(args, names, P, lg))
    if df.empty:
        raise InputError("no estimator could run: " + "; ".join(skipped))
    df.insert(0, "model", names)
    _note(skipped)
    return df


def cmd_select(args: argparse.Namespace) -> pd.DataFrame:
    from labelfree.methods import call

    names, P, lg = load_zoo(args.models, args.input, args.tol)
    if not 1 <= args.budget <= P.shape[1]:
        raise InputError(f"--budget {args.budget}: must lie in 1..{P.shape[1]} (the inputs)")
    idx = call("select", args.method, P, args.budget, args.seed)
    return pd.DataFrame({"order": np.arange(len(idx)), "index": np.asarray(idx, dtype=np.int64)})


def cmd_methods(args: argparse.Namespace) -> pd.DataFrame:
    from labelfree.methods import methods

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
            sp.add_argument("models", nargs="+", help="model files (.npy/.npz/.csv) or folders")
            sp.add_argument("--input", choices=("auto", "probs", "logits"), default="auto",
                            help="what the arrays hold (auto: probabilities if all in [0, 1])")
            sp.add_argument("--tol", type=float, default=1e-3,
                            help="tolerance of the row sums of probabilities (default 1e-3)")
        fmt = sp.add_mutually_exclusive_group()
        fmt.add_argument("--csv", dest="fmt", action="store_const", const="csv", help="CSV output")
        fmt.add_argument("--json", dest="fmt", action="store_const", const="json",
                         help="JSON output")
        sp.set_defaults(fmt="table")

    def source(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--source", nargs="+", metavar="PATH",
                        help="the same models on a labelled in-distribution set (for ATC, DoC, "
                             "COT, ALine)")
        sp.add_argument("--source-labels", metavar="FILE", help="labels of the --source set")
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
        from labelfree.methods import MethodInputError

        if isinstance(exc, MethodInputError):
            print(f"labelfree: error: {exc}", file=sys.stderr)
            return 2
        raise
    emit(df, args.fmt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
