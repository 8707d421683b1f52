"""File-level steps of the `syp` workflow (called by workflow/scripts/syp_*.py).

Each function reads artefacts through :mod:`labelfree.store`, calls the library and writes its
outputs; none knows about Snakemake. Test-set names: ``syp-train`` (copy of the train split, FD
reference), ``syp-meta-000..`` (meta-sets), ``syp-val-*`` (validation sets), ``syp-rot-*``
(90/180/270-degree copies for the Rotation baseline).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from labelfree import store
from labelfree.joblog import progress
from labelfree.syp import experiment as ex
from labelfree.syp import figures
from labelfree.syp.indicators import image_indicators, softmax
from labelfree.syp.layout import (  # noqa: F401  (re-exported: the study's names and checks)
    FIGURE_NAMES,
    REF,
    SPLIT_ROLES,
    TABLE_NAMES,
    StudyConfigError,
    alternatives,
    check_config,
    check_splits,
    meta_names,
    rot_name,
    testset_names,
    validation_plan,
)
from labelfree.syp.metasets import (
    build_meta_set,
    build_validation_sets,
    rotations,
)
from labelfree.syp.pipeline import (
    IndicatorTable,
    SetInputs,
    baseline_predictions,
    build_indicator_table,
    run_variant,
)

log = logging.getLogger("labelfree.syp")

def carve_holdout(y: np.ndarray, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(source rows, holdout rows) of a source split whose holdout is carved out of it.

    For datasets with only two disjoint splits (CIFAR-10: train/test) the holdout of spec 6.1 is a
    seeded share of the source split, stratified by class; the rest stays the meta-set source and
    the ATC-threshold rows, so source, holdout and threshold never share an image.
    """
    from labelfree.data.splits import stratified_partition
    from labelfree.seeds import rng

    if not 0 < share < 1:
        raise ValueError(f"syp.splits.holdout_share must lie in (0, 1), got {share}")
    parts = stratified_partition(
        np.asarray(y), {"source": 1.0 - share, "holdout": share}, rng(seed, "syp", "holdout")
    )
    return parts["source"], parts["holdout"]


def source_rows(cfg: Mapping, y: np.ndarray, seed: int) -> np.ndarray:
    """Rows of the source split (= the `id` set) that are meta-set source and ATC rows."""
    share = cfg["splits"].get("holdout_share")
    return np.arange(len(y)) if share is None else carve_holdout(y, float(share), seed)[0]


def write_testsets(
    train: str,
    source: str,
    holdout: str | None,
    out_dir: str,
    info_path: str,
    cfg: Mapping,
    seed: int,
) -> None:
    """Build and write every syp test set of one dataset (spec 6.3-6.4) and a json record of the
    ops, strengths, groups and checksums (spec check 22). ``holdout`` None: carve it out of the
    source split (``splits.holdout_share``, :func:`carve_holdout`)."""
    t0 = time.perf_counter()
    tr, src = store.read_image_set(train), store.read_image_set(source)
    share = cfg["splits"].get("holdout_share")
    if holdout is None:
        if share is None:
            raise StudyConfigError("syp.splits: holdout is null but holdout_share is not set")
        keep, held = carve_holdout(src.y, float(share), seed)
        hold = store.ImageSet(src.x[held], src.y[held])
        src = store.ImageSet(src.x[keep], src.y[keep])
    else:
        hold = store.read_image_set(holdout)
    out = Path(out_dir)
    m = cfg["meta_sets"]
    rot = bool(cfg["rotation"])
    info: dict = {
        "meta": {},
        "val": {},
        "seed": seed,
        "n_source": len(src.y),
        "n_holdout": len(hold.y),
    }

    def put(name: str, x: np.ndarray, y: np.ndarray) -> None:
        store.write_image_set(out / f"{name}.npz", x, y)
        if rot:
            store.write_image_set(out / f"{rot_name(name)}.npz", rotations(x), np.tile(y, 3))

    put(REF, tr.x, tr.y)
    for k, name in enumerate(meta_names(int(m["count"]))):
        x, spec = build_meta_set(
            src.x, k, seed, tuple(m["ops"]), int(m["n_ops"]), tuple(m["strength"])
        )
        put(name, x, src.y)
        info["meta"][name] = {
            "ops": list(spec.ops),
            "strength": spec.strength,
            "sha256": spec.checksum,
        }
    plan = validation_plan(cfg)
    for name, (x, y, meta) in build_validation_sets(hold.x, hold.y, plan, seed).items():
        put(name, x, y)
        info["val"][name] = {**meta, "n": len(y)}
    store.save_json(info, info_path)
    log.info(
        "wrote %d meta-sets and %d validation sets in %.1fs",
        len(info["meta"]),
        len(info["val"]),
        time.perf_counter() - t0,
    )


