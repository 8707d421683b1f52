"""Running the PACE study over artefacts: what the workflow scripts (``pace_*.py``) call.

A *subject* is one (model, test pool) pair with its item scores (``correct_i`` or
``1 - sq_err_i``, docs/pace.md reading R8), its features (ORI, FL, LHL, CON; reading R1) and,
for classifiers, its confidences. :func:`write_pools` builds the study's input pools,
:func:`build_subjects` gathers the subjects from inference artefacts (and trains the rotation
regressor), :func:`run_experiment` produces one row per approach x repetition x budget with the
full setting of each row, :func:`errors` reduces them to the paper's "MSE" (paper section 4.3;
reading R14) and :func:`css_cov` computes Table 12's CSS-COV rows.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labelfree.joblog import progress
from labelfree.numerics import softmax
from labelfree.seeds import rng as seeded_rng
from labelfree.store import (
    atomic_path,
    load_npz,
    read_features,
    read_image_set,
    read_logits,
    save_json,
    save_npz,
    save_table,
    write_image_set,
)

from . import baselines as bl
from .core import PaceConfig, PaceFit, fit
from .inputs import (
    RotationRegressor,
    adversarial_pool,
    light_images,
    patch_images,
    rotate_images,
    shifted_pool,
)
from .metrics import item_scores_classification, mse_percent
from .plan import EXPERIMENTS
from .surprise import css_cov as css_cov_estimates
from .surprise import fit_lsa, lsa, strata_summary

log = logging.getLogger(__name__)

FEATURES = ("ORI", "FL", "LHL", "CON")
INPUT_TYPES = ("original", "mutated", "generated")
CES_DEFAULTS = {"init": 30, "step": 5, "candidates": 30, "allow_repeats": False, "reading": "histogram",
                "edges": 20}
CSS_DEFAULTS = {"cuts": (0.8, 0.9), "alloc": (0.2, 0.4, 0.4), "weights": None}


# ------------------------------------------------------------------------------- subjects


@dataclass
class Subject:
    """One PACE subject: a model on a test pool (the analogue of a row of the paper's Table 1)."""

    name: str
    task: str  # "cls" | "reg"
    input_type: str  # original | mutated | generated
    mutant: bool  # label-mutated model (belongs to no input-type group, docs/pace.md R14)
    model: str
    testset: str
    scores: np.ndarray
    features: dict[str, np.ndarray] = field(default_factory=dict)
    confidence: np.ndarray | None = None
    scores_top5: np.ndarray | None = None  # top-5 correctness (Table 9), classifiers only

    @property
    def truth(self) -> float:
        return float(np.mean(self.scores))

    @property
    def n(self) -> int:
        return int(len(self.scores))

    def meta(self) -> dict[str, Any]:
        return {"name": self.name, "task": self.task, "input_type": self.input_type,
                "mutant": self.mutant, "model": self.model, "testset": self.testset,
                "accuracy": self.truth, "n": self.n, "features": sorted(self.features)}


def save_subjects(path: str | Path, subjects: list[Subject]) -> None:
    """One npz with ``{i}/scores``, ``{i}/conf``, ``{i}/feat_{F}``; metadata in ``meta_json``."""
    arrays: dict[str, np.ndarray] = {}
    for i, s in enumerate(subjects):
        arrays[f"s{i}_scores"] = np.asarray(s.scores, np.float64)
        if s.confidence is not None:
            arrays[f"s{i}_conf"] = np.asarray(s.confidence, np.float32)
        if s.scores_top5 is not None:
            arrays[f"s{i}_top5"] = np.asarray(s.scores_top5, np.float64)
        for k, v in s.features.items():
            arrays[f"s{i}_feat_{k}"] = np.asarray(v, np.float32).reshape(len(v), -1)
    arrays["meta_json"] = np.frombuffer(
        json.dumps([s.meta() for s in subjects]).encode(), dtype=np.uint8
    )
    save_npz(path, **arrays)


def load_subjects(path: str | Path) -> list[Subject]:
    z = load_npz(path)
    metas = json.loads(z["meta_json"].tobytes().decode())
    out = []
    for i, m in enumerate(metas):
        feats = {k: z[f"s{i}_feat_{k}"] for k in m["features"]}
        out.append(Subject(
            name=m["name"], task=m["task"], input_type=m["input_type"], mutant=m["mutant"],
            model=m["model"], testset=m["testset"], scores=z[f"s{i}_scores"], features=feats,
            confidence=z.get(f"s{i}_conf"), scores_top5=z.get(f"s{i}_top5"),
        ))
    return out


def classification_subject(name: str, model: str, testset: str, input_type: str, mutant: bool,
                           x: np.ndarray, y: np.ndarray, logits: np.ndarray,
                           feat_first: np.ndarray, feat_penultimate: np.ndarray,
                           preprocessing: str = "scale01") -> Subject:
    """Features ORI (model input after its preprocessing, flattened), FL, LHL, CON (softmax)
    from one inference artefact (docs/pace.md, reading R1); item scores = correct, plus top-5
    correct for Table 9 (reading R8)."""
    # deferred: torch (through the zoo's preprocessing); the experiment and report jobs, which
    # import this module, never load it
    from labelfree.zoo.preprocess import preprocess

    ori = preprocess(x, preprocessing).reshape(len(x), -1).numpy()
    prob = softmax(np.asarray(logits, dtype=np.float64), axis=1, dtype=np.float64)
    return Subject(
        name=name, task="cls", input_type=input_type, mutant=mutant, model=model,
        testset=testset, scores=(prob.argmax(1) == y).astype(np.float64),
        features={"ORI": ori, "FL": feat_first, "LHL": feat_penultimate, "CON": prob},
        confidence=prob.max(axis=1),
        scores_top5=item_scores_classification(logits, y, top=min(5, logits.shape[1])),
    )


def regression_subjects(x_train: np.ndarray, x_test: np.ndarray, rng: np.random.Generator,
                        max_angle_deg: float = 30.0, train_copies: int = 5,
                        hidden: tuple[int, ...] = (64, 32), seed: int = 0,
                        patch: dict | None = None, light: dict | None = None) -> tuple[list[Subject], dict]:
    """Rotation-angle subjects: clean rotated test pool (original), patched and brightened
    rotated pools (mutated). Accuracy = 1 - MSE in radians (docs/pace.md, readings R8, R16)."""
    lim = np.deg2rad(max_angle_deg)
    t = time.perf_counter()
    xt = np.concatenate([x_train] * train_copies)
    at = rng.uniform(-lim, lim, size=len(xt))
    reg = RotationRegressor(hidden, seed).fit(rotate_images(xt, at), at)
    train_s = time.perf_counter() - t
    a_test = rng.uniform(-lim, lim, size=len(x_test))
    rot = rotate_images(x_test, a_test)
    pools = {
        "rot": ("original", rot),
        "rot_patch": ("mutated", patch_images(rot, rng, **(patch or {}))),
        "rot_light": ("mutated", light_images(rot, rng, **(light or {}))),
    }
    subjects = []
    info = {"train_seconds": train_s, "train_images": len(xt)}
    for name, (itype, xp) in pools.items():
        pred = reg.predict(xp)
        scores = 1.0 - (pred - a_test) ** 2
        fl, *_, lhl = reg.hidden(xp)
        subjects.append(Subject(
            name=f"reg@{name}", task="reg", input_type=itype, mutant=False, model="mlp_regressor",
            testset=name, scores=scores,
            features={"ORI": RotationRegressor.inputs(xp), "FL": fl, "LHL": lhl},
        ))
        info[f"mse_{name}"] = float(np.mean((pred - a_test) ** 2))
    return subjects, info


def build_subjects(planned: Sequence[Mapping[str, Any]], infer: Sequence[str],
                   testsets: Sequence[str], train: str, pool: str, regression: Mapping[str, Any],
                   mutation: Mapping[str, Any], seed: int) -> list[Subject]:
    """Every subject of the study: one classification subject per entry of ``planned``
    (``labelfree.pace.plan``; its inference file and test set at the same position of
    ``infer`` and ``testsets``), then the regression subjects when ``regression.enabled``
    (trained on the split ``train``, rotated copies of the pool ``pool``)."""
    subjects = []
    for p, path, tset in zip(planned, infer, testsets, strict=True):
        ts = read_image_set(tset)
        t = p["testset"]  # one member of the inference file of the set's group
        subjects.append(classification_subject(
            p["name"], p["model"], t, p["input_type"], p["mutant"],
            ts.x, ts.y, read_logits(path, t), read_features(path, "first", t),
            read_features(path, "penultimate", t), p["preprocessing"],
        ))
        log.info("%s: N=%d accuracy %.4f", p["name"], subjects[-1].n, subjects[-1].truth)
    if regression["enabled"]:
        m = mutation
        subs, info = regression_subjects(
            read_image_set(train).x, read_image_set(pool).x, seeded_rng(seed, "pace", "regression"),
            regression["max_angle_deg"], regression["train_copies"], tuple(regression["hidden"]),
            seed, patch={"size": m["patch_size"], "count": tuple(m["patch_count"])},
            light={"offset": tuple(m["light_offset"]), "contrast": tuple(m["light_contrast"])},
        )
        log.info("regression subjects: %s", info)
        subjects += subs
    return subjects


def write_subjects(subjects: list[Subject], npz: str | Path, csv: str | Path) -> None:
    """The subjects' arrays (``save_subjects``) and Table 1 (csv + md beside it)."""
    save_subjects(npz, subjects)
    save_table(pd.DataFrame([s.meta() for s in subjects]).drop(columns="features"),
               csv, title="PACE subjects (Table 1 analogue): task, input type, accuracy, pool size",
               float_format="%.4f")


# ------------------------------------------------------------------------------- input pools


def write_pools(kind: str, pool: str | Path, outputs: Mapping[str, str], seed: int,
                mutation: Mapping[str, Any] | None = None, model_dir: str | None = None,
                preprocessing: str = "scale01", attack: Mapping[str, Any] | None = None) -> None:
    """The study's input pools from the pool ``pool`` as test sets (docs/pace.md, reading R16).

    ``kind``: ``shifted`` (the pool and its four one-pixel shifts; output ``shifted``),
    ``mutated`` (``patch`` and ``light`` from ``mutation``) or ``generated`` (one adversarial-half
    pool per output among ``fgsm``, ``bim``, ``cw``, against the model in ``model_dir``).
    """
    base = read_image_set(pool)
    if kind == "shifted":
        x, y = shifted_pool(base.x, base.y)
        write_image_set(outputs["shifted"], x, y)
        log.info("shifted pool: %d images", len(x))
    elif kind == "mutated":
        m = mutation or {}
        xp = patch_images(base.x, seeded_rng(seed, "pace", "patch"), m["patch_size"],
                          tuple(m["patch_count"]))
        write_image_set(outputs["patch"], xp, base.y)
        xl = light_images(base.x, seeded_rng(seed, "pace", "light"), tuple(m["light_offset"]),
                          tuple(m["light_contrast"]))
        write_image_set(outputs["light"], xl, base.y)
        log.info("mutated pools: %d images each", len(base.x))
    elif kind == "generated":
        # deferred: torch; the experiment and report jobs, which import this module, never load it
        from labelfree.zoo.io import load_model

        model, _ = load_model(model_dir)
        a = attack or {}
        for method in [m for m in ("fgsm", "bim", "cw") if m in outputs]:
            x, y, adv = adversarial_pool(model, base.x, base.y,
                                         seeded_rng(seed, "pace", "attack", method), preprocessing,
                                         method, a["eps"], a["steps"], cw=a.get("cw"))
            write_image_set(outputs[method], x, y, adversarial=adv)
            log.info("%s pool: %d images, %d attacked", method, len(x), int(adv.sum()))
    else:
        raise ValueError(f"pace write_pools: unknown kind {kind!r}")


def write_train_set(split: str | Path, out: str | Path, subsample: int, seed: int) -> None:
    """The zoo's training split as test set ``pace_train`` (Table 12: CSS-COV's LSA needs the
    models' LHL activations on their training inputs, which inference then writes).
    ``subsample > 0`` keeps that many inputs, drawn without replacement (seeded), in their
    original order; 0 keeps the whole split."""
    base = read_image_set(split)
    keep = np.arange(len(base.x))
    if 0 < subsample < len(keep):
        keep = np.sort(seeded_rng(seed, "pace", "train_subsample").choice(
            len(keep), subsample, replace=False))
    write_image_set(out, base.x[keep], base.y[keep])
    log.info("training split %s as test set: %d of %d images", split, len(keep), len(base.x))


# ------------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class StudyParams:
    """The study's knobs (config ``pace:``; defaults: docs/pace.md, reading R18)."""

    budgets: tuple[int, ...] = tuple(range(50, 190, 10))
    reps: int = 50
    seed: int = 0
    feature: str = "LHL"
    pace: dict = field(default_factory=dict)  # PaceConfig fields; min_cluster_size may be "auto"
    mcs_fraction: float = 0.008  # min_cluster_size = max(5, round(fraction * N)) when "auto"
    features: tuple[str, ...] = FEATURES
    alphas: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9)
    dims: tuple[int, ...] = (2, 4, 8, 16)
    reducers: tuple[str, ...] = ("fastica", "pca", "nmf", "fa")
    ces: dict = field(default_factory=lambda: dict(CES_DEFAULTS))
    css: dict = field(default_factory=lambda: dict(CSS_DEFAULTS))
    srs_allow_repeats: bool = False
    # subject name -> "auto" | "none" | {"reducer": ..., "dim": ...} (reading R3)
    reduce_overrides: dict = field(default_factory=dict)

    @classmethod
    def from_config(cls, cfg: dict[str, Any], seed: int = 0) -> StudyParams:
        b = cfg.get("budgets", {"start": 50, "stop": 180, "step": 10})
        budgets = tuple(b) if isinstance(b, list) else tuple(range(b["start"], b["stop"] + 1, b["step"]))
        return cls(
            budgets=budgets, reps=int(cfg.get("reps", 50)), seed=seed,
            feature=cfg.get("feature", "LHL"), pace=dict(cfg.get("method", {})),
            mcs_fraction=float(cfg.get("mcs_fraction", 0.008)),
            features=tuple(cfg.get("features", FEATURES)),
            alphas=tuple(cfg.get("alphas", cls.alphas)), dims=tuple(cfg.get("dims", cls.dims)),
            reducers=tuple(cfg.get("reducers", cls.reducers)),
            ces={**CES_DEFAULTS, **cfg.get("ces", {})},
            css={k: (tuple(v) if isinstance(v, list) else v)
                 for k, v in {**CSS_DEFAULTS, **cfg.get("css", {})}.items()},
            srs_allow_repeats=bool(cfg.get("srs_allow_repeats", False)),
            reduce_overrides=dict(cfg.get("reduce_overrides") or {}),
        )

    def pace_config(self, n_items: int, subject: str | None = None, **over: Any) -> PaceConfig:
        """PaceConfig for a pool of ``n_items``; ``subject``'s entry in ``reduce_overrides``
        (``auto | none | {reducer, dim}``, docs/pace.md reading R3) replaces the reduction
        settings."""
        d = dict(self.pace)
        if d.get("min_cluster_size", "auto") == "auto":
            d["min_cluster_size"] = max(5, round(self.mcs_fraction * n_items))
        d["n_max"] = max(self.budgets)
        d.setdefault("seed", self.seed)
        ov = self.reduce_overrides.get(subject) if subject is not None else None
        if isinstance(ov, str):
            d["reduce"] = ov
        elif isinstance(ov, dict):
            d.update(reduce="always", reducer=ov.get("reducer", "fastica"), dim=int(ov.get("dim", 2)))
        d.update(over)
        return PaceConfig.from_dict(d)


