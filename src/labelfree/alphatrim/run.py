"""The `alphatrim` study's computations: what its workflow jobs run (docs/alphatrim.md).

1. Data and zoos: the task of an experiment (:func:`load_task`) and every seed-regime zoo
   trained on it (:func:`train_experiment`, or :func:`train_block` per seed block and
   :func:`merge_blocks`; source ``zoos`` reads the spine's zoos, :func:`collect_spine_zoos`)
   -> ``zoo.npz``.
2. Analysis (:func:`analyse_experiment`): alpha-hat and metrics per candidate of each regime
   zoo (:func:`analyse_zoo`) and per sampled ensemble (:func:`analyse_ensembles`).

An *experiment* is one task (data + model recipe) with seed-regime zoos (paper Section V):

- "sources": zoos S_init / S_batch / S_all; the first ``reference_fraction`` of each zoo is the
  reference, the rest the candidates; alpha-hat, accuracy, ECE, churn w.r.t. the candidate
  ensemble, pairwise churn (Tables II-IV, Figs. 9-12); and a separate S_all zoo split into
  reference and ensemble pool, ensembles of growing size drawn from the pool (Table I, Figs. 4-8).
- "transfer": heads on frozen backbone features, seeds vary like S_all; ensembles drawn from
  the candidates (Table V, Figs. 13-16).

Seeds come from ``labelfree.seeds.derive_seed(seed, experiment, ...)``, so reruns give
identical tables. The tables and figures are :mod:`labelfree.alphatrim.report`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labelfree.alphatrim.bootstrap import alpha_hat
from labelfree.alphatrim.kernel import acceptance_threshold, delta_a, ecdf_distance
from labelfree.alphatrim.metrics import (
    accuracy,
    average_churn,
    churn_matrix,
    churn_vs,
    ece,
    ensemble_gaps,
    logit_gap,
    sample_ensembles,
)
from labelfree.alphatrim.plan import (
    CNN_MODEL_BLOCK,
    ENSEMBLE_ZOO,
    REGIMES,
    experiment_blocks,
    experiment_zoos,
    spine_zoos,
)
from labelfree.joblog import progress
from labelfree.seeds import derive_seed, rng
from labelfree.store import (
    load_npz,
    read_features,
    read_image_set,
    read_logits,
    save_json,
    save_npz,
    save_table,
)

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------------------------
# seeds of the regimes and the tasks (docs/alphatrim.md, readings R8 and R9)
# ---------------------------------------------------------------------------------------------


def regime_seeds(regime: str, k: int, seed: int, experiment: str) -> tuple[list[int], list[int]]:
    """(init seeds, batch seeds) of the k models of a regime zoo (docs/alphatrim.md, reading R8).

    S_init: init varies, batch order fixed; S_batch: the reverse; S_all (and the ensemble zoo
    E1_all, transfer heads): both vary, from two independent streams of one model index.
    """
    def per_model(stream: str) -> list[int]:
        return [derive_seed(seed, experiment, regime, stream, i) for i in range(k)]

    def fixed(stream: str) -> list[int]:
        return [derive_seed(seed, experiment, regime, stream)] * k

    if regime == "S_init":
        return per_model("init"), fixed("batch")
    if regime == "S_batch":
        return fixed("init"), per_model("batch")
    if regime in ("S_all", ENSEMBLE_ZOO):
        return per_model("init"), per_model("batch")
    raise ValueError(f"unknown seed regime {regime!r}; expected one of {[*REGIMES, ENSEMBLE_ZOO]}")


def make_synthetic_task(cfg: Mapping[str, Any], seed: int) -> tuple[np.ndarray, ...]:
    """Tier-2 task (docs/alphatrim.md, reading R9): sklearn make_classification, standardised,
    first n_train = train.

    Tabular float features are not images, so this task lives in the study, not in the data
    layer (whose contract is uint8 NHWC image sets). Returns x_train, y_train, x_test, y_test.
    """
    # deferred: scikit-learn, needed by the synthetic task's training job only
    from sklearn.datasets import make_classification

    x, y = make_classification(
        n_samples=int(cfg["n_samples"]),
        n_features=int(cfg["n_features"]),
        n_informative=int(cfg["n_informative"]),
        n_redundant=int(cfg["n_redundant"]),
        class_sep=float(cfg["class_sep"]),
        flip_y=float(cfg["flip_y"]),
        random_state=int(seed) % (2**31),
    )
    n_train = int(cfg["n_train"])
    if not 0 < n_train < len(x):
        raise ValueError(f"synthetic task: n_train={n_train} must lie in (0, n_samples={len(x)})")
    mu, sd = x[:n_train].mean(0), x[:n_train].std(0)
    x = ((x - mu) / np.where(sd > 0, sd, 1.0)).astype(np.float32)
    return x[:n_train], y[:n_train].astype(np.int64), x[n_train:], y[n_train:].astype(np.int64)


def image_task_arrays(
    x: np.ndarray, y: np.ndarray, where: str, positive: list[int] | None = None,
    negative: list[int] | None = None, flatten: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """A uint8 NHWC image set as [0, 1] floats (flattened for MLPs) and binary labels.

    ``positive``/``negative``: class ids merged into label 1 / 0, other classes dropped (the
    paper's CIFAR-10 task, docs/alphatrim.md reading R10); otherwise the labels must already be
    {0, 1}.
    """
    if positive or negative:
        pos, neg = list(positive or []), list(negative or [])
        if not pos or not neg or set(pos) & set(neg):
            raise ValueError(f"{where}: data.positive {pos} and data.negative {neg} must be "
                             "non-empty and disjoint")
        keep = np.isin(y, pos + neg)
        x, y = x[keep], np.isin(y[keep], pos).astype(np.int64)
    if set(np.unique(y).tolist()) - {0, 1}:
        raise ValueError(
            f"{where}: the alpha-trimming study needs a binary task (labels 0/1), got classes "
            f"{np.unique(y).tolist()[:12]}; use e.g. datasets.<name>.options.binary: even_odd"
        )
    xf = x.astype(np.float32) / 255.0
    return (xf.reshape(len(x), -1) if flatten else xf), y.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# analysis settings
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AnalysisSettings:
    """The analysis keys of the config section (schema config/schema/alphatrim.yaml)."""

    eps_a: float = 0.01
    n_boot: int = 100
    grid: tuple[float, ...] = (0.0, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35,
                               0.4, 0.45)
    censor: float = 0.5
    clip: float = 15.0
    clip_mode: str = "clip"
    reference_mode: str = "pooled_resample"
    reference_fraction: float = 0.5
    ece_bins: int = 10
    cut: float = 0.05
    fig5_delta_n: str = "half"
    seed: int = 0
    threads: int = 1

    @classmethod
    def from_config(cls, c: Mapping[str, Any]) -> AnalysisSettings:
        return cls(
            eps_a=float(c["eps_a"]), n_boot=int(c["bootstrap_B"]),
            grid=tuple(float(a) for a in c["alpha_grid"]), censor=float(c["alpha_censor"]),
            clip=float(c["clip"]), clip_mode=str(c["clip_mode"]),
            reference_mode=str(c["reference_mode"]),
            reference_fraction=float(c["reference_fraction"]), ece_bins=int(c["ece_bins"]),
            cut=float(c["representative_cut"]), fig5_delta_n=str(c["fig5_delta_n"]),
            seed=int(c["seed"]), threads=int(c.get("threads", 1)),
        )

    def gaps(self, logits: np.ndarray) -> np.ndarray:
        return logit_gap(logits, clip=self.clip, clip_mode=self.clip_mode)

    def alpha(self, reference: np.ndarray, candidates: np.ndarray, *names: object):
        return alpha_hat(
            reference, candidates, grid=self.grid, n_boot=self.n_boot, eps=self.eps_a,
            seed=derive_seed(self.seed, "alpha", *names), censor=self.censor,
            reference_mode=self.reference_mode, n_jobs=self.threads,
        )


def split_reference(k: int, fraction: float) -> int:
    """Number of reference models: the first ``fraction`` of the zoo (paper Section V;
    docs/alphatrim.md, reading R2)."""
    m = int(round(k * fraction))
    if not 1 <= m < k:
        raise ValueError(
            f"reference_fraction={fraction} of a zoo of {k} models leaves no reference or no "
            "candidate; use more models"
        )
    return m


# ---------------------------------------------------------------------------------------------
# E2 (and E3): per-model statistics of a zoo's candidates
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ZooAnalysis:
    """Per-candidate statistics of one zoo (``per_model.csv``) and the churn matrix."""

    per_model: pd.DataFrame
    pairwise_churn: np.ndarray
    alpha_boot: np.ndarray
    candidate_ensemble_accuracy: float
    gamma: float


def analyse_zoo(
    logits: np.ndarray, labels: np.ndarray, s: AnalysisSettings, *names: object
) -> ZooAnalysis:
    """alpha-hat and metrics of the candidates of one zoo (E2 per regime; E3).

    logits: (K, N_test, 2) in zoo order; the first reference_fraction models are the reference.
    names: seed names of the bootstrap (experiment, regime); the last one prefixes model ids.
    """
    gaps = s.gaps(logits)
    k = gaps.shape[0]
    m = split_reference(k, s.reference_fraction)
    ref, cand = gaps[:m], gaps[m:]
    res = s.alpha(ref, cand, *names)
    ens = cand.mean(axis=0)  # the candidate ensemble (docs/alphatrim.md, reading R7)
    churn = churn_matrix(cand)
    per_model = pd.DataFrame(
        {
            "model": [f"{names[-1] if names else 'run'}-{i:03d}" for i in range(m, k)],
            "role": "candidate",
            "alpha_hat": res.alpha_hat,
            "alpha_hat_std": res.alpha_std,
            "ks_reject_rate_at_0": res.ks_reject_rate,
            "accuracy": accuracy(cand, labels),
            "ece": ece(cand, labels, s.ece_bins),
            "churn_vs_ensemble": churn_vs(cand, ens),
            "avg_pairwise_churn": average_churn(churn) if len(cand) > 1 else np.nan,
        }
    )
    return ZooAnalysis(
        per_model=per_model,
        pairwise_churn=churn,
        alpha_boot=res.alpha_boot,
        candidate_ensemble_accuracy=float(accuracy(ens, labels)),
        gamma=res.gamma,
    )


# ---------------------------------------------------------------------------------------------
# E1 (and E3 ensembles): ensembles of growing size
# ---------------------------------------------------------------------------------------------


def analyse_ensembles(
    reference_logits: np.ndarray,
    pool_logits: np.ndarray,
    labels: np.ndarray,
    sizes: list[int],
    reps: int,
    s: AnalysisSettings,
    *names: object,
) -> pd.DataFrame:
    """One row per sampled ensemble (``ensembles.csv``; docs/alphatrim.md, reading R6).

    Members are drawn without replacement from the pool; alpha-hat against the reference
    (all ensembles share the bootstrap replicates), L_inf to the pooled reference eCDF,
    accuracy, churn w.r.t. the full-pool ensemble, ECE. Size 1 = single pool models.
    """
    ref = s.gaps(reference_logits)
    pool = s.gaps(pool_logits)
    full = pool.mean(axis=0)
    gen = rng(s.seed, "ensembles", *names)
    blocks, rows = [], []
    for size in sizes:
        if size > len(pool):
            raise ValueError(f"ensemble size {size} exceeds the pool of {len(pool)} models")
        members = sample_ensembles(len(pool), size, reps, gen)
        blocks.append(ensemble_gaps(pool, members))
        rows += [(size, r) for r in range(reps)]
    ens = np.concatenate(blocks)
    res = s.alpha(ref, ens, *names, "ensembles")
    frame = pd.DataFrame(rows, columns=["M_ens", "rep"])
    frame["alpha_hat"] = res.alpha_hat
    frame["alpha_hat_std"] = res.alpha_std
    frame["ks_reject_rate_at_0"] = res.ks_reject_rate
    frame["linf_to_reference"] = ecdf_distance(ref, ens)
    frame["accuracy"] = accuracy(ens, labels)
    frame["churn_vs_full_ensemble"] = churn_vs(ens, full)
    frame["ece"] = ece(ens, labels, s.ece_bins)
    return frame


def fig5_delta(n_test: int, s: AnalysisSettings) -> float:
    """delta_a line of Fig. 5 (docs/alphatrim.md, reading R6): N = N_test/2 (``half``, default) or
    N_test (``full``)."""
    return delta_a(n_test // 2 if s.fig5_delta_n == "half" else n_test, s.eps_a)


# ---------------------------------------------------------------------------------------------
# step 1: data and zoos
# ---------------------------------------------------------------------------------------------


def load_task(
    name: str, cfg: Mapping[str, Any], seed: int, inputs: Mapping[str, str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """x_train, y_train, x_test, y_test of an experiment (features float32, labels {0, 1}).

    inputs: for source ``dataset`` keys ``train``/``test`` (image-set npz); for ``backbone``
    keys ``train_feat``/``test_feat`` (inference npz) and ``train``/``test`` (image sets).
    """
    data = cfg["data"]
    src = data["source"]
    if src == "make_classification":
        return make_synthetic_task(data, derive_seed(seed, name, "data"))
    if src == "dataset":
        tr, te = read_image_set(inputs["train"]), read_image_set(inputs["test"])
        kw = {"positive": data["positive"], "negative": data["negative"],
              "flatten": cfg["model"]["arch"] != "cnn"}
        xtr, ytr = image_task_arrays(tr.x, tr.y, inputs["train"], **kw)
        xte, yte = image_task_arrays(te.x, te.y, inputs["test"], **kw)
        return xtr, ytr, xte, yte
    if src == "backbone":
        ytr = read_image_set(inputs["train"]).y
        yte = read_image_set(inputs["test"]).y
        if data["binary"] == "even_odd":
            ytr, yte = (ytr % 2 == 0).astype(np.int64), (yte % 2 == 0).astype(np.int64)
        # the backbone zoo's inference files: train features on `alphatrim-train`, test on `id`
        xtr = read_features(inputs["train_feat"], "penultimate", "alphatrim-train")
        xte = read_features(inputs["test_feat"], "penultimate", "id")
        if data["positive"] or data["negative"]:
            xtr, ytr = image_task_arrays(xtr, ytr, inputs["train_feat"], data["positive"],
                                            data["negative"], flatten=False)
            xte, yte = image_task_arrays(xte, yte, inputs["test_feat"], data["positive"],
                                            data["negative"], flatten=False)
            xtr, xte = xtr * 255.0, xte * 255.0  # undo the image scaling: these are features
        mu, sd = xtr.mean(0), xtr.std(0)
        sd = np.where(sd > 0, sd, 1.0)
        xtr, xte = ((xtr - mu) / sd).astype(np.float32), ((xte - mu) / sd).astype(np.float32)
        for y, where in ((ytr, inputs["train"]), (yte, inputs["test"])):
            if set(np.unique(y).tolist()) - {0, 1}:
                raise ValueError(f"{where}: labels are not binary; set data.binary: even_odd")
        return xtr, ytr, xte, yte
    raise ValueError(f"alphatrim experiment {name}: unknown data.source {src!r}")


def collect_spine_zoos(
    name: str, cfg: Mapping[str, Any], inputs: Mapping[str, Any], sheets: Mapping[str, Any],
    zoo_npz: str | Path, meta_csv: str | Path,
) -> None:
    """Source ``zoos``: gather the two-class logits of spine zoos into the study's zoo.npz.

    inputs: ``labels`` (the test set) and ``logits_<study zoo>`` (inference npz per model, in
    sheet order); sheets: study zoo -> list of sheet rows (model, seed, batch_seed).
    """
    y = read_image_set(inputs["labels"]).y
    classes = np.unique(y)
    if set(classes.tolist()) - {0, 1}:
        raise ValueError(
            f"alphatrim experiment {name}: test set {inputs['labels']} has {len(classes)} classes "
            f"(labels {classes.tolist()[:12]}); the study needs binary zoos (the score is the "
            "logit gap m+ - m-, paper Section II-A): train the spine zoos "
            f"{sorted(set(spine_zoos(cfg).values()))} on a two-class dataset, e.g. digits with "
            "options.binary: even_odd (docs/alphatrim.md)")
    arrays: dict[str, np.ndarray] = {"y_test": y.astype(np.int64)}
    rows = []
    for zoo, paths in ((z, inputs[f"logits_{z}"]) for z in spine_zoos(cfg)):
        per_model = []
        for path in paths:
            lg = read_logits(path, cfg["data"]["testset"])
            if lg.shape != (len(y), 2):
                raise ValueError(
                    f"alphatrim experiment {name}: zoo {spine_zoos(cfg)[zoo]!r} (data.zoos."
                    f"{zoo}) has {lg.shape[-1] if lg.ndim == 2 else '?'}-class logits "
                    f"{lg.shape} in {path}; the study needs binary zoos with logits of shape "
                    f"({len(y)}, 2) (paper Section II-A; docs/alphatrim.md)")
            per_model.append(lg)
        logits = np.stack(per_model)
        arrays[f"logits_{zoo}"] = logits
        acc = accuracy(logit_gap(logits, clip_mode="none"), y)
        for i, (r, a) in enumerate(zip(sheets[zoo], acc, strict=True)):
            rows.append({"zoo": zoo, "index": i, "model": r["model"], "init_seed": r["seed"],
                         "batch_seed": r["batch_seed"], "accuracy": a})
        log.info("%s: %d runs of spine zoo %s", zoo, len(logits), spine_zoos(cfg)[zoo])
    save_npz(zoo_npz, **arrays)
    save_table(pd.DataFrame(rows), meta_csv, title=f"alphatrim {name}: runs of the spine zoos")


def train_models(
    name: str, cfg: Mapping[str, Any], seed: int,
    task: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], zoo: str, start: int, stop: int,
    threads: int = 1,
) -> dict[str, np.ndarray]:
    """Train models ``[start, stop)`` of one zoo of an experiment (docs/alphatrim.md, reading R8).

    Returns the block's arrays: ``logits`` (K, N_test, 2), ``curve_accuracy``/``curve_loss``
    (K, epochs) when ``curves``, ``init_seed``, ``batch_seed``, ``init_hash``, ``order_hash``
    and ``y_test``. Model i's seeds depend only on (seed, experiment, zoo, i), and training is
    per model, so any cut of a zoo into blocks gives the same models (:func:`merge_blocks`).
    """
    # deferred: torch (about 2.5 s per job start), which the analysis and report jobs that
    # import this module never use
    from labelfree.zoo.batched import (
        BatchedCNNSpec,
        BatchedMLPSpec,
        train_batched_cnn,
        train_batched_mlp,
    )

    xtr, ytr, xte, yte = task
    if zoo not in (*REGIMES, ENSEMBLE_ZOO) or not 0 <= start < stop:
        raise ValueError(f"alphatrim experiment {name}: no models [{start}, {stop}) of zoo {zoo}")
    m = cfg["model"]
    if m["arch"] == "cnn" and xtr.ndim != 4:
        raise ValueError(f"alphatrim experiment {name}: model.arch cnn needs an image dataset")
    common = {"hidden": tuple(m["hidden"]), "epochs": int(m["epochs"]),
              "batch_size": int(m["batch_size"]), "lr": float(m["lr"]),
              "momentum": float(m["momentum"])}
    # model i's seeds do not depend on the zoo's size: the first `stop` models' seeds suffice
    init, batch = regime_seeds("S_all" if cfg["kind"] == "transfer" else zoo, stop, seed, name)
    init, batch = init[start:], batch[start:]

    bar = progress(total=stop - start, desc=f"alphatrim {name}/{zoo}", unit="model")

    def trained(done: int, total: int) -> None:
        bar.update(done - bar.n)
        log.info("%s: trained %d/%d models", zoo, done, total)

    kw = {"num_classes": 2, "curves": bool(cfg["curves"]), "threads": threads,
          "progress": trained}
    if m["arch"] == "cnn":
        res = train_batched_cnn(xtr, ytr, init, batch,
                                BatchedCNNSpec(conv=tuple(m["conv"]), **common),
                                {"test": (xte, yte)}, device=m["device"],
                                model_block=CNN_MODEL_BLOCK, **kw)
    else:
        res = train_batched_mlp(xtr, ytr, init, batch, BatchedMLPSpec(**common),
                                {"test": (xte, yte)}, **kw)
    bar.close()
    log.info("%s models [%d, %d): training took %.1f s", zoo, start, stop, res.seconds)
    out = {"y_test": np.asarray(yte), "logits": res.logits["test"],
           "init_seed": np.asarray(init, dtype=np.int64),
           "batch_seed": np.asarray(batch, dtype=np.int64),
           "init_hash": np.asarray(res.init_hash), "order_hash": np.asarray(res.order_hash)}
    if res.curves:
        out["curve_accuracy"] = res.curves["test"]["accuracy"]
        out["curve_loss"] = res.curves["test"]["loss"]
    return out


def _write_zoo(
    name: str, cfg: Mapping[str, Any], blocks: Mapping[str, list[dict[str, np.ndarray]]],
    zoo_npz: str | Path, meta_csv: str | Path,
) -> None:
    """zoo.npz (labels, logits and curves per zoo) and the runs table from each zoo's blocks,
    concatenated in model order; one job and merged shards both end here."""
    y = next(b["y_test"] for bl in blocks.values() for b in bl)
    arrays: dict[str, np.ndarray] = {"y_test": y}
    cols: dict[str, list[np.ndarray]] = {c: [] for c in ("init_seed", "batch_seed", "init_hash",
                                                         "order_hash")}
    zoo_of, index, logits = [], [], []
    for zoo, bl in blocks.items():
        lg = np.concatenate([b["logits"] for b in bl])
        arrays[f"logits_{zoo}"] = lg
        if "curve_accuracy" in bl[0]:
            arrays[f"curve_accuracy_{zoo}"] = np.concatenate([b["curve_accuracy"] for b in bl])
            arrays[f"curve_loss_{zoo}"] = np.concatenate([b["curve_loss"] for b in bl])
        for c in cols:
            cols[c].append(np.concatenate([b[c] for b in bl]))
        zoo_of += [zoo] * len(lg)
        index.append(np.arange(len(lg)))
        logits.append(lg)
    save_npz(zoo_npz, **arrays)
    meta = pd.DataFrame({
        "zoo": zoo_of, "index": np.concatenate(index),
        "init_seed": np.concatenate(cols["init_seed"]).tolist(),
        "batch_seed": np.concatenate(cols["batch_seed"]).tolist(),
        "init_hash": np.concatenate(cols["init_hash"]).tolist(),
        "order_hash": np.concatenate(cols["order_hash"]).tolist(),
        "accuracy": accuracy(logit_gap(np.concatenate(logits), clip_mode="none"), y),
    })
    save_table(meta, meta_csv, title=f"alphatrim {name}: trained runs (seeds, hashes, accuracy)")


def train_experiment(
    name: str, cfg: Mapping[str, Any], seed: int, inputs: Mapping[str, str],
    zoo_npz: str | Path, meta_csv: str | Path, threads: int = 1,
) -> None:
    """Train every zoo of an experiment in one job (zoo by zoo); write logits, labels and seeds."""
    task = load_task(name, cfg, seed, inputs)
    zoos = experiment_zoos(cfg)
    log.info("experiment %s: n_train=%d n_test=%d dim=%d; training %d models (%s)", name,
             len(task[0]), len(task[2]), task[0].shape[1], sum(zoos.values()), zoos)
    blocks = {zoo: [train_models(name, cfg, seed, task, zoo, 0, k, threads)]
              for zoo, k in zoos.items()}
    _write_zoo(name, cfg, blocks, zoo_npz, meta_csv)


def train_block(
    name: str, cfg: Mapping[str, Any], seed: int, inputs: Mapping[str, str], zoo: str,
    start: int, stop: int, block_npz: str | Path, threads: int = 1,
) -> None:
    """One seed-block shard (``models_per_job``): models ``[start, stop)`` of ``zoo`` -> npz.

    ``cfg`` needs only ``kind``, ``data``, ``model`` and ``curves``: a block does not depend on
    the zoo sizes, so growing a zoo leaves its finished blocks valid."""
    task = load_task(name, cfg, seed, inputs)
    log.info("experiment %s: zoo %s, models [%d, %d)", name, zoo, start, stop)
    arrays = train_models(name, cfg, seed, task, zoo, start, stop, threads)
    save_npz(block_npz, **arrays, zoo=np.asarray(zoo), range=np.asarray([start, stop]))


def merge_blocks(
    name: str, cfg: Mapping[str, Any], block_npzs: Sequence[str | Path], zoo_npz: str | Path,
    meta_csv: str | Path,
) -> None:
    """Merge an experiment's shards into the zoo.npz and runs table one job would write.

    Checks that the shards are exactly the blocks :func:`experiment_blocks` plans (every model
    of every zoo once, in order) and share the test labels.
    """
    want = experiment_blocks(cfg)
    got, y = [], None
    blocks: dict[str, list[dict[str, np.ndarray]]] = {}
    for path in block_npzs:
        b = load_npz(path)
        zoo, (start, stop) = str(b["zoo"]), (int(v) for v in b["range"])
        got.append((zoo, start, stop))
        if len(b["logits"]) != stop - start:
            raise ValueError(f"{path}: {len(b['logits'])} models for block [{start}, {stop})")
        if y is not None and not np.array_equal(b["y_test"], y):
            raise ValueError(f"{path}: test labels differ from the other shards'")
        y = b["y_test"]
        blocks.setdefault(zoo, []).append(b)
    if got != want:
        raise ValueError(f"alphatrim experiment {name}: shards {got} are not the planned blocks "
                         f"{want} (models_per_job = {cfg.get('models_per_job')})")
    _write_zoo(name, cfg, blocks, zoo_npz, meta_csv)


# ---------------------------------------------------------------------------------------------
# step 2: analysis
# ---------------------------------------------------------------------------------------------


def analyse_experiment(
    name: str, cfg: Mapping[str, Any], study: Mapping[str, Any], zoo_npz: str | Path,
    per_model_csv: str | Path, ensembles_csv: str | Path, raw_npz: str | Path,
    summary_json: str | Path, threads: int = 1,
) -> None:
    """alpha-hat and metrics of every candidate (per regime) and ensemble; raw outputs."""
    s = AnalysisSettings.from_config({**study, "threads": threads})
    z = load_npz(zoo_npz)
    y = z["y_test"]
    zoos = experiment_zoos(cfg)
    summary = {"experiment": name, "n_test": int(len(y)), "N": int(len(y) // 2),
               "gamma": acceptance_threshold(len(y) // 2, s.eps_a), "ensemble_accuracy": {}}
    frames, raw = [], {}
    for regime in progress([r for r in REGIMES if r in zoos], desc=f"alphatrim {name}",
                           unit="regime"):
        a = analyse_zoo(z[f"logits_{regime}"], y, s, name, regime)
        frames.append(a.per_model.assign(regime=regime))
        raw[f"churn_{regime}"] = a.pairwise_churn
        raw[f"alpha_boot_{regime}"] = a.alpha_boot
        summary["ensemble_accuracy"][regime] = a.candidate_ensemble_accuracy
        log.info("%s/%s: median alpha-hat %.4f, accuracy %.2f ± %.2f", name, regime,
                 a.per_model["alpha_hat"].median(), a.per_model["accuracy"].mean(),
                 a.per_model["accuracy"].std())
    per_model = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["regime", "model"])
    cols = ["regime"] + [c for c in per_model.columns if c != "regime"]
    save_table(per_model[cols], per_model_csv, title=f"alphatrim {name}: per-candidate statistics")

    ens = pd.DataFrame(columns=["M_ens", "rep", "alpha_hat", "alpha_hat_std",
                                "ks_reject_rate_at_0", "linf_to_reference", "accuracy",
                                "churn_vs_full_ensemble", "ece"])
    sizes = [int(v) for v in cfg["ensembles"]["sizes"]]
    reps = int(cfg["ensembles"]["reps"])
    if cfg["kind"] == "transfer" and sizes:
        logits = z["logits_S_all"]
        m = split_reference(len(logits), s.reference_fraction)
        sizes = [v for v in sizes if v <= len(logits) - m]
        ens = analyse_ensembles(logits[:m], logits[m:], y, sizes, reps, s, name, "S_all")
    elif ENSEMBLE_ZOO in zoos:
        logits = z[f"logits_{ENSEMBLE_ZOO}"]
        m = split_reference(len(logits), s.reference_fraction)
        dropped = [v for v in sizes if v > len(logits) - m]
        if dropped:
            log.warning("ensemble sizes %s exceed the pool of %d models; skipped", dropped,
                        len(logits) - m)
        sizes = [v for v in sizes if v <= len(logits) - m]
        ens = analyse_ensembles(logits[:m], logits[m:], y, sizes, reps, s, name,
                                   ENSEMBLE_ZOO)
    summary["fig5_delta_a"] = fig5_delta(len(y), s)
    save_table(ens, ensembles_csv, title=f"alphatrim {name}: one row per sampled ensemble")
    save_npz(raw_npz, **(raw or {"empty": np.zeros(0)}))
    save_json(summary, summary_json)


