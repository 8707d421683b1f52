"""The one place that reads and writes artefacts (ARCHITECTURE.md, artefact contracts).

Every writer is atomic: it writes a temporary file beside the target and renames it into
place, so a killed job never leaves a half-written file that Snakemake could take as done.
Readers validate what they read and name the file at fault.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


class ArtefactError(ValueError):
    """An artefact is missing, unreadable or breaks its contract; the message names the file."""


PathLike = str | os.PathLike[str]


@contextlib.contextmanager
def atomic_path(path: PathLike, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only on success.

    ``suffix`` keeps the extension that some writers insist on (``np.savez`` appends
    ``.npz``, matplotlib picks the format from it).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=suffix or target.suffix, dir=target.parent
    )
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        # mkstemp creates 0600 files; give artefacts the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp_path, 0o666 & ~umask)
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


# ---------------------------------------------------------------------------------------------
# npz arrays
# ---------------------------------------------------------------------------------------------


def save_npz(path: PathLike, compress: bool = False, **arrays: np.ndarray) -> None:
    """Write ``arrays`` to ``path`` (.npz) atomically."""
    if not arrays:
        raise ArtefactError(f"{path}: refusing to write an npz with no arrays")
    with atomic_path(path, suffix=".npz") as tmp:
        (np.savez_compressed if compress else np.savez)(tmp, **arrays)


def load_npz(path: PathLike, keys: tuple[str, ...] | None = None) -> dict[str, np.ndarray]:
    """Read an npz fully into memory; never unpickles (``allow_pickle=False``).

    ``keys`` restricts what is read and checks that each is present.
    """
    p = Path(path)
    if not p.exists():
        raise ArtefactError(f"{p}: file not found")
    try:
        with np.load(p, allow_pickle=False) as z:
            names = tuple(z.files) if keys is None else keys
            missing = [k for k in names if k not in z.files]
            if missing:
                raise ArtefactError(f"{p}: missing array(s) {missing}; has {sorted(z.files)}")
            return {k: z[k] for k in names}
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        if isinstance(exc, ArtefactError):
            raise
        raise ArtefactError(f"{p}: not a readable npz archive ({exc})") from exc


# ---------------------------------------------------------------------------------------------
# datasets and test sets: x uint8 NHWC, y int64 (N,) or multi-hot (N, K), optional boxes/masks
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImageSet:
    """An in-memory dataset split or test set in the one array format.

    x: uint8 (N, H, W, C); y: int64 (N,) class ids, or (N, K) multi-hot;
    extras: optional aligned arrays such as ``boxes`` (N, 4) xyxy or ``masks`` (N, H, W) bool.
    """

    x: np.ndarray
    y: np.ndarray
    extras: Mapping[str, np.ndarray] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.x.shape[0])

    @property
    def num_classes_seen(self) -> int:
        return int(self.y.shape[1]) if self.y.ndim == 2 else int(self.y.max()) + 1


def check_image_set(x: np.ndarray, y: np.ndarray, where: str, **extras: np.ndarray) -> None:
    """Validate the array contract; raise ArtefactError naming ``where`` on any breach."""
    if x.dtype != np.uint8 or x.ndim != 4:
        raise ArtefactError(f"{where}: x must be uint8 NHWC, got {x.dtype} with shape {x.shape}")
    if x.shape[3] not in (1, 3):
        raise ArtefactError(f"{where}: x must have 1 or 3 channels, got shape {x.shape}")
    if y.ndim not in (1, 2) or y.shape[0] != x.shape[0]:
        raise ArtefactError(f"{where}: y shape {y.shape} does not match {x.shape[0]} images")
    if not np.issubdtype(y.dtype, np.integer):
        raise ArtefactError(f"{where}: y must be integer, got {y.dtype}")
    if y.size and y.min() < 0:
        raise ArtefactError(f"{where}: y has negative labels (min {y.min()})")
    for name, arr in extras.items():
        if arr.shape[0] != x.shape[0]:
            raise ArtefactError(f"{where}: {name} has {arr.shape[0]} rows, x has {x.shape[0]}")
    if "boxes" in extras and (extras["boxes"].ndim != 2 or extras["boxes"].shape[1] != 4):
        raise ArtefactError(f"{where}: boxes must be (N, 4) xyxy, got {extras['boxes'].shape}")
    if "masks" in extras and extras["masks"].shape[1:3] != x.shape[1:3]:
        raise ArtefactError(f"{where}: masks {extras['masks'].shape} do not match images {x.shape}")


def write_image_set(path: PathLike, x: np.ndarray, y: np.ndarray, **extras: np.ndarray) -> None:
    """Validate and atomically write a dataset split or test set."""
    y = np.asarray(y, dtype=np.int64)
    check_image_set(x, y, str(path), **extras)
    save_npz(path, x=x, y=y, **extras)


def npy_header(dtype: np.dtype | type, shape: Sequence[int]) -> bytes:
    """The ``.npy`` header ``np.save`` writes for a C-ordered array of ``dtype`` and ``shape``
    (format version 1.0, or 2.0 when the header does not fit 1.0, as ``np.lib.format.write_array``)."""
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
              "shape": tuple(int(s) for s in shape)}
    buf = io.BytesIO()
    try:
        np.lib.format.write_array_header_1_0(buf, header)
    except ValueError:
        buf = io.BytesIO()
        np.lib.format.write_array_header_2_0(buf, header)
    return buf.getvalue()


def _raw_bytes(a: np.ndarray) -> memoryview:
    """The C-order bytes of ``a`` (what ``np.save`` writes after the header), without a copy
    when ``a`` is already C-contiguous."""
    return memoryview(np.ascontiguousarray(a).reshape(-1).view(np.uint8))


def write_image_set_chunks(path: PathLike, n: int, chunks: Iterable[ImageSet]) -> None:
    """Validate and atomically write a dataset split of ``n`` images given as row chunks.

    The file is byte for byte the one :func:`write_image_set` writes for the concatenated chunks
    (members ``x``, ``y``, then the extras in the first chunk's order; uncompressed; the same
    ``.npy`` headers; ``np.savez`` stamps no time). The writer holds one chunk at a time: ``x`` is
    written into its member as the chunks arrive; ``y`` and the extras go to spool files beside
    ``path`` and are copied into their members at the end, a first chunk's rows at a time. Every
    chunk must have the first chunk's extras, trailing shapes and dtypes (``y`` is cast to
    int64). Nothing is left at ``path``, nor any spool, unless all ``n`` rows were written.
    """
    target = Path(path)
    if n < 1:
        raise ArtefactError(f"{target}: an image set needs at least one image, got n={n}")
    it = iter(chunks)
    with atomic_path(target, suffix=".npz") as tmp, \
            tempfile.TemporaryDirectory(prefix=f".{target.name}.spool.", dir=target.parent) as spool, \
            zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        layout: dict[str, tuple[np.dtype, tuple[int, ...]]] = {}  # member -> dtype, row shape
        spools: dict[str, Any] = {}
        rows = chunk_rows = 0
        try:
            with zf.open("x.npy", "w", force_zip64=True) as member:
                for chunk in it:  # not enumerate: its cached tuple would hold the last chunk
                    y = np.asarray(chunk.y, dtype=np.int64)
                    arrays = {"x": chunk.x, "y": y, **dict(chunk.extras)}
                    where = f"{target} (rows {rows}..{rows + len(chunk.x) - 1})"
                    check_image_set(chunk.x, y, where, **dict(chunk.extras))
                    if not layout:
                        chunk_rows = len(chunk.x)
                        layout = {m: (a.dtype, tuple(a.shape[1:])) for m, a in arrays.items()}
                        member.write(npy_header(np.uint8, (n, *layout["x"][1])))
                        for i, m in enumerate(list(layout)[1:]):
                            spools[m] = open(Path(spool) / f"{i}.raw", "wb")  # noqa: SIM115
                    got = {m: (a.dtype, tuple(a.shape[1:])) for m, a in arrays.items()}
                    if got != layout:
                        raise ArtefactError(f"{where}: chunk arrays {got} differ from the first "
                                            f"chunk's {layout}")
                    if rows + len(chunk.x) > n:
                        raise ArtefactError(f"{where}: more than the declared {n} rows")
                    member.write(_raw_bytes(chunk.x))
                    for m, f in spools.items():
                        f.write(_raw_bytes(arrays[m]))
                    rows += len(chunk.x)
                    del chunk, arrays, y  # not held while the next chunk is decoded
                if rows != n:
                    raise ArtefactError(f"{target}: got {rows} rows, declared {n}")
            for m, f in spools.items():
                f.close()
                dtype, row_shape = layout[m]
                row_bytes = dtype.itemsize * int(np.prod(row_shape, dtype=np.int64))
                buf = memoryview(bytearray(max(1, chunk_rows * row_bytes)))  # one chunk's rows
                with zf.open(f"{m}.npy", "w", force_zip64=True) as member, \
                        open(f.name, "rb", buffering=0) as src:
                    member.write(npy_header(dtype, (n, *row_shape)))
                    while size := src.readinto(buf):
                        member.write(buf[:size])
        finally:
            for f in spools.values():
                f.close()


def read_image_set(path: PathLike) -> ImageSet:
    """Read and validate a dataset split or test set."""
    arrays = load_npz(path)
    if "x" not in arrays and "n_inputs" in arrays:
        raise ArtefactError(f"{path}: a test set without images (a prediction zoo's: labels "
                            "only); what reads it needs images")
    if "x" not in arrays or "y" not in arrays:
        raise ArtefactError(f"{path}: an image set needs arrays 'x' and 'y', has {sorted(arrays)}")
    x, y = arrays.pop("x"), arrays.pop("y")
    check_image_set(x, y, str(path), **arrays)
    return ImageSet(x=x, y=y, extras=arrays)


# A prediction zoo's test sets have no images (ARCHITECTURE.md, artefact contracts): their
# artefact at the same path holds ``y`` where the user gave labels and always ``n_inputs``.
# Studies that need only labels read any test set through read_labels.


def write_labels(path: PathLike, y: np.ndarray | None, n_inputs: int) -> None:
    """Write a test set without images: its labels (int64 (N,), or None when unlabelled) and
    its number of inputs, atomically."""
    arrays: dict[str, np.ndarray] = {"n_inputs": np.asarray(int(n_inputs), dtype=np.int64)}
    if y is not None:
        y = np.asarray(y)
        if not np.issubdtype(y.dtype, np.integer) or y.ndim != 1 or len(y) != n_inputs:
            raise ArtefactError(f"{path}: labels must be {n_inputs} integer class ids, got "
                                f"{y.dtype} {y.shape}")
        if len(y) and y.min() < 0:
            raise ArtefactError(f"{path}: negative labels (min {y.min()})")
        arrays["y"] = y.astype(np.int64)
    save_npz(path, **arrays)


def read_labels(path: PathLike) -> np.ndarray | None:
    """The labels of a test set (int64 (N,) or multi-hot (N, K)), or None for an unlabelled
    one; reads only ``y``, not the images."""
    p = Path(path)
    if not p.exists():
        raise ArtefactError(f"{p}: file not found")
    try:
        with np.load(p, allow_pickle=False) as z:
            if "unlabelled" in z.files:  # images without labels (labelfree.data.imagefolder)
                return None
            if "y" in z.files:
                y = z["y"]
            elif "n_inputs" in z.files:
                return None
            else:
                raise ArtefactError(f"{p}: a test set needs labels 'y' (or 'n_inputs' when "
                                    f"unlabelled); has {sorted(z.files)}")
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        if isinstance(exc, ArtefactError):
            raise
        raise ArtefactError(f"{p}: not a readable npz archive ({exc})") from exc
    if y.ndim not in (1, 2) or not np.issubdtype(y.dtype, np.integer):
        raise ArtefactError(f"{p}: y must be integer (N,) or (N, K), got {y.dtype} {y.shape}")
    return y


# ---------------------------------------------------------------------------------------------
# inference outputs: one file per zoo, model and test-set group (ARCHITECTURE.md, artefact
# contracts): for every test set t of the group, ``logits.{t}`` float32 (N, K) and, when asked
# for, ``feat_{layer}.{t}`` float16 (N, D); ``testsets`` lists the group's sets in order.
# Written uncompressed, so np.load reads one member at a time: a reader pays for what it reads.
# ---------------------------------------------------------------------------------------------


def inference_key(testset: str, what: str = "logits") -> str:
    """The npz member holding ``what`` (``logits`` or ``feat_{layer}``) of test set ``testset``."""
    return f"{what}.{testset}"


def write_inference(
    path: PathLike, sets: Mapping[str, Mapping[str, np.ndarray]],
    feature_dtype: str = "float16",
) -> None:
    """Write one model's outputs on every test set of a group atomically.

    ``sets``: test set -> ``{"logits": (N, K), layer: (N, ...) features, ...}``; logits are
    stored float32 (finite), features flattened to ``feature_dtype`` (N, D): float16 by
    default, float32 where float16 moves a result (zoos.<zoo>.feature_dtype; the syp zoo).
    """
    if feature_dtype not in ("float16", "float32"):
        raise ArtefactError(f"{path}: feature_dtype {feature_dtype!r} is not float16 or float32")
    if not sets:
        raise ArtefactError(f"{path}: an inference file needs at least one test set")
    arrays: dict[str, np.ndarray] = {"testsets": np.array(list(sets), dtype=str)}
    for testset, outs in sets.items():
        where = f"{path} [{testset}]"
        if "logits" not in outs:
            raise ArtefactError(f"{where}: no logits")
        logits = np.asarray(outs["logits"], dtype=np.float32)
        if logits.ndim != 2:
            raise ArtefactError(f"{where}: logits must be (N, K), got {logits.shape}")
        if not np.isfinite(logits).all():
            raise ArtefactError(f"{where}: logits contain NaN or inf")
        arrays[inference_key(testset)] = logits
        for layer, feat in outs.items():
            if layer == "logits":
                continue
            feat = np.asarray(feat).reshape(len(feat), -1)
            if len(feat) != len(logits):
                raise ArtefactError(
                    f"{where}: feat_{layer} has {len(feat)} rows, logits {len(logits)}"
                )
            arrays[inference_key(testset, f"feat_{layer}")] = feat.astype(feature_dtype, copy=False)
    save_npz(path, **arrays)


def _read_member(path: PathLike, testset: str, what: str, opened: Any = None) -> np.ndarray:
    """One member of an inference file, read lazily; errors name the file and the test set.
    ``opened``: the file already open (np.load's NpzFile, :func:`open_inference_files`)."""
    p = Path(path)
    if opened is None and not p.exists():
        raise ArtefactError(f"{p}: file not found")
    key = inference_key(testset, what)
    try:
        with contextlib.nullcontext(opened) if opened is not None else np.load(
            p, allow_pickle=False
        ) as z:
            if key not in z.files:
                sets = z["testsets"].tolist() if "testsets" in z.files else []
                if testset in sets:
                    raise ArtefactError(f"{p}: test set {testset!r} has no {what} (has {sorted(z.files)})")
                raise ArtefactError(f"{p}: no test set {testset!r}; the file holds {sets}")
            return z[key]
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        if isinstance(exc, ArtefactError):
            raise
        raise ArtefactError(f"{p}: not a readable npz archive ({exc})") from exc


@contextlib.contextmanager
def open_inference_files() -> Iterator[Any]:
    """A :func:`read_logits` that keeps each inference file open once read from, for a reader
    of many members of the same files (the accuracy table reads every set of every model's
    group files: opening an archive parses its directory each time). Closed on exit."""
    files: dict[str, Any] = {}

    def read(path: PathLike, testset: str) -> np.ndarray:
        key = str(path)
        if key not in files:
            if not Path(path).exists():
                raise ArtefactError(f"{path}: file not found")
            try:
                files[key] = np.load(path, allow_pickle=False)
            except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
                raise ArtefactError(f"{path}: not a readable npz archive ({exc})") from exc
        return read_logits(path, testset, opened=files[key])

    try:
        yield read
    finally:
        for z in files.values():
            z.close()


def read_logits(path: PathLike, testset: str, opened: Any = None) -> np.ndarray:
    """The logits (N, K) float32 of test set ``testset`` in an inference file, checked finite
    (``opened``: the file already open, as :func:`open_inference_files` keeps it)."""
    logits = _read_member(path, testset, "logits", opened)
    if logits.ndim != 2:
        raise ArtefactError(f"{path} [{testset}]: logits must be (N, K), got {logits.shape}")
    if not np.isfinite(logits).all():
        raise ArtefactError(f"{path} [{testset}]: logits contain NaN or inf")
    return logits


def read_features(path: PathLike, layer: str, testset: str) -> np.ndarray:
    """The features (stored float16 or float32) of layer ``layer`` on test set ``testset``, as
    float32 (N, D)."""
    return _read_member(path, testset, f"feat_{layer}").astype(np.float32)


def inference_testsets(path: PathLike) -> list[str]:
    """The test sets an inference file holds, in the order they were written."""
    return load_npz(path, keys=("testsets",))["testsets"].tolist()


def stack_predictions(paths: list[PathLike], testset: str) -> np.ndarray:
    """Argmax predictions of several models on one test set as an int (N, n_models) matrix."""
    cols = [read_logits(p, testset).argmax(axis=1) for p in paths]
    lengths = {len(c) for c in cols}
    if len(lengths) > 1:
        raise ArtefactError(f"inference outputs disagree on the number of inputs: {lengths}")
    return np.stack(cols, axis=1).astype(np.int64)



def files_by_testset(
    files: Sequence[PathLike], models: Sequence[str], groups: Mapping[str, Sequence[str]]
) -> dict[str, list[PathLike]]:
    """Test set -> each model's inference file holding it, from a zoo's file list ordered model
    by model and, within a model, group by group (the workflow's order; answer, scorecard)."""
    names = [(m, g) for m in models for g in groups]
    if len(names) != len(files):
        raise ArtefactError(f"{len(files)} inference files for {len(models)} models x "
                            f"{len(groups)} groups")
    by_name = dict(zip(names, files, strict=True))
    out: dict[str, list[PathLike]] = {}
    for g, sets in groups.items():  # a set listed by two groups is read from the first
        for t in sets:
            out.setdefault(t, [by_name[(m, g)] for m in models])
    return out


def write_group_manifest(
    path: PathLike, sets: Mapping[str, PathLike], log: PathLike | None = None
) -> None:
    """Write the stand-in of a test-set group: one line per set (name, path, bytes).

    Inference jobs list this one file instead of every set of the group, so the graph of a
    10,000-model zoo resolves one input per job and group rather than 18; it
    is rewritten whenever a set is, so a remade set still reruns the group's inference."""
    lines = ["testset\tpath\tbytes"]
    for name, p in sets.items():
        q = Path(p)
        if not q.is_file():
            raise ArtefactError(f"{q}: test set {name!r} of the group is missing")
        lines.append(f"{name}\t{q}\t{q.stat().st_size}")
    with atomic_path(path) as tmp:
        tmp.write_text("\n".join(lines) + "\n")
    if log is not None:
        Path(log).write_text(f"{len(sets)} test sets -> {path}\n")


def read_group_manifest(path: PathLike) -> dict[str, str]:
    """Test set -> path, as written by :func:`write_group_manifest`."""
    rows = Path(path).read_text().splitlines()[1:]
    return dict(tuple(r.split("\t")[:2]) for r in rows if r)


def stack_logits(
    paths: Sequence[PathLike], testset: str,
    read: Callable[[PathLike, str], np.ndarray] = read_logits,
) -> np.ndarray:
    """Logits of several models on one test set as one (n_models, N, K) float32 array;
    ``read`` is :func:`read_logits` or the reader of :func:`open_inference_files` (a reader of
    many sets from the same files opens each file once)."""
    parts = [read(p, testset) for p in paths]
    shapes = {x.shape for x in parts}
    if len(shapes) > 1:
        raise ArtefactError(f"{testset}: inference outputs differ in shape {sorted(shapes)}")
    return np.stack(parts)

# ---------------------------------------------------------------------------------------------
# json, tables and figures
# ---------------------------------------------------------------------------------------------


def save_json(obj: Any, path: PathLike) -> None:
    """Write JSON atomically with sorted keys (stable bytes for identical content)."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n")


def load_json(path: PathLike) -> Any:
    p = Path(path)
    if not p.exists():
        raise ArtefactError(f"{p}: file not found")
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise ArtefactError(f"{p}: invalid JSON ({exc})") from exc


def _json_default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def save_table(
    df: pd.DataFrame,
    csv_path: PathLike,
    md_path: PathLike | None = None,
    title: str | None = None,
    float_format: str = "%.4f",
) -> None:
    """Write a table as csv (and markdown beside it, or at ``md_path``) atomically.

    ``title`` goes above the markdown table: say which paper table it reproduces.
    Floats are written with a fixed format so reruns give byte-identical files.
    """
    csv_path = Path(csv_path)
    md_path = Path(md_path) if md_path is not None else csv_path.with_suffix(".md")
    with atomic_path(csv_path) as tmp:
        df.to_csv(tmp, index=False, float_format=float_format, lineterminator="\n")
    body = df.to_markdown(index=False, floatfmt=float_format.lstrip("%"))
    text = (f"**{title}**\n\n" if title else "") + body + "\n"
    with atomic_path(md_path) as tmp:
        tmp.write_text(text)


def read_table(path: PathLike) -> pd.DataFrame:
    p = Path(path)
    if not p.exists():
        raise ArtefactError(f"{p}: file not found")
    return pd.read_csv(p)


def save_figure(fig: Any, png_path: PathLike, pdf_path: PathLike | None = None) -> None:
    """Save a matplotlib figure as png (and pdf beside it) atomically, then close it.

    Metadata that embeds dates is dropped so reruns are byte-stable where the backend allows.
    """
    # deferred: parse-time module; matplotlib takes 1.6 s to import
    import matplotlib.pyplot as plt

    png_path = Path(png_path)
    pdf_path = Path(pdf_path) if pdf_path is not None else png_path.with_suffix(".pdf")
    with atomic_path(png_path) as tmp:
        fig.savefig(tmp, dpi=150, bbox_inches="tight", metadata={"Software": None})
    with atomic_path(pdf_path) as tmp:
        fig.savefig(tmp, bbox_inches="tight", metadata={"CreationDate": None, "Creator": None})
    plt.close(fig)
