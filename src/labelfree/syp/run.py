"""The `syp` study's computations over artefacts: what ``workflow/scripts/syp_*.py`` call.

On plain arrays, for one classifier (paper Section 3; docs/syp.md, "What it computes"):

1. :func:`build_indicator_table` - reference statistics (FD reference on training features, ATC
   threshold on the clean ID test set), the six indicators and correctness of every set, and the
   set-level baseline scores.
2. :func:`run_variants` - normalise, train the oracles of every variant on the meta-sets (several
   seeds, stacked), score every set.
3. :func:`baseline_predictions` - the dataset-level baselines fitted on the meta-sets.

On files (each reads artefacts through :mod:`labelfree.store`, calls the steps above and writes
its outputs; none knows about Snakemake): :func:`write_testsets`, :func:`model_indicators`,
:func:`train_variants`. Test-set names: ``syp-train`` (copy of the train split, FD reference),
``syp-meta-000..`` (meta-sets), ``syp-val-*`` (validation sets), ``syp-rot-*``
(90/180/270-degree copies for the Rotation baseline).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from safetensors.numpy import save_file

from labelfree import store
from labelfree.data.splits import stratified_partition
from labelfree.joblog import progress
from labelfree.numerics import entropy, softmax
from labelfree.seeds import derive_seed, rng
from labelfree.syp import baselines as bl
from labelfree.syp.indicators import (
    FeatureStats,
    atc_threshold,
    feature_stats,
    frechet_distance,
    image_indicators,
    indicator_matrix,
)
from labelfree.syp.metasets import build_meta_set, build_validation_sets, rotations
from labelfree.syp.normalise import fit_normaliser
from labelfree.syp.plan import (
    COLUMNS,
    REF,
    OracleConfig,
    StudyConfigError,
    meta_names,
    rot_name,
    validation_plan,
    variant_overrides,
)

log = logging.getLogger("labelfree.syp")


@dataclass(frozen=True)
class SetInputs:
    """One set seen by one classifier: softmax (N,K), penultimate features (N,D), labels (N,),
    image indicators (N,3), and for the rotation baseline the features of the 90/180/270-degree
    copies (3N, D) or None."""

    probs: np.ndarray
    feats: np.ndarray
    labels: np.ndarray
    image_ind: np.ndarray
    rot_feats: np.ndarray | None = None


@dataclass
class IndicatorTable:
    """Every set's indicator rows and set-level scores for one classifier.

    ``x`` (R, 6) in COLUMNS order, ``correct`` (R,), ``set_id`` (R,) index into ``sets``;
    ``kinds`` per set (``meta`` or ``val``); ``scores`` method -> (S,) set-level baseline scores;
    ``acc`` (S,) true accuracy in percent; ``reference`` ATC threshold, clean accuracy etc.
    """

    x: np.ndarray
    correct: np.ndarray
    set_id: np.ndarray
    sets: list[str]
    kinds: list[str]
    acc: np.ndarray
    scores: dict[str, np.ndarray]
    reference: dict[str, float] = field(default_factory=dict)

    def rows(self, k: int) -> slice:
        lo, hi = np.searchsorted(self.set_id, [k, k + 1])
        return slice(int(lo), int(hi))

    def to_arrays(self) -> dict[str, np.ndarray]:
        out = {
            "x": self.x,
            "correct": self.correct,
            "set_id": self.set_id,
            "sets": np.array(self.sets),
            "kinds": np.array(self.kinds),
            "acc": self.acc,
            "ref_keys": np.array(list(self.reference)),
            "ref_values": np.array(list(self.reference.values()), dtype=np.float64),
        }
        out.update({f"score_{k}": v for k, v in self.scores.items()})
        return out

    @classmethod
    def from_arrays(cls, a: Mapping[str, np.ndarray]) -> IndicatorTable:
        return cls(
            x=a["x"],
            correct=a["correct"],
            set_id=a["set_id"],
            sets=[str(s) for s in a["sets"]],
            kinds=[str(s) for s in a["kinds"]],
            acc=a["acc"],
            scores={k[6:]: v for k, v in a.items() if k.startswith("score_")},
            reference=dict(
                zip([str(k) for k in a["ref_keys"]], map(float, a["ref_values"]), strict=True)
            ),
        )


def build_indicator_table(
    train_feats: np.ndarray,
    id_probs: np.ndarray,
    id_labels: np.ndarray,
    sets: Mapping[str, tuple[str, SetInputs]],
    atc_form: str = "difference",
    train_rot_feats: np.ndarray | None = None,
    seed: int = 0,
) -> IndicatorTable:
    """Indicator rows and set-level scores of one classifier (docs/syp.md, readings R2-R4, R9).
    ``sets``: name -> (kind, inputs), meta-sets first.

    FD reference = training-set features; ATC threshold and clean accuracy from the ID test set.
    Set-level scores: ConfScore, Entropy, ATC (kit), FD, DoC, and Rotation when rotated features are
    given for the training set and every set.
    """
    ref_stats: FeatureStats = feature_stats(train_feats)
    thr = atc_threshold(id_probs, id_labels)
    t_kit = bl.atc_kit_threshold(id_probs, id_labels)
    t_garg = bl.atc_garg_threshold(id_probs, id_labels)
    head = None
    if train_rot_feats is not None:
        head = bl.fit_rotation_head(np.concatenate([train_feats, train_rot_feats]), seed=seed)
    xs, cs, ids, names, kinds, accs = [], [], [], [], [], []
    scores: dict[str, list[float]] = {
        m: [] for m in ("ConfScore", "Entropy", "ATC", "FD", "DoC", "ATC-Garg")
    }
    if head is not None:
        scores["Rotation"] = []
    for k, (name, (kind, s)) in enumerate(sets.items()):
        fd = frechet_distance(ref_stats, feature_stats(s.feats))
        xs.append(indicator_matrix(s.probs, s.image_ind, fd, thr.t, atc_form))
        correct = (s.probs.argmax(axis=1) == s.labels).astype(np.float64)
        cs.append(correct)
        ids.append(np.full(len(correct), k, dtype=np.int64))
        names.append(name)
        kinds.append(kind)
        accs.append(100.0 * correct.mean())
        scores["ConfScore"].append(bl.conf_score(s.probs))
        scores["Entropy"].append(float(entropy(s.probs).mean()))
        scores["ATC"].append(bl.atc_kit_score(s.probs, t_kit))
        scores["FD"].append(fd)
        scores["DoC"].append(bl.doc_estimate(s.probs, id_probs, thr.accuracy))
        scores["ATC-Garg"].append(bl.atc_garg_estimate(s.probs, t_garg))
        if head is not None:
            if s.rot_feats is None:
                raise ValueError(f"set {name}: rotation baseline enabled but no rotated features")
            scores["Rotation"].append(head.score(np.concatenate([s.feats, s.rot_feats])))
    reference = {
        "atc_t": thr.t,
        "id_accuracy": thr.accuracy,
        "id_n": float(thr.n),
        "atc_kit_t": t_kit,
        "atc_garg_t": t_garg,
        "feat_dim": float(train_feats.shape[1]),
    }
    if head is not None:
        reference["rotation_train_acc"] = head.score(np.concatenate([train_feats, train_rot_feats]))
    return IndicatorTable(
        x=np.concatenate(xs),
        correct=np.concatenate(cs),
        set_id=np.concatenate(ids),
        sets=names,
        kinds=kinds,
        acc=np.asarray(accs),
        scores={k: np.asarray(v) for k, v in scores.items()},
        reference=reference,
    )


# ---------------------------------------------------------------------------------------------
# oracle variants
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Variant:
    """An oracle configuration to train: indicator subset, normalisation and training settings."""

    name: str
    columns: tuple[str, ...] = COLUMNS
    normalise: bool = True
    norm_train_scope: str = "pooled"
    oracle: OracleConfig = OracleConfig()


@dataclass
class VariantResult:
    """Scores of every set for every seed: ``q[seed][set name]`` (N,), plus training facts."""

    variant: Variant
    seeds: list[int]
    q: list[dict[str, np.ndarray]]
    params: int
    iters: int
    seconds: list[float]
    final_loss: list[float]
    states: list[dict] = field(default_factory=list, repr=False)
    #: variants whose runs this one reuses (a loss adjustment that never fires)
    same_as: list[str] = field(default_factory=list)


def run_variant(
    table: IndicatorTable, variant: Variant, seeds: Sequence[int], threads: int | None = None
) -> VariantResult:
    """One oracle variant: :func:`run_variants` with one variant."""
    return run_variants(table, [variant], seeds, threads)[variant.name]


def run_variants(
    table: IndicatorTable,
    variants: Sequence[Variant],
    seeds: Sequence[int],
    threads: int | None = None,
) -> dict[str, VariantResult]:
    """Oracle variants (docs/syp.md, readings R5-R8), each for every seed: pooled (or per-set)
    normalisation of the meta-set rows, oracle training with one whole meta-set per batch, per-set
    normalised scoring of every set.

    Runs that differ only in iterations, learning rate, loss adjustment, normalisation or seed,
    with the same architecture, width and indicator count, train together as one stack
    (:func:`labelfree.syp.oracle.train_oracles`; each run gets the weights it would get alone);
    ORA-A runs without dropout of narrower widths (Tables 3-4) share one zero-padded stack. A
    loss-adjusted run whose adjustment never fires (no meta-set's accuracy below the threshold)
    is the unadjusted run with the same seed and is trained once.
    Validation labels are never seen here: only meta-set rows train the oracle.
    """
    # deferred: torch takes seconds to import (12-14 s on the shared 2-core machine); only the
    # oracle step of the syp_oracle job trains, syp_testsets and syp_tables import this module
    # without it
    from labelfree.syp.oracle import (
        count_parameters,
        low_accuracy_batches,
        paddable,
        predict_scores,
        stack_key,
        train_oracles,
    )

    meta = [k for k, kind in enumerate(table.kinds) if kind == "meta"]
    if not meta or meta != list(range(len(meta))):
        raise ValueError("indicator table: meta-sets must come first and be non-empty")
    n_meta_rows = table.rows(len(meta) - 1).stop
    g_tr = table.set_id[:n_meta_rows]
    c_tr = table.correct[:n_meta_rows]
    x_tr, x_eval = {}, {}
    for v in variants:
        unknown = [c for c in v.columns if c not in COLUMNS]
        if unknown:
            raise ValueError(f"variant {v.name}: unknown indicator(s) {unknown}; known {COLUMNS}")
        cols = [COLUMNS.index(c) for c in v.columns]
        norm = fit_normaliser(
            table.x[:n_meta_rows, cols], v.columns, v.norm_train_scope, v.normalise
        )
        x_tr[v.name] = norm.transform_train(table.x[:n_meta_rows, cols], g_tr)
        x_eval[v.name] = np.concatenate(
            [norm.transform_eval(table.x[table.rows(k), cols]) for k in range(len(table.sets))]
        )

    def effective(v: Variant):
        """What the run trains on: an adjustment that never fires is no adjustment."""
        o = v.oracle
        if o.loss_adjust and not low_accuracy_batches(c_tr, g_tr, o.low_acc_threshold).any():
            o = replace(o, loss_adjust=False)
        return (v.columns, v.normalise, v.norm_train_scope, o)

    # one run per distinct (effective variant, seed); stacks of runs sharing shapes
    runs: dict[tuple, list[tuple[str, int]]] = {}
    for v in variants:
        for seed in seeds:
            runs.setdefault((effective(v), seed), []).append((v.name, seed))
    # stacks: runs of one stack_key; ORA-A without dropout pads narrower runs, so its widest runs
    # (width = indicators x expand) form one stack and the narrower ones another
    by_key: dict[tuple, list[tuple]] = {}
    for key in runs:
        (cols, _, _, o), _ = key
        by_key.setdefault((stack_key(o), 0 if paddable(o) else len(cols)), []).append(key)
    stacks: list[list[tuple]] = []
    for keys in by_key.values():
        width = [len(k[0][0]) * k[0][3].expand for k in keys]
        wide = [k for k, w in zip(keys, width, strict=True) if w == max(width)]
        stacks += [wide] + ([narrow] if (narrow := [k for k in keys if k not in wide]) else [])
    trained: dict[tuple[str, int], tuple] = {}
    for keys in stacks:
        first = [runs[k][0][0] for k in keys]
        out = train_oracles(
            [x_tr[name] for name in first],
            c_tr,
            g_tr,
            [k[0][3] for k in keys],
            [k[1] for k in keys],
            threads,
        )
        for k, tr in zip(keys, out, strict=True):
            for name, seed in runs[k]:
                trained[(name, seed)] = (tr, runs[k][0][0])
    results = {}
    bounds = np.cumsum(
        [0] + [table.rows(k).stop - table.rows(k).start for k in range(len(table.sets))]
    )
    for v in variants:
        res = VariantResult(v, list(seeds), [], 0, 0, [], [])
        for seed in seeds:
            tr, _ = trained[(v.name, seed)]
            q = predict_scores(tr.model, x_eval[v.name])
            res.q.append({name: q[bounds[k] : bounds[k + 1]] for k, name in enumerate(table.sets)})
            res.params = count_parameters(tr.model)
            res.iters = tr.iters
            res.seconds.append(tr.seconds)
            res.final_loss.append(float(tr.losses[-min(len(tr.losses), 50) :].mean()))
            res.states.append({k: t.detach().clone() for k, t in tr.model.state_dict().items()})
        res.same_as = sorted({trained[(v.name, s)][1] for s in seeds} - {v.name})
        results[v.name] = res
    return results


def variant_from_config(name: str, overrides: Mapping, defaults: Mapping) -> Variant:
    """Build a Variant from the config's ``oracle`` defaults overridden by a variant entry."""
    o = {**defaults, **{k: v for k, v in overrides.items() if k in defaults}}
    ocfg = OracleConfig(
        arch=o["arch"],
        expand=int(o["expand"]),
        dropout=None if o["dropout"] is None else float(o["dropout"]),
        passes=float(o["passes"]),
        lr=None if o["lr"] is None else float(o["lr"]),
        momentum=float(o["momentum"]),
        weight_decay=float(o["weight_decay"]),
        decay_bias=bool(o["decay_bias"]),
        poly_power=float(o["poly_power"]),
        loss_adjust=bool(o["loss_adjust"]),
        low_acc_threshold=float(o["low_acc_threshold"]),
        pos_weight=float(o["pos_weight"]),
        ora_a_init=str(o.get("ora_a_init", "he")),
    )
    return Variant(
        name=name,
        columns=tuple(overrides.get("indicators", COLUMNS)),
        normalise=bool(overrides.get("normalise", True)),
        norm_train_scope=str(overrides.get("norm_train_scope", "pooled")),
        oracle=ocfg,
    )


def build_variant(cfg: Mapping, name: str) -> Variant:
    """The oracle variant ``name`` of :func:`labelfree.syp.plan.variant_overrides` for ``cfg``."""
    variants = variant_overrides(cfg)
    if name not in variants:
        raise ValueError(f"syp: unknown oracle variant {name!r}; known {sorted(variants)}")
    return variant_from_config(name, variants[name], cfg["oracle"])


def baseline_predictions(table: IndicatorTable) -> dict[str, tuple[np.ndarray, dict]]:
    """Every baseline's predicted accuracy (percent) for every set (docs/syp.md, reading R9).

    Regression baselines are fitted on the meta-sets only; DoC and ATC-Garg are direct estimates
    (not in the paper).
    Returns method -> (predictions (S,), fit info).
    """
    meta = np.array([k == "meta" for k in table.kinds])
    out: dict[str, tuple[np.ndarray, dict]] = {}
    for method in bl.REGRESSION_METHODS:
        if method not in table.scores:
            continue
        s = table.scores[method]
        fit = bl.fit_linear(s[meta], table.acc[meta])
        out[method] = (
            fit.predict(s),
            {"slope": fit.slope, "intercept": fit.intercept, "r2_meta": fit.r2},
        )
    for method in ("DoC", "ATC-Garg"):  # direct estimates, not in the paper
        if method in table.scores:
            out[method] = (np.round(table.scores[method], 6), {"direct": True})
    return out


def carve_holdout(y: np.ndarray, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(source rows, holdout rows) of a source split whose holdout is carved out of it.

    For datasets with only two disjoint splits (CIFAR-10: train/test) the holdout (docs/syp.md,
    reading R11) is a seeded share of the source split, stratified by class; the rest stays the
    meta-set source and the ATC-threshold rows, so source, holdout and threshold never share an
    image.
    """
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
    """Build and write every syp test set of one dataset (docs/syp.md, reading R11) and a json
    record of the ops, strengths, groups and checksums. ``holdout`` None: carve it out of the
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
        x, record = build_meta_set(
            src.x, k, seed, tuple(m["ops"]), int(m["n_ops"]), tuple(m["strength"])
        )
        put(name, x, src.y)
        info["meta"][name] = {
            "ops": list(record.ops),
            "strength": record.strength,
            "sha256": record.checksum,
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
    """Indicators and set-level baseline scores of one classifier on every syp set, and the
    baselines' predictions (docs/syp.md, reading R9). ``infer``/``testsets`` map test-set name
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
            store.read_features(infer[rot_name(name)], "penultimate", rot_name(name))
            if rot
            else None
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


def train_variants(
    indicators: str,
    cfg: Mapping,
    variant_names: Sequence[str],
    seeds: Sequence[int],
    base_seed: int,
    model: str,
    out_npz: Sequence[str],
    out_weights: Sequence[str],
    out_json: Sequence[str],
    threads: int | None = None,
) -> None:
    """Train every oracle variant of one classifier for every seed (docs/syp.md, reading R7;
    :func:`run_variants`) and score every set.

    Per variant (``out_*[i]`` for ``variant_names[i]``): the per-sample scores ``q`` (n_seeds, R)
    aligned with the indicator rows, the weights of every seed (safetensors) and the training facts
    (parameters, iterations, seconds, loss; ``same_as``: the variant whose runs it reuses)."""
    table = IndicatorTable.from_arrays(store.load_npz(indicators))
    variants = [build_variant(cfg, name) for name in variant_names]
    torch_seeds = [derive_seed(base_seed, "syp-oracle", model, s) for s in seeds]
    results = run_variants(table, variants, torch_seeds, threads)
    for variant, q_path, w_path, js in zip(variants, out_npz, out_weights, out_json, strict=True):
        res = results[variant.name]
        q = np.stack([np.concatenate([qs[n] for n in table.sets]) for qs in res.q])
        store.save_npz(q_path, q=q.astype(np.float32))
        tensors = {
            f"seed{s}.{k}": v.numpy()
            for s, st in zip(seeds, res.states, strict=True)
            for k, v in st.items()
        }
        with store.atomic_path(w_path) as tmp:
            save_file(tensors, str(tmp))
        store.save_json(
            {
                "variant": variant.name,
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
                "same_as": res.same_as,
            },
            js,
        )
        log.info(
            "variant %s: %d params, %d iters, %.1fs per seed%s",
            variant.name,
            res.params,
            res.iters,
            float(np.mean(res.seconds)),
            f" (the runs of {', '.join(res.same_as)})" if res.same_as else "",
        )