# ------------------------------------------------------------------------------- rows


def _ces(subject: Subject, scores: np.ndarray, params: StudyParams,
         rng: np.random.Generator) -> np.ndarray:
    """CES on the subject's LHL with the configured schedule and bin reading (reading R10)."""
    c = params.ces
    bins = bl.ces_bins(subject.features["LHL"], int(c["edges"]), str(c["reading"]))
    return bl.ces(scores, bins, list(params.budgets), params.reps, rng, c["init"], c["step"],
                  c["candidates"], allow_repeats=bool(c["allow_repeats"]), n_edges=int(c["edges"]))


def estimate_rows(subject: Subject, approach: str, est: np.ndarray, params: StudyParams,
                  cfg: PaceConfig | None, feature: str, seconds: float, sizes=None,
                  reduced: bool | None = None, **extra: Any) -> list[dict]:
    """One row per repetition x budget of ``est`` (reps x budgets), each with the full setting
    that produced it (approach, feature, PACE's parameters, seed, realised size, estimate,
    truth, error in points, seconds)."""
    est = np.atleast_2d(est)
    out = []
    for r in range(est.shape[0]):
        for j, b in enumerate(params.budgets):
            out.append({
                "subject": subject.name, "approach": approach, "feature": feature,
                "alpha": cfg.alpha if cfg else np.nan,
                "reducer": (cfg.reducer if cfg else ""), "reduce": (cfg.reduce if cfg else ""),
                "dim": cfg.dim if cfg else np.nan, "reduced": reduced,
                "min_cluster_size": cfg.min_cluster_size if cfg else np.nan,
                "min_samples": cfg.min_samples if cfg else np.nan,
                "rounding": cfg.rounding if cfg else "", "art_mode": cfg.art_mode if cfg else "",
                "seed": params.seed, "rep": r, "budget": b,
                "size": int(sizes[j]) if sizes is not None else b,
                "estimate": float(est[r, j]), "truth": subject.truth,
                "error": 100.0 * abs(float(est[r, j]) - subject.truth),
                "seconds": seconds, **extra,
            })
    return out


