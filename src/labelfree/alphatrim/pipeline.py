"""The study's three steps as library functions the workflow scripts call (spec section 5).

1. :func:`train_experiment` - the task's data and every seed-regime zoo of an experiment,
   trained together with :func:`labelfree.zoo.batched.train_batched_mlp` -> ``zoo.npz``.
2. :func:`analyse_experiment` - alpha-hat and metrics per candidate and per ensemble.
3. :func:`write_report` - Tables I-V and Figs. 4-16 named after the paper's numbering.

:func:`experiment_outputs` lists what an experiment produces; the rule file uses it to
declare outputs, the report step to write them, so both always agree.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labelfree.alphatrim import experiment as ex
from labelfree.alphatrim import figures as fg
from labelfree.alphatrim.kernel import acceptance_threshold
from labelfree.alphatrim.layout import (  # noqa: F401  (re-exported)
    CNN_MODEL_BLOCK,
    FIGURES,
    TABLES,
    experiment_blocks,
    experiment_outputs,
    experiment_zoos,
    spine_zoos,
)
from labelfree.alphatrim.metrics import accuracy, logit_gap
from labelfree.joblog import progress
from labelfree.outputs import output_name
from labelfree.seeds import derive_seed
from labelfree.store import load_json, load_npz, save_figure, save_json, save_npz, save_table

log = logging.getLogger(__name__)

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
    from labelfree.store import read_features, read_image_set

    data = cfg["data"]
    src = data["source"]
    if src == "make_classification":
        return ex.make_synthetic_task(data, derive_seed(seed, name, "data"))
    if src == "dataset":
        tr, te = read_image_set(inputs["train"]), read_image_set(inputs["test"])
        kw = {"positive": data["positive"], "negative": data["negative"],
              "flatten": cfg["model"]["arch"] != "cnn"}
        xtr, ytr = ex.image_task_arrays(tr.x, tr.y, inputs["train"], **kw)
        xte, yte = ex.image_task_arrays(te.x, te.y, inputs["test"], **kw)
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
            xtr, ytr = ex.image_task_arrays(xtr, ytr, inputs["train_feat"], data["positive"],
                                            data["negative"], flatten=False)
            xte, yte = ex.image_task_arrays(xte, yte, inputs["test_feat"], data["positive"],
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
    from labelfree.store import read_image_set, read_logits

    y = read_image_set(inputs["labels"]).y
    classes = np.unique(y)
    if set(classes.tolist()) - {0, 1}:
        raise ValueError(
            f"alphatrim experiment {name}: test set {inputs['labels']} has {len(classes)} classes "
            f"(labels {classes.tolist()[:12]}); the study needs binary zoos (the score is the "
            "logit gap m+ - m-, spec 2.1): train the spine zoos "
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
                    f"({len(y)}, 2) (spec 2.1; docs/alphatrim.md)")
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
    """Train models ``[start, stop)`` of one zoo of an experiment (seeds of spec 3.1).

    Returns the block's arrays: ``logits`` (K, N_test, 2), ``curve_accuracy``/``curve_loss``
    (K, epochs) when ``curves``, ``init_seed``, ``batch_seed``, ``init_hash``, ``order_hash``
    and ``y_test``. Model i's seeds depend only on (seed, experiment, zoo, i), and training is
    per model, so any cut of a zoo into blocks gives the same models (:func:`merge_blocks`).
    """
    # torch only here: the analysis and report jobs import this module without training
    from labelfree.zoo.batched import (
        BatchedCNNSpec,
        BatchedMLPSpec,
        train_batched_cnn,
        train_batched_mlp,
    )

    xtr, ytr, xte, yte = task
    if zoo not in (*ex.REGIMES, ex.ENSEMBLE_ZOO) or not 0 <= start < stop:
        raise ValueError(f"alphatrim experiment {name}: no models [{start}, {stop}) of zoo {zoo}")
    m = cfg["model"]
    if m["arch"] == "cnn" and xtr.ndim != 4:
        raise ValueError(f"alphatrim experiment {name}: model.arch cnn needs an image dataset")
    common = {"hidden": tuple(m["hidden"]), "epochs": int(m["epochs"]),
              "batch_size": int(m["batch_size"]), "lr": float(m["lr"]),
              "momentum": float(m["momentum"])}
    # model i's seeds do not depend on the zoo's size: the first `stop` models' seeds suffice
    init, batch = ex.regime_seeds("S_all" if cfg["kind"] == "transfer" else zoo, stop, seed, name)
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
    s = ex.AnalysisSettings.from_config({**study, "threads": threads})
    z = load_npz(zoo_npz)
    y = z["y_test"]
    zoos = experiment_zoos(cfg)
    summary = {"experiment": name, "n_test": int(len(y)), "N": int(len(y) // 2),
               "gamma": acceptance_threshold(len(y) // 2, s.eps_a), "ensemble_accuracy": {}}
    frames, raw = [], {}
    for regime in progress([r for r in ex.REGIMES if r in zoos], desc=f"alphatrim {name}",
                           unit="regime"):
        a = ex.analyse_zoo(z[f"logits_{regime}"], y, s, name, regime)
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
        m = ex.split_reference(len(logits), s.reference_fraction)
        sizes = [v for v in sizes if v <= len(logits) - m]
        ens = ex.analyse_ensembles(logits[:m], logits[m:], y, sizes, reps, s, name, "S_all")
    elif ex.ENSEMBLE_ZOO in zoos:
        logits = z[f"logits_{ex.ENSEMBLE_ZOO}"]
        m = ex.split_reference(len(logits), s.reference_fraction)
        dropped = [v for v in sizes if v > len(logits) - m]
        if dropped:
            log.warning("ensemble sizes %s exceed the pool of %d models; skipped", dropped,
                        len(logits) - m)
        sizes = [v for v in sizes if v <= len(logits) - m]
        ens = ex.analyse_ensembles(logits[:m], logits[m:], y, sizes, reps, s, name,
                                   ex.ENSEMBLE_ZOO)
    summary["fig5_delta_a"] = ex.fig5_delta(len(y), s)
    save_table(ens, ensembles_csv, title=f"alphatrim {name}: one row per sampled ensemble")
    save_npz(raw_npz, **(raw or {"empty": np.zeros(0)}))
    save_json(summary, summary_json)


# ---------------------------------------------------------------------------------------------
# step 3: tables and figures
# ---------------------------------------------------------------------------------------------


def write_report(
    name: str, cfg: Mapping[str, Any], study: Mapping[str, Any], zoo_npz: str | Path,
    per_model_csv: str | Path, ensembles_csv: str | Path, raw_npz: str | Path,
    summary_json: str | Path, tables_dir: str | Path, figures_dir: str | Path,
) -> None:
    """Write the experiment's tables (csv + md) and figures (png + pdf), see TABLES/FIGURES,
    named ``<id>-<experiment>[-<detail>]`` (docs/outputs.md)."""
    s = ex.AnalysisSettings.from_config(study)
    want = experiment_outputs(cfg)
    per_model = pd.read_csv(per_model_csv)
    ens = pd.read_csv(ensembles_csv)
    raw = load_npz(raw_npz)
    summary = load_json(summary_json)
    z = load_npz(zoo_npz)
    tdir, fdir = Path(tables_dir), Path(figures_dir)
    cut, band = s.cut, float(study["top_band"])
    n = summary["N"]

    def table(key: str, df: pd.DataFrame) -> None:
        save_table(df, tdir / f"{output_name(key, name)}.csv",
                   title=f"{TABLES[key]} ({name}, N = {n}, gamma = {summary.get('gamma', 0):.4f})")

    def figure(key: str, fig: Any) -> None:
        save_figure(fig, fdir / f"{output_name(key, name)}.png")

    def curves(zoo: str) -> dict[str, np.ndarray] | None:
        if f"curve_accuracy_{zoo}" not in z:
            return None
        return {"accuracy": z[f"curve_accuracy_{zoo}"], "loss": z[f"curve_loss_{zoo}"]}

    pairs = {r: ex.pair_table(per_model[per_model["regime"] == r].reset_index(drop=True),
                              raw[f"churn_{r}"])
             for r in dict.fromkeys(per_model["regime"])}
    for key in want["tables"]:
        if key == "table1":
            table(key, ex.table1(ens, cut, summary["fig5_delta_a"]))
        elif key == "table2":
            table(key, ex.table2(per_model, summary["ensemble_accuracy"], cut))
        elif key == "table3":
            table(key, ex.table3(pairs, cut))
        elif key == "extra-checks":
            table(key, ex.checks_table(per_model, ens, cut))
        elif key in ("table4", "table5"):
            table(key, ex.table_top_band(per_model[per_model["regime"] == "S_all"], band))
    sall = per_model[per_model["regime"] == "S_all"]
    for key in want["figures"]:
        label = f"{FIGURES[key]} ({name})"
        if key == "fig4":
            logits = z[f"logits_{ex.ENSEMBLE_ZOO}"]
            m = ex.split_reference(len(logits), s.reference_fraction)
            fig = fg.fig_gap_histogram_and_curves(s.gaps(logits[m:]), curves(ex.ENSEMBLE_ZOO),
                                                  label)
        elif key == "fig5":
            fig = fg.fig_ensemble_scatter(ens, "linf_to_reference", "L_inf(reference, ensemble)",
                                          label, hline=summary["fig5_delta_a"])
        elif key in ("fig6", "fig15"):
            fig = fg.fig_ensemble_panels(ens, "churn_vs_full_ensemble", "churn w.r.t. ensemble",
                                         label)
        elif key in ("fig7", "fig16"):
            fig = fg.fig_ensemble_panels(ens, "ece", "ECE", label)
        elif key == "fig8":
            fig = fg.fig_ensemble_scatter(ens, "alpha_hat", "alpha-hat", label, hline=cut)
        elif key == "fig9":
            fig = fg.fig_alpha_vs_accuracy(per_model, cut, label)
        elif key == "fig10":
            fig = fg.fig_pairwise(pairs, label)
        elif key in ("fig11", "fig14"):
            fig = fg.fig_alpha_vs_metrics(sall, cut, label)
        elif key == "fig12":
            fig = fg.fig_3d(sall, label)
        elif key == "fig13":
            fig = fg.fig_curves(curves("S_all"), label)
        else:  # pragma: no cover - FIGURES and this dispatch are kept in sync by tests
            raise KeyError(key)
        figure(key, fig)
