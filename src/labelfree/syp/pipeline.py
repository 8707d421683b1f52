"""End-to-end SYP steps for one classifier (spec 2.10), on plain arrays.

1. :func:`build_indicator_table` - reference statistics (FD reference on training features, ATC
   threshold on the clean ID test set), the six indicators and correctness of every set, and the
   set-level baseline scores.
2. :func:`run_variant` - normalise, train the oracle on the meta-sets (several seeds), score every set.
3. :func:`baseline_predictions` - the dataset-level baselines fitted on the meta-sets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from labelfree.syp import baselines as bl
from labelfree.syp.aggregate import set_accuracy
from labelfree.syp.indicators import (
    COLUMNS,
    FeatureStats,
    atc_threshold,
    entropy,
    feature_stats,
    frechet_distance,
    indicator_matrix,
)
from labelfree.syp.layout import OracleConfig
from labelfree.syp.normalise import fit_normaliser


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
    """Spec 2.10 steps 1-2 for one classifier. ``sets``: name -> (kind, inputs), meta-sets first.

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


def run_variant(
    table: IndicatorTable, variant: Variant, seeds: Sequence[int], threads: int | None = None
) -> VariantResult:
    """Spec 2.10 steps 3-5 for one variant: pooled (or per-set) normalisation of the meta-set rows,
    oracle training with one whole meta-set per batch, per-set normalised scoring of every set.

    Validation labels are never seen here (spec check 21): only meta-set rows train the oracle.
    """
    # torch only here: the jobs that read indicator tables without training start faster
    from labelfree.syp.oracle import count_parameters, predict_scores, train_oracle

    unknown = [c for c in variant.columns if c not in COLUMNS]
    if unknown:
        raise ValueError(f"variant {variant.name}: unknown indicator(s) {unknown}; known {COLUMNS}")
    cols = [COLUMNS.index(c) for c in variant.columns]
    meta = [k for k, kind in enumerate(table.kinds) if kind == "meta"]
    if not meta or meta != list(range(len(meta))):
        raise ValueError("indicator table: meta-sets must come first and be non-empty")
    n_meta_rows = table.rows(len(meta) - 1).stop
    x_tr = table.x[:n_meta_rows, cols]
    g_tr = table.set_id[:n_meta_rows]
    norm = fit_normaliser(x_tr, variant.columns, variant.norm_train_scope, variant.normalise)
    x_tr_n = norm.transform_train(x_tr, g_tr)
    x_eval = [norm.transform_eval(table.x[table.rows(k), cols]) for k in range(len(table.sets))]
    res = VariantResult(variant, list(seeds), [], 0, 0, [], [])
    for seed in seeds:
        tr = train_oracle(x_tr_n, table.correct[:n_meta_rows], g_tr, variant.oracle, seed, threads)
        res.q.append(
            {
                name: predict_scores(tr.model, xe)
                for name, xe in zip(table.sets, x_eval, strict=True)
            }
        )
        res.params = count_parameters(tr.model)
        res.iters = tr.iters
        res.seconds.append(tr.seconds)
        res.final_loss.append(float(tr.losses[-min(len(tr.losses), 50) :].mean()))
        res.states.append({k: v.detach().clone() for k, v in tr.model.state_dict().items()})
    return res


def variant_from_config(name: str, spec: Mapping, defaults: Mapping) -> Variant:
    """Build a Variant from the config's ``oracle`` defaults overridden by a variant entry."""
    o = {**defaults, **{k: v for k, v in spec.items() if k in defaults}}
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
    )
    return Variant(
        name=name,
        columns=tuple(spec.get("indicators", COLUMNS)),
        normalise=bool(spec.get("normalise", True)),
        norm_train_scope=str(spec.get("norm_train_scope", "pooled")),
        oracle=ocfg,
    )


def predicted_accuracies(
    q: Mapping[str, np.ndarray], names: Sequence[str], tau: float, mode: str = "threshold"
) -> np.ndarray:
    """Predicted accuracy (percent) of each named set from its oracle scores (spec 2.9)."""
    return np.array([set_accuracy(q[n], tau, mode) for n in names])


def baseline_predictions(table: IndicatorTable) -> dict[str, tuple[np.ndarray, dict]]:
    """Every baseline's predicted accuracy (percent) for every set (spec 3).

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


def with_columns(variant: Variant, columns: Sequence[str]) -> Variant:
    return replace(variant, columns=tuple(columns))