class FitCache:
    """PACE fits of a study run, one per (subject, feature, configuration).

    :func:`fit` is a deterministic function of the features and the configuration, and several
    experiments fit the same one (the base configuration on the LHL in main, features, alpha and
    variants; FastICA to two dimensions in dims and reducers): :func:`run_experiment` given one
    cache fits each once. A fit's seconds are those measured when it ran.
    """

    def __init__(self) -> None:
        self._fits: dict[tuple[str, str, PaceConfig], tuple[PaceFit, float]] = {}

    def fit(self, subject: Subject, feature: str, cfg: PaceConfig) -> tuple[PaceFit, float]:
        """(the fit of ``subject``'s ``feature`` under ``cfg``, its seconds)."""
        key = (subject.name, feature, cfg)
        if key not in self._fits:
            t = time.perf_counter()
            f = fit(subject.features[feature], cfg)
            self._fits[key] = (f, time.perf_counter() - t)
        return self._fits[key]


def _pace_rows(subject, params, feature, label, cfg, alphas=None, fits=None, **extra):
    f, t_fit = (fits or FitCache()).fit(subject, feature, cfg)
    rows = []
    for a in alphas or [cfg.alpha]:
        est, sizes = bl.pace_estimates(f, subject.scores, list(params.budgets), alpha=a)
        rows += estimate_rows(subject, label, est, params, replace(cfg, alpha=a), feature, t_fit,
                              sizes, f.reduced, **extra)
    timing = {"subject": subject.name, "approach": label, "feature": feature, **f.timings}
    return rows, f, timing