def _load(infer: str, testset: str, layer: str = "penultimate") -> tuple[np.ndarray, np.ndarray]:
    """Softmax and features of test set ``testset`` from its inference file (its group's)."""
    return softmax(store.read_logits(infer, testset)), store.read_features(infer, layer, testset)


def model_indicators(
    infer: Mapping[str, str],
    testsets: Mapping[str, str],
    id_infer: str,
    id_testset: str,
    kinds: Mapping[str, str],
    cfg: Mapping,
    seed: int,
    out_npz: str,
    out_baselines: str,
) -> IndicatorTable:
    """Indicators and set-level baseline scores of one classifier on every syp set (spec 2.10
    steps 1-2), and the baselines' predictions (spec 3). ``infer``/``testsets`` map test-set name
    to path (rotated sets included when the rotation baseline is on); ``kinds`` name -> meta|val."""
    t0 = time.perf_counter()
    rot = bool(cfg["rotation"])
    id_probs, _ = _load(id_infer, "id")
    id_y = store.read_image_set(id_testset).y
    keep = source_rows(cfg, id_y, seed)  # carved holdout rows never enter the ATC threshold
    id_probs, id_y = id_probs[keep], id_y[keep]
    train_feats = store.read_features(infer[REF], "penultimate", REF)
    train_rot = (
        store.read_features(infer[rot_name(REF)], "penultimate", rot_name(REF)) if rot else None
    )
    sets = {}
    for name, kind in progress(kinds.items(), desc="syp indicators", unit="set"):
        probs, feats = _load(infer[name], name)
        images = store.read_image_set(testsets[name])
        img_ind = image_indicators(images.x, cfg["blur_form"], cfg["image_form"])
        rot_feats = (
            store.read_features(infer[rot_name(name)], "penultimate", rot_name(name)) if rot else None
        )
        sets[name] = (kind, SetInputs(probs, feats, images.y, img_ind, rot_feats))
    table = build_indicator_table(
        train_feats, id_probs, id_y, sets, cfg["atc_form"], train_rot, seed=seed
    )
    store.save_npz(out_npz, **table.to_arrays())
    preds = baseline_predictions(table)
    df = pd.DataFrame({"set": table.sets, "kind": table.kinds, "true_acc": table.acc})
    for method, (p, _) in preds.items():
        df[method] = p
    store.save_table(df, out_baselines, title="SYP baselines: predicted accuracy (%) per set")
    store.save_json(
        {"reference": table.reference, "fits": {m: f for m, (_, f) in preds.items()}},
        Path(out_npz).with_suffix(".json"),
    )
    log.info(
        "indicators of %d sets (%d rows) in %.1fs",
        len(table.sets),
        len(table.x),
        time.perf_counter() - t0,
    )
    return table


def train_variant(
    indicators: str,
    cfg: Mapping,
    variant_name: str,
    seeds: Sequence[int],
    base_seed: int,
    model: str,
    out_npz: str,
    out_weights: str,
    out_json: str,
    threads: int | None = None,
) -> None:
    """Train one oracle variant for every seed (spec 2.8) and score every set (spec 2.10 step 5).

    Writes the per-sample scores ``q`` (n_seeds, R) aligned with the indicator rows, the weights of
    every seed (safetensors) and the training facts (parameters, iterations, seconds, loss)."""
    from safetensors.numpy import save_file  # only here: the other steps import without it

    from labelfree.seeds import derive_seed

    table = IndicatorTable.from_arrays(store.load_npz(indicators))
    variant = ex.build_variant(cfg, variant_name)
    torch_seeds = [derive_seed(base_seed, "syp-oracle", model, s) for s in seeds]
    res = run_variant(table, variant, torch_seeds, threads)
    q = np.stack([np.concatenate([qs[n] for n in table.sets]) for qs in res.q])
    store.save_npz(out_npz, q=q.astype(np.float32))
    tensors = {
        f"seed{s}.{k}": v.numpy()
        for s, st in zip(seeds, res.states, strict=True)
        for k, v in st.items()
    }
    with store.atomic_path(out_weights) as tmp:
        save_file(tensors, str(tmp))
    store.save_json(
        {
            "variant": variant_name,
            "columns": list(variant.columns),
            "arch": variant.oracle.arch,
            "expand": variant.oracle.expand,
            "normalise": variant.normalise,
            "norm_train_scope": variant.norm_train_scope,
            "loss_adjust": variant.oracle.loss_adjust,
            "base_lr": variant.oracle.base_lr,
            "params": res.params,
            "iters": res.iters,
            "seeds": list(seeds),
            "torch_seeds": torch_seeds,
            "seconds": res.seconds,
            "final_loss": res.final_loss,
        },
        out_json,
    )
    log.info(
        "variant %s: %d params, %d iters, %.1fs per seed",
        variant_name,
        res.params,
        res.iters,
        float(np.mean(res.seconds)),
    )


