"""The per-zoo LaF study: read inference artefacts, run every method on every test set, write raw.

Spec sections 6 and 8. A zoo is analysed as stored, or as a clone control (section 8): the models
of a base zoo plus identical copies of one weak model of another zoo, built here from the stored
predictions (no training; the copies are the same model's outputs repeated).

Two ways to the same raw files (issue 15): :func:`run_study` analyses every test set of a zoo in
one process; :func:`run_part` analyses some of them (a *part*: one test-set group or one test
set, :func:`labelfree.laf.layout.partition`) and writes their results losslessly, and :func:`merge_parts` writes the
zoo's raw files from the parts. Every draw is seeded by (seed, dataset, test set, method, ...),
never by the order of the work, so the two give the same files (wall-clock times aside).
"""

from __future__ import annotations

import gzip
import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from labelfree import store
from labelfree.joblog import progress
from labelfree.laf.baselines import softmax
from labelfree.laf.experiment import SetResult, StudyParams, analyse_testset, classify_testset
from labelfree.laf.metrics import ground_truth_accuracy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SetInputs:
    """Where one test set's artefacts are: the inference file (of its group) of each model, and
    the labels; the file holds test set ``name`` among others (labelfree.store.read_logits).
    ``origin``: the test-set group the workflow made it in (`corruptions`, `natural`, ...)."""

    name: str
    infer: tuple[str, ...]
    labels: str
    origin: str = ""


def read_model_logits(ref: tuple[str, str]) -> np.ndarray:
    """The logits (m, K) float32 of one model on one test set: the study's only read of them.

    ``ref`` = (the model's inference file for the test set's group, the test set's name).
    """
    return store.read_logits(*ref)


#: Rows per softmax block: bounds the float64 temporaries of one model's softmax.
SOFTMAX_ROWS = 8192


def softmax32(logits: np.ndarray, rows: int = SOFTMAX_ROWS) -> np.ndarray:
    """Row-wise float32 softmax of (m, K) logits, block by block (each row is independent, so
    the result equals ``softmax(logits).astype(float32)`` exactly) with O(rows x K) float64."""
    out = np.empty(logits.shape, dtype=np.float32)
    for s in range(0, logits.shape[0], rows):
        out[s : s + rows] = softmax(logits[s : s + rows])
    return out


class StreamedProbs:
    """Softmax outputs of a test set's models, one model in memory at a time (spec 1.4:
    "store per model, not as one (n, m, K) tensor").

    ``max_probs`` (m, n) float32 (CRC) is kept; :meth:`model` re-reads model j's logits and
    returns its (m, K) float32 softmax (CES guides). ``load_seconds`` adds up the time spent
    reading and converting.
    """

    def __init__(self, refs: Sequence[tuple[str, str]], max_probs: np.ndarray, K: int) -> None:
        self.refs = list(refs)
        self.max_probs = max_probs
        self.K = K
        self.load_seconds = 0.0

    def __len__(self) -> int:
        return len(self.refs)

    def model(self, j: int) -> np.ndarray:
        t0 = time.perf_counter()
        probs = softmax32(read_model_logits(self.refs[j]))
        self.load_seconds += time.perf_counter() - t0
        return probs

    def subset(self, keep: int, extra: StreamedProbs | None = None, j: int = 0, copies: int = 0):
        """The first ``keep`` models plus ``copies`` copies of model ``j`` of ``extra``."""
        refs = self.refs[:keep]
        mp = [self.max_probs[:, :keep]]
        if extra is not None and copies:
            refs += [extra.refs[j]] * copies
            mp.append(np.repeat(extra.max_probs[:, j : j + 1], copies, axis=1))
        out = StreamedProbs(refs, np.concatenate(mp, axis=1), self.K)
        out.load_seconds = self.load_seconds + (extra.load_seconds if extra is not None else 0.0)
        return out


def load_testset(inputs: SetInputs) -> tuple[np.ndarray, np.ndarray, StreamedProbs]:
    """(predictions (m, n) int64, labels (m,), streamed softmax outputs of the n models).

    One model's logits are in memory at a time; what stays is the argmax and the max softmax
    probability of every model (m x n each).
    """
    t0 = time.perf_counter()
    y = store.read_labels(inputs.labels)
    if y is None:
        raise store.ArtefactError(f"{inputs.labels}: LaF needs labels to score its ranking; "
                                  "this test set has none")
    if y.ndim != 1:
        raise store.ArtefactError(f"{inputs.labels}: LaF needs single-label y, got {y.shape}")
    preds, max_probs, shape = [], [], None
    refs = [(path, inputs.name) for path in inputs.infer]
    for ref in refs:
        lg = read_model_logits(ref)
        if shape is None:
            shape = lg.shape
            if y.shape[0] != shape[0]:
                raise store.ArtefactError(
                    f"{inputs.labels}: {y.shape[0]} labels but {shape[0]} inference rows in {ref[0]}"
                )
        elif lg.shape != shape:
            raise store.ArtefactError(
                f"{inputs.name}: inference outputs differ in shape "
                f"{sorted({shape, lg.shape})} ({ref[0]})"
            )
        preds.append(lg.argmax(axis=1))
        max_probs.append(softmax32(lg).max(axis=1))
        del lg
    probs = StreamedProbs(refs, np.stack(max_probs, axis=1), shape[1])
    probs.load_seconds = time.perf_counter() - t0
    return np.stack(preds, axis=1).astype(np.int64), y.astype(np.int64), probs