def _rng(params: StudyParams, subject: Subject) -> Callable[[str], np.random.Generator]:
    """The seed stream of each approach on a subject (independent of the others)."""
    return lambda approach: seeded_rng(params.seed, "pace", subject.name, approach)


def _top5_rows(subject: Subject, params: StudyParams, f, base: PaceConfig) -> list[dict]:
    """Table 9: the same selections scored by top-5 correctness (docs/pace.md, reading R8).
    PACE's selection does not depend on labels; SRS / CES / CSS reuse their top-1 seeds, so they
    draw the same samples. Rows carry ``experiment='top5'``."""
    budgets = list(params.budgets)
    sc = subject.scores_top5
    top = replace(subject, scores=sc)
    rng = _rng(params, subject)
    est, sizes = bl.pace_estimates(f, sc, budgets)
    rows = estimate_rows(top, "PACE", est, params, base, params.feature,
                         f.timings.get("total", np.nan), sizes, f.reduced)
    rows += estimate_rows(top, "SRS", bl.srs(sc, budgets, params.reps, rng("SRS"),
                                             params.srs_allow_repeats, params.ces["init"],
                                             params.ces["step"]), params, None, "", np.nan)
    rows += estimate_rows(top, "CES", _ces(subject, sc, params, rng("CES")), params, None, "LHL",
                          np.nan)
    if subject.confidence is not None:
        rows += estimate_rows(top, "CSS", bl.css(sc, subject.confidence, budgets, params.reps,
                                                 rng("CSS"), tuple(params.css["cuts"]),
                                                 tuple(params.css["alloc"]), params.ces["init"],
                                                 params.ces["step"], params.css["weights"]),
                              params, None, "CON", np.nan)
    for r in rows:
        r["experiment"] = "top5"
    return rows