def load_results(
    models: Sequence[str],
    indicators: Sequence[str],
    baselines: Sequence[str],
    oracle: Mapping[str, Mapping[str, str]],
) -> list[ex.ModelResults]:
    """Assemble ModelResults per classifier from the artefacts (``oracle[model][variant]`` = npz)."""
    out = []
    for model, ind, base in zip(models, indicators, baselines, strict=True):
        table = IndicatorTable.from_arrays(store.load_npz(ind))
        bdf = store.read_table(base)
        bl = {c: bdf[c].to_numpy(dtype=np.float64) for c in bdf.columns if c in ex.BASELINE_ORDER}
        bounds = np.searchsorted(table.set_id, np.arange(len(table.sets) + 1))
        q = {}
        for variant, path in oracle[model].items():
            arr = store.load_npz(path)["q"].astype(np.float64)
            q[variant] = [
                {n: row[bounds[k] : bounds[k + 1]] for k, n in enumerate(table.sets)} for row in arr
            ]
        out.append(ex.ModelResults(model, table, bl, q))
    return out


def write_tables(
    results: Sequence[ex.ModelResults],
    cfg: Mapping,
    groups: Mapping[str, str],
    params: Mapping[tuple[str, str], int],
    out: Mapping[str, str],
) -> None:
    """Tables 1-5, the tau selection, per-set predictions and the figures (spec 5)."""
    agg = cfg["aggregate"]
    pred = ex.prediction_rows(results, agg, groups)
    store.save_table(
        pred,
        out["predictions"],
        title="SYP: predicted vs true accuracy (%) per validation set, method and seed",
    )
    tabs = {
        "table1": (
            ex.table1(results, agg, groups),
            "Table 1 (SYP paper): RMSE (pp) of every method on the validation sets, overall and per group",
        ),
        "table2": (
            ex.table2(results, agg),
            "Table 2 (SYP paper) analogue on the validation sets; the paper's numbers are from the private challenge server",
        ),
        "table3": (
            ex.table3(results, agg, cfg["tables"]["indicator_ablation"], groups),
            "Table 3 (SYP paper): indicator ablation, ORA-A, indicators added cumulatively",
        ),
        "table4": (
            ex.table4(
                results, agg, cfg["tables"]["expand_grid"], int(cfg["oracle"]["expand"]), params
            ),
            "Table 4 (SYP paper): oracle capacity, ORA-A expansion ratio r",
        ),
        "table5": (ex.table5(results, agg), "Table 5 (SYP paper): influence of normalisation"),
        "tau": (
            ex.tau_table(results, agg["tau_grid"]),
            "SYP threshold selection on the validation sets (uses validation labels, spec 2.9)",
        ),
    }
    for key, (df, title) in tabs.items():
        store.save_table(df, out[key], title=title)
    meta = ex.meta_fit(results, agg)
    store.save_table(
        meta,
        out["meta_fit"],
        title="Figures 4-5 (SYP paper) data: GT vs ORA-A on meta-training sets",
    )
    store.save_figure(figures.scatter(pred), out["fig_scatter"])
    store.save_figure(
        figures.bars(meta, "Figs. 4-5 analogue: meta-training sets, GT vs ORA-A", limit=100),
        out["fig_meta"],
    )
    if "fig10" in out:
        f10 = ex.fig10_table(results, agg, cfg)
        store.save_table(
            f10, out["fig10"], title="Figure 10 (SYP paper) data: ORA-A RMSE vs iterations and lr"
        )
        store.save_figure(figures.sensitivity(f10), out["fig_fig10"])
    if "checks" in out:
        store.save_table(
            ex.checks_table(results, agg, cfg, groups),
            out["checks"],
            title="SYP checks (spec 6.6): check, value, threshold, holds",
        )
    ora = pred[pred["method"] == "SYP (ORA-A)"]
    store.save_figure(
        figures.bars(ora, "Figs. 6-7 analogue: validation sets, GT vs ORA-A (mean over seeds)"),
        out["fig_val"],
    )