def pick_clone(source_id: SetInputs, target_accuracy: float) -> tuple[int, float]:
    """Index and ID accuracy of the source model whose ID accuracy is nearest to the target."""
    preds, y, _ = load_testset(source_id)
    acc = ground_truth_accuracy(preds, y)
    j = int(np.argmin(np.abs(acc - target_accuracy)))
    return j, float(acc[j])


def clone_control(spec: Mapping, testsets: Sequence[SetInputs]) -> dict:
    """The clone control of spec section 8 as :func:`run_study` takes it.

    ``spec`` (the rule's ``clone`` entry): ``accuracy`` (the target ID accuracy), ``copies``,
    ``base_models``, ``source_infer`` (per test set, the source zoo's inference files, in the
    order of ``testsets``), ``source_models`` and, when ``testsets`` is a part without the `id`
    set, ``source_id`` ({"infer": the source's `id` inference files, "labels": the `id` labels}).
    The source model whose `id` accuracy is nearest the target is copied; raises ValueError when
    the zoos have no `id` test set.
    """
    names = [t.name for t in testsets]
    source = [
        SetInputs(t.name, tuple(paths), t.labels, t.origin)
        for t, paths in zip(testsets, spec["source_infer"], strict=True)
    ]
    if spec.get("source_id"):
        source_id = SetInputs("id", tuple(spec["source_id"]["infer"]), spec["source_id"]["labels"])
    elif "id" in names:
        source_id = source[names.index("id")]
    else:
        raise ValueError("clone control: the zoos have no `id` test set")
    j, acc = pick_clone(source_id, spec["accuracy"])
    log.info(
        "clone control: %d copies of %s (ID accuracy %.3f)",
        spec["copies"], spec["source_models"][j], acc,
    )
    return {
        "source": source,
        "index": j,
        "copies": spec["copies"],
        "base_models": spec["base_models"],
        "name": spec["source_models"][j],
    }


def analyse_sets(
    zoo: str,
    dataset: str,
    models: Sequence[str],
    testsets: Sequence[SetInputs],
    params: StudyParams,
    seed: int,
    clone: dict | None = None,
) -> list[SetResult]:
    """Every method on each of ``testsets`` (spec section 6): one :class:`SetResult` per set, in
    order, its ``info`` with the time spent loading (``time_load``).

    ``clone`` (control zoo): {"source": [SetInputs per test set, same order], "index": j,
    "copies": c, "base_models": N, "name": model id}: the base models (first N) plus c copies of
    source model j.
    """
    results = []
    names = list(models)
    bar = progress(total=len(testsets), desc=f"laf {zoo}", unit="set")
    for t_idx, ts in enumerate(testsets):
        preds, y, probs = load_testset(ts)
        if clone is not None:
            keep = clone["base_models"] or preds.shape[1]
            src_preds, src_y, src_probs = load_testset(clone["source"][t_idx])
            if not np.array_equal(src_y, y):
                raise store.ArtefactError(
                    f"clone control {zoo}: test set {ts.name} differs between base and source zoo"
                )
            j, c = clone["index"], clone["copies"]
            preds = np.concatenate([preds[:, :keep], np.repeat(src_preds[:, j : j + 1], c, 1)], 1)
            probs = probs.subset(keep, src_probs, j, c)
            names = list(models)[:keep] + [f"{clone['name']}-copy{i}" for i in range(c)]
        K = probs.K
        group = classify_testset(ts.name, ts.origin)[0]
        res = analyse_testset(
            preds, y, probs, K, names, params, seed, zoo, dataset, ts.name, rq4=group == "id",
            origin=ts.origin, bar=bar,
        )
        res.info = dict(res.info, time_load=probs.load_seconds)
        results.append(res)
        bar.update(1)
        log.info(
            "%s/%s: LaF rho=%.3f (%d of %d rows kept, %d EM iterations)",
            zoo,
            ts.name,
            next(r["spearman"] for r in res.rows if r["method"] == "LaF"),
            res.info["m_kept"],
            res.info["m"],
            res.info["iterations"],
        )
    bar.close()
    return results