# ------------------------------------------------------------------------------- experiments

Result = tuple[list[dict], list[dict]]  # rows, timing records


def _main(subject: Subject, params: StudyParams, base: PaceConfig,
          fits: FitCache | None = None) -> Result:
    """Tables 2-9 and 11: PACE, SRS, CES and CSS (classifiers) on every budget."""
    budgets = list(params.budgets)
    feat = params.feature
    rng = _rng(params, subject)
    rows, f, tm = _pace_rows(subject, params, feat, "PACE", base, fits=fits)
    # paper section 5.1 (Table 8 and the ImageNet timing): the same fit with orders cached for
    # n = 1000 (or N), docs/pace.md reading R15
    big = fit(subject.features[feat], replace(base, n_max=min(subject.n, 1000)))
    tm["total_nmax_1000"] = big.timings["total"]
    tm["select_max_budget"] = f.select(max(budgets)).timings["allocate"]
    timings = [tm]
    t = time.perf_counter()
    est = bl.srs(subject.scores, budgets, params.reps, rng("SRS"), params.srs_allow_repeats,
                 params.ces["init"], params.ces["step"])
    rows += estimate_rows(subject, "SRS", est, params, None, "", (time.perf_counter() - t) / params.reps)
    timings.append({"subject": subject.name, "approach": "SRS", "feature": "",
                    "total": (time.perf_counter() - t) / params.reps})
    t = time.perf_counter()
    est = _ces(subject, subject.scores, params, rng("CES"))
    dt = (time.perf_counter() - t) / params.reps
    rows += estimate_rows(subject, "CES", est, params, None, "LHL", dt)
    timings.append({"subject": subject.name, "approach": "CES", "feature": "LHL", "total": dt})
    if subject.task == "cls" and subject.confidence is not None:
        t = time.perf_counter()
        est = bl.css(subject.scores, subject.confidence, budgets, params.reps, rng("CSS"),
                     tuple(params.css["cuts"]), tuple(params.css["alloc"]),
                     params.ces["init"], params.ces["step"], params.css["weights"])
        dt = (time.perf_counter() - t) / params.reps
        rows += estimate_rows(subject, "CSS", est, params, None, "CON", dt)
        timings.append({"subject": subject.name, "approach": "CSS", "feature": "CON", "total": dt})
    if subject.scores_top5 is not None:
        rows += _top5_rows(subject, params, f, base)
    return rows, timings


