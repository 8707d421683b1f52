"""Zoo sheets: one row per model (ARCHITECTURE.md, configuration).

A zoo is either a sheet file (TSV/CSV, one row per model) or a ``grid`` in the config that
expands to a sheet: each grid entry is a family whose list-valued fields form a Cartesian
product. The sheet is a pure function of the config, so Snakemake can list every model at
parse time.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pandas as pd

from labelfree.zoo.evalspec import EvalSpecError, is_eval_spec, parse_eval_spec
from labelfree.zoo.geometry import GeometryError, split_geometry

#: Where a model comes from.
SOURCES = ("local", "torchvision", "hub", "checkpoint", "keras", "timm", "hf-hub")

#: Sources whose preprocessing defaults to the model's own (``model``: timm's pretrained
#: configuration, labelfree.zoo.timm_source); a row's ``preprocessing`` overrides it.
OWN_PREPROCESSING = ("timm", "hf-hub")

#: Sources whose ``weights`` names a file (resolved against the sheet's folder); a ``timm`` row
#: may instead say ``pretrained`` (the user's cache).
FILE_SOURCES = ("checkpoint", "keras", "timm")

#: Sources of labelfree.zoo.sources, which read the optional columns below.
SUBSET_SOURCES = ("keras", "timm", "hf-hub")

#: Optional columns (labelfree.zoo.sources): a download ``url`` with its ``sha256`` for a
#: ``weights`` file not yet present, and a ``class_subset`` file of class indices that restricts
#: a model's logits. A normalised sheet has them only when some row sets one, so sheets without
#: them keep their columns.
OPTIONAL_COLUMNS: dict[str, Any] = {"url": "", "sha256": "", "class_subset": ""}

#: Columns every sheet has after normalisation, with their defaults for local training.
SHEET_DEFAULTS: dict[str, Any] = {
    "source": "local",
    "arch": "mlp",
    "width": 32,
    "depth": 1,
    "optimizer": "adam",
    "lr": 1e-3,
    "epochs": 10,
    "batch_size": 64,
    "data_fraction": 1.0,
    "seed": 0,
    "batch_seed": None,
    "weights": "",
    "preprocessing": "scale01",
    "label_map": "",
}

_ID_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


class ZooError(ValueError):
    """A zoo sheet or grid is malformed; the message names the zoo, row and column."""


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def default_model_id(row: dict[str, Any]) -> str:
    """A readable, unique-by-construction id from the fields that vary in a local grid."""
    parts = [str(row["arch"]), f"w{_fmt(row['width'])}"]
    if int(row.get("depth", 1)) != 1:
        parts.append(f"d{row['depth']}")
    parts += [str(row["optimizer"]), f"e{row['epochs']}", f"f{_fmt(row['data_fraction'])}"]
    parts.append(f"s{row['seed']}")
    if row.get("batch_seed") not in (None, "") and not pd.isna(row.get("batch_seed")):
        parts.append(f"b{row['batch_seed']}")
    if row.get("label_map"):
        parts.append(str(row["label_map"]).replace(":", "").replace(",", "_"))
    return "-".join(parts)


#: Local architectures and optimizers (zoo.arch.ARCHS, zoo.train.OPTIMIZERS; a test keeps them
#: equal). Copied, not imported: the sheet is read at parse time, where torch must not load.
LOCAL_ARCHS = ("mlp", "lenet", "resnet", "cnn_tiny", "keras_cnn", "opt_cnn", "bn_deep", "keras_main", "convnet", "bn_cnn", "builder_small", "builder_larger", "builder_very_big", "builder_full", "builder_full_revert", "builder_full_1", "builder_big", "lenet1", "lenet4", "lenet5", "nb_cnn")  # noqa: E501
OPTIMIZERS = ("sgd", "adam", "adadelta", "adagrad", "adamax", "nadam", "rmsprop")
PREPROCESSING = ("scale01", "center", "imagenet", "cifar10_kit")
_LABEL_MAP = re.compile(r"^\d+:\d+(,\d+:\d+)*$")


def _normalise_row(r: dict[str, Any], root: Path) -> tuple[dict[str, Any], list[str]]:
    """A sheet row with defaults and types applied, and every problem found in it.

    A relative checkpoint path is resolved against ``root`` (the sheet file's folder, or the
    config file's for a grid row) and stored absolute, so jobs find it from any directory."""
    errs: list[str] = []
    unknown = set(r) - set(SHEET_DEFAULTS) - set(OPTIONAL_COLUMNS) - {"model"}
    if unknown:
        errs.append(f"unknown column(s) {sorted(unknown)}; allowed: "
                    f"{sorted(['model', *SHEET_DEFAULTS, *OPTIONAL_COLUMNS])}")
    own = {"preprocessing": "model"} if r.get("source") in OWN_PREPROCESSING else {}
    row = {**SHEET_DEFAULTS, **OPTIONAL_COLUMNS, **own,
           **{k: v for k, v in r.items() if k not in unknown}}
    if row["source"] not in SOURCES:
        errs.append(f"source {row['source']!r} is not one of {SOURCES}")
    for col, typ in (("width", int), ("depth", int), ("epochs", int), ("batch_size", int),
                     ("seed", int), ("lr", float), ("data_fraction", float)):
        try:
            value = typ(row[col])
            if typ is int and isinstance(row[col], float) and row[col] != value:
                raise ValueError  # 2.5 epochs is an error, not 2
            row[col] = value
        except (TypeError, ValueError):
            errs.append(f"column {col}={row[col]!r} is not {typ.__name__}")
    try:
        row["batch_seed"] = None if row["batch_seed"] in (None, "") else int(row["batch_seed"])
    except (TypeError, ValueError):
        errs.append(f"column batch_seed={row['batch_seed']!r} is not int")
    if isinstance(row["data_fraction"], float) and not 0 < row["data_fraction"] <= 1:
        errs.append(f"data_fraction={row['data_fraction']} not in (0, 1]")
    if row["source"] == "local":
        errs += _local_problems(row)
    elif not row["weights"]:
        errs.append(f"source {row['source']} needs 'weights'")
    if row["source"] in FILE_SOURCES and row["weights"] and not (
            row["source"] == "timm" and row["weights"] == "pretrained"):
        ckpt = Path(str(row["weights"])).expanduser()
        ckpt = ckpt if ckpt.is_absolute() else (root / ckpt).resolve()
        row["weights"] = str(ckpt)
        if not ckpt.is_file() and not row["url"]:
            errs.append(f"{row['source']} file {ckpt} not found")
    errs += _optional_problems(row, root)
    prep = str(row["preprocessing"] or "")
    if prep == "model" and row["source"] in OWN_PREPROCESSING:
        prep = ""  # the model's own, known once it is resolved
    elif is_eval_spec(prep):
        try:
            parse_eval_spec(prep)
        except EvalSpecError as exc:
            errs.append(str(exc))
        prep = ""
    try:
        base, _ = split_geometry(prep)  # kind@R or kind@R/C: a resize before kind
    except GeometryError as exc:
        errs.append(str(exc))
        base = PREPROCESSING[0]
    if prep and base not in PREPROCESSING and not prep.startswith("torchvision:"):
        errs.append(f"preprocessing {prep!r} is not one of {PREPROCESSING} or 'torchvision:<Weights>'"
                    " (optionally with a geometry suffix, e.g. scale01@448, imagenet@256/224)")
    try:
        row["model"] = str(row.get("model") or default_model_id(row))
    except (TypeError, ValueError, KeyError):
        row["model"] = str(row.get("model") or "?")
    if not _ID_OK.match(row["model"]):
        errs.append(f"model id {row['model']!r} may hold only letters, digits and _ . + -")
    return row, errs


def _optional_problems(row: dict[str, Any], root: Path) -> list[str]:
    """Problems of the optional columns; a relative ``class_subset`` is made absolute."""
    errs = []
    if row["url"] and not re.fullmatch(r"[0-9a-fA-F]{64}", str(row["sha256"])):
        errs.append(f"url {row['url']!r} needs a sha256 (64 hex digits), got {row['sha256']!r}")
    if (row["url"] or row["sha256"]) and row["source"] not in ("keras", "timm"):
        errs.append("url/sha256: only keras and timm rows download or check their file")
    if row["class_subset"] and row["source"] not in SUBSET_SOURCES:
        errs.append(f"class_subset: only {SUBSET_SOURCES} rows restrict their logits")
    if row["class_subset"]:
        path = Path(str(row["class_subset"])).expanduser()
        path = path if path.is_absolute() else (root / path).resolve()
        row["class_subset"] = str(path)
        if not path.is_file():
            errs.append(f"class_subset file {path} not found")
    return errs


def _local_problems(row: dict[str, Any]) -> list[str]:
    """What would make a local row fail in its training job, found at parse time instead."""
    errs = []
    if row["arch"] not in LOCAL_ARCHS:
        errs.append(f"arch {row['arch']!r} is not a local architecture {LOCAL_ARCHS}")
    if row["optimizer"] not in OPTIMIZERS:
        errs.append(f"optimizer {row['optimizer']!r} is not one of {OPTIMIZERS}")
    for col, low in (("epochs", 1), ("batch_size", 1), ("width", 1), ("depth", 0)):
        if isinstance(row[col], int) and row[col] < low:
            errs.append(f"{col}={row[col]} must be >= {low}")
    if isinstance(row["lr"], float) and not row["lr"] > 0:
        errs.append(f"lr={row['lr']} must be > 0")
    if row["label_map"] and not _LABEL_MAP.match(str(row["label_map"])):
        errs.append(f"label_map {row['label_map']!r} is not 'from:to,from:to'")
    return errs


def expand_grid(grid: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Expand grid families into rows: list-valued fields multiply, scalars broadcast."""
    rows: list[dict[str, Any]] = []
    for family in grid:
        keys = list(family)
        values = [v if isinstance(v, list) else [v] for v in family.values()]
        for combo in itertools.product(*values):
            rows.append(dict(zip(keys, combo, strict=True)))
    return rows


def build_sheet(zoo: str, zoo_cfg: dict[str, Any], base_dir: str | Path = ".") -> pd.DataFrame:
    """Return the normalised sheet of zoo ``zoo``: one row per model, column ``model`` unique.

    ``zoo_cfg`` has either ``sheet`` or ``grid``. ``base_dir`` is the config file's folder: a
    relative ``sheet`` path resolves against it, a relative checkpoint path against the sheet's
    folder (or ``base_dir`` for a grid row).
    """
    if zoo_cfg.get("sheet"):
        path = Path(base_dir) / Path(zoo_cfg["sheet"]).expanduser()
        if not path.exists():
            raise ZooError(f"zoo '{zoo}': sheet file {path} not found")
        sep = "\t" if path.suffix in {".tsv", ".tab"} else ","
        raw = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False).to_dict("records")
        raw = [{k: v for k, v in r.items() if v != ""} for r in raw]
        root = path.resolve().parent
    elif zoo_cfg.get("grid"):
        raw = expand_grid(zoo_cfg["grid"])
        root = Path(base_dir).resolve()
    else:
        raise ZooError(f"zoo '{zoo}': give either 'sheet' (a file) or 'grid' (families)")
    if not raw:
        raise ZooError(f"zoo '{zoo}' has no models")

    rows, problems = [], []
    for i, r in enumerate(raw):
        row, errs = _normalise_row(r, root)
        problems += [f"row {i + 1}: {e}" for e in errs]
        rows.append(row)
    if problems:  # every problem of every row at once, so a user fixes a sheet in one pass
        raise ZooError(f"zoo '{zoo}': " + "; ".join(problems))
    sheet = pd.DataFrame(rows)
    # Keep integer seeds exact: a column mixing ints and None would otherwise become float.
    sheet["batch_seed"] = pd.Series([r["batch_seed"] for r in rows], dtype=object)
    dup = sheet["model"][sheet["model"].duplicated()].tolist()
    if dup:
        raise ZooError(f"zoo '{zoo}': duplicate model ids {sorted(set(dup))}")
    cols = ["model", *SHEET_DEFAULTS]
    cols += [c for c, empty in OPTIONAL_COLUMNS.items() if any(r[c] != empty for r in rows)]
    return sheet[cols].reset_index(drop=True)