def write_raw(results: Sequence[SetResult], out_dir: str | Path) -> None:
    """Write a zoo's raw files from its test sets' results, in the order given:
    ``out_dir``/{metrics.csv.gz, testsets.csv, models.csv, rq4.csv, ces_guides.npz}."""
    out = Path(out_dir)
    rows = [r for res in results for r in res.rows]
    infos = [res.info for res in results]
    model_rows = [r for res in results for r in res.models]
    rq4_rows = [r for res in results for r in res.rq4]
    guides = {res.info["testset"]: res.ces_guides for res in results}
    out.mkdir(parents=True, exist_ok=True)
    # gzip without a file name or time in its header: the same rows give the same bytes
    csv = pd.DataFrame(rows).to_csv(index=False, float_format="%.6g").encode()
    with store.atomic_path(out / "metrics.csv.gz", suffix=".gz") as tmp:
        tmp.write_bytes(gzip.compress(csv, mtime=0))
    with store.atomic_path(out / "testsets.csv") as tmp:
        pd.DataFrame(infos).to_csv(tmp, index=False, float_format="%.6g")
    with store.atomic_path(out / "models.csv") as tmp:
        pd.DataFrame(model_rows).to_csv(tmp, index=False, float_format="%.6g")
    with store.atomic_path(out / "rq4.csv") as tmp:
        pd.DataFrame(rq4_rows).to_csv(tmp, index=False, float_format="%.6g")
    # one NaN bit pattern: nanmean's NaN has the sign bit set, a part file's (JSON) NaN has not
    store.save_npz(out / "ces_guides.npz",
                   **{k.replace("-", "_"): np.where(np.isnan(v), np.nan, v) for k, v in guides.items()})


def run_study(
    zoo: str,
    dataset: str,
    models: Sequence[str],
    testsets: Sequence[SetInputs],
    params: StudyParams,
    seed: int,
    out_dir: str | Path,
    clone: dict | None = None,
) -> None:
    """Analyse one zoo on all its test sets in this process and write ``out_dir``/{metrics.csv.gz,
    testsets.csv, models.csv, rq4.csv, ces_guides.npz} (``clone``: see :func:`analyse_sets`)."""
    write_raw(analyse_sets(zoo, dataset, models, testsets, params, seed, clone), out_dir)


# --- The same study split into independent jobs (issue 15) -------------------------------------

#: Format version of a part file; :func:`read_part` refuses others.
PART_VERSION = 1


def _plain(obj):
    """JSON form of a numpy scalar (``json.dumps(default=...)``); floats keep every bit (repr)."""
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"cannot store {type(obj).__name__} in a LaF part file")


def write_part(results: Sequence[SetResult], path: str | Path) -> None:
    """Store test sets' results losslessly (gzipped JSON: Python's float repr round-trips every
    float64, NaN included), so that :func:`merge_parts` rebuilds exactly :func:`write_raw`'s input."""
    doc = {
        "version": PART_VERSION,
        "sets": [
            {
                "rows": res.rows,
                "info": res.info,
                "models": res.models,
                "rq4": res.rq4,
                "ces_guides": {
                    "shape": list(res.ces_guides.shape),
                    "values": [float(v) for v in res.ces_guides.ravel()],
                },
            }
            for res in results
        ],
    }
    data = json.dumps(doc, default=_plain, allow_nan=True).encode()
    with store.atomic_path(path, suffix=".gz") as tmp:
        tmp.write_bytes(gzip.compress(data, mtime=0))


def read_part(path: str | Path) -> list[SetResult]:
    """The results a :func:`write_part` file holds, in its order."""
    try:
        doc = json.loads(gzip.decompress(Path(path).read_bytes()))
    except (OSError, EOFError, ValueError) as exc:
        raise store.ArtefactError(f"{path}: not a LaF part file ({exc})") from exc
    if doc.get("version") != PART_VERSION:
        raise store.ArtefactError(
            f"{path}: LaF part file version {doc.get('version')!r}, expected {PART_VERSION}"
        )
    out = []
    for s in doc["sets"]:
        g = s["ces_guides"]
        guides = np.array(g["values"], dtype=np.float64).reshape(g["shape"])
        out.append(SetResult(s["rows"], s["info"], s["models"], guides, s["rq4"]))
    return out


def run_part(
    zoo: str,
    dataset: str,
    models: Sequence[str],
    testsets: Sequence[SetInputs],
    params: StudyParams,
    seed: int,
    path: str | Path,
    clone: dict | None = None,
) -> None:
    """Analyse a part of a zoo's test sets (:func:`analyse_sets`) and :func:`write_part` it."""
    write_part(analyse_sets(zoo, dataset, models, testsets, params, seed, clone), path)


def merge_parts(
    paths: Sequence[str | Path], out_dir: str | Path, order: Sequence[str] | None = None
) -> None:
    """Write a zoo's raw files (:func:`write_raw`) from its part files.

    ``order``: the zoo's test sets in the order of :func:`run_study` (default: the parts' order);
    every test set must occur exactly once over the parts.
    """
    results = [res for p in paths for res in read_part(p)]
    names = [res.info["testset"] for res in results]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"test sets {dup} occur in more than one LaF part")
    if order is not None:
        if sorted(order) != sorted(names):
            raise ValueError(
                f"LaF parts hold test sets {sorted(names)}, the zoo has {sorted(order)}"
            )
        results = [results[names.index(t)] for t in order]
    write_raw(results, out_dir)