def _features(subject: Subject, params: StudyParams, base: PaceConfig,
              fits: FitCache | None = None) -> Result:
    """Fig. 4: PACE on each feature the subject has (CON does not exist for regression)."""
    rows: list[dict] = []
    timings: list[dict] = []
    for fe in params.features:
        if fe not in subject.features:
            continue
        r, _, tm = _pace_rows(subject, params, fe, f"PACE-{fe}", base, fits=fits)
        rows += r
        timings.append(tm)
    return rows, timings


def _alpha(subject: Subject, params: StudyParams, base: PaceConfig,
           fits: FitCache | None = None) -> Result:
    """Fig. 5: one fit, every threshold alpha."""
    r, _, _ = _pace_rows(subject, params, params.feature, "PACE", base, alphas=list(params.alphas),
                         fits=fits)
    for row in r:
        row["approach"] = f"alpha={row['alpha']:g}"
    return r, []


def _dims(subject: Subject, params: StudyParams, base: PaceConfig,
          fits: FitCache | None = None) -> Result:
    """Fig. 6: FastICA to each dimension, and no reduction."""
    rows: list[dict] = []
    for d in params.dims:
        cfg = replace(base, reduce="always", reducer="fastica", dim=d)
        rows += _pace_rows(subject, params, params.feature, f"FastICA-{d}", cfg, fits=fits)[0]
    rows += _pace_rows(subject, params, params.feature, "original", replace(base, reduce="none"),
                       fits=fits)[0]
    return rows, []


def _reducers(subject: Subject, params: StudyParams, base: PaceConfig,
              fits: FitCache | None = None) -> Result:
    """Fig. 7: each reduction algorithm to two dimensions."""
    names = {"fastica": "FastICA", "pca": "PCA", "nmf": "NMF", "fa": "FA"}
    rows: list[dict] = []
    for red in params.reducers:
        cfg = replace(base, reduce="always", reducer=red, dim=2)
        rows += _pace_rows(subject, params, params.feature, names[red], cfg, fits=fits)[0]
    return rows, []


def _variants(subject: Subject, params: StudyParams, base: PaceConfig,
              fits: FitCache | None = None) -> Result:
    """Fig. 8: PACE and its four variants (docs/pace.md, reading R13)."""
    budgets = list(params.budgets)
    rng = _rng(params, subject)
    rows, f, _ = _pace_rows(subject, params, params.feature, "PACE", base, fits=fits)
    sc = subject.scores
    variants: tuple[tuple[str, Callable[[], np.ndarray]], ...] = (
        ("PACE^g_rand", lambda: bl.pace_group_random(f, sc, budgets, params.reps, rng("g_rand"))),
        ("PACE^m_rand", lambda: bl.pace_minority_random(f, sc, budgets, params.reps, rng("m_rand"))),
        ("PACE_mmd", lambda: bl.pace_mmd(f.processed, sc, budgets, base.gamma)),
        ("PACE_art", lambda: bl.pace_art(f.processed, sc, budgets, params.reps, rng("art"))),
    )
    for name, fn in variants:
        t = time.perf_counter()
        est = fn()
        rows += estimate_rows(subject, name, est, params, base, params.feature,
                              time.perf_counter() - t, reduced=f.reduced)
    return rows, []


#: experiment -> its rows on one subject (plan.EXPERIMENTS, in order)
KINDS: dict[str, Callable[[Subject, StudyParams, PaceConfig, FitCache | None], Result]] = {
    "main": _main, "features": _features, "alpha": _alpha, "dims": _dims,
    "reducers": _reducers, "variants": _variants,
}


def run_subject(kind: str, subject: Subject, params: StudyParams,
                fits: FitCache | None = None) -> Result:
    """All rows of one experiment ``kind`` (plan.EXPERIMENTS) on one subject, plus timing
    records; ``fits``: PACE fits shared with the run's other experiments (:class:`FitCache`)."""
    if kind not in EXPERIMENTS:
        raise ValueError(f"unknown PACE experiment {kind!r}; known: {EXPERIMENTS}")
    return KINDS[kind](subject, params, params.pace_config(subject.n, subject.name), fits)


def run_experiment(kind: str, subjects: list[Subject], params: StudyParams,
                   fits: FitCache | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run ``kind`` on every subject; returns (rows, timings) data frames. ``fits``: a
    :class:`FitCache` shared by the experiments of one run (the same rows; each fit once)."""
    # deferred: imported here, before any timer starts, so that their import time (seconds) is
    # not counted as selection time in Table 8; process.py defers them (see there)
    import hdbscan  # noqa: F401
    import sklearn.decomposition  # noqa: F401

    rows: list[dict] = []
    timings: list[dict] = []
    for s in progress(subjects, desc=f"pace {kind}", unit="subject"):
        r, tm = run_subject(kind, s, params, fits)
        rows += r
        timings += tm
    df = pd.DataFrame(rows)
    exp = df.pop("experiment").fillna(kind) if "experiment" in df else kind
    df.insert(0, "experiment", exp)
    return df, pd.DataFrame(timings)


def errors(rows: pd.DataFrame) -> pd.DataFrame:
    """The paper's "MSE" (docs/pace.md, reading R14) per (experiment, subject, approach,
    budget) over the repetitions."""
    g = rows.groupby(["experiment", "subject", "approach", "budget"], sort=False)
    out = g.apply(
        lambda d: pd.Series({
            "mse": float(mse_percent(d["estimate"].to_numpy()[:, None], d["truth"].iloc[0])[0]),
            "reps": len(d), "size": float(d["size"].mean()), "truth": d["truth"].iloc[0],
        }), include_groups=False,
    )
    return out.reset_index()


def save_run(rows: pd.DataFrame, timings: pd.DataFrame, rows_csv: str | Path,
             timings_json: str | Path) -> None:
    with atomic_path(rows_csv) as tmp:
        rows.to_csv(tmp, index=False, float_format="%.6g")
    save_json(timings.to_dict("records"), timings_json)


# ------------------------------------------------------------------------------- Table 12


def css_cov_rows(subject: Subject, surprise: np.ndarray, params: StudyParams) -> list[dict]:
    """CSS-COV rows of one subject in the study's row format (``experiment='css_cov'``), with
    the schedule and ``css.*`` keys CSS uses and its own seed stream."""
    t = time.perf_counter()
    est = css_cov_estimates(subject.scores, surprise, list(params.budgets), params.reps,
                            seeded_rng(params.seed, "pace", subject.name, "CSS-COV"),
                            tuple(params.css["cuts"]), tuple(params.css["alloc"]),
                            params.ces["init"], params.ces["step"], params.css["weights"])
    rows = estimate_rows(subject, "CSS-COV", est, params, None, "LHL",
                         (time.perf_counter() - t) / params.reps)
    for r in rows:
        r["experiment"] = "css_cov"
    return rows


def css_cov(subjects: list[Subject], names: Sequence[str], train: Sequence[str],
            var_threshold: float, params: StudyParams) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 12's CSS-COV rows and per-subject strata diagnostics for the subjects ``names``:
    each one's LSA from its model's LHL activations on the training split (test set
    ``pace_train`` of the inference file at the same position of ``train``)."""
    by_name = {s.name: s for s in subjects}
    rows, diag = [], []
    for name, path in zip(names, train, strict=True):
        s = by_name[name]
        logits = read_logits(path, "pace_train")
        model = fit_lsa(read_features(path, "penultimate", "pace_train"), logits.argmax(axis=1),
                        logits.shape[1], var_threshold)
        surprise = lsa(model, s.features["LHL"], s.features["CON"].argmax(axis=1))
        for c, why in model.missing.items():
            log.info("%s: class %d has no KDE (LSA = inf for its inputs): %s", name, c, why)
        rows += css_cov_rows(s, surprise, params)
        diag.append(strata_summary(name, s.scores, surprise, model, tuple(params.css["cuts"])))
        log.info("%s: %s", name, diag[-1])
    return pd.DataFrame(rows), pd.DataFrame(diag)
