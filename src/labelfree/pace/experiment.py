"""Running the PACE study on subjects: every approach x budget x repetition (PACE spec 4-6).

A *subject* is one (model, test pool) pair with its item scores (``correct_i`` or
``1 - sq_err_i``), its features (ORI, FL, LHL, CON) and, for classifiers, its confidences.
``run_experiment`` produces one row per approach x repetition x budget with every field of
check C15; ``errors`` reduces them to the paper's "MSE" (spec 4.1).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labelfree.seeds import rng as seeded_rng
from labelfree.store import load_npz, save_json, save_npz

from . import baselines as bl
from .core import PaceConfig, fit
from .metrics import mse_percent

log = logging.getLogger(__name__)

FEATURES = ("ORI", "FL", "LHL", "CON")
EXPERIMENTS = ("main", "features", "alpha", "dims", "reducers", "variants")
INPUT_TYPES = ("original", "mutated", "generated")
CES_DEFAULTS = {"init": 30, "step": 5, "candidates": 30, "allow_repeats": False}
CSS_DEFAULTS = {"cuts": (0.8, 0.9), "alloc": (0.2, 0.4, 0.4), "weights": None}


@dataclass
class Subject:
    """One PACE subject (spec 5.1 analogue)."""

    name: str
    task: str  # "cls" | "reg"
    input_type: str  # original | mutated | generated
    mutant: bool  # label-mutated model (belongs to no input-type group, spec 4.3)
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


# ------------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class StudyParams:
    """The study's knobs (config ``pace:``; defaults = spec 2.11, 3, 4)."""

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
    # subject name -> "auto" | "none" | {"reducer": ..., "dim": ...} (spec 2.4 per-subject override)
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
        (spec 2.4: ``auto | none | {reducer, dim}``) replaces the reduction settings."""
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


# ------------------------------------------------------------------------------- running


def _rows(subject: Subject, approach: str, est: np.ndarray, params: StudyParams,
          cfg: PaceConfig | None, feature: str, seconds: float, sizes=None,
          reduced: bool | None = None, **extra: Any) -> list[dict]:
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


def _pace_rows(subject, params, feature, label, cfg, alphas=None, **extra):
    x = subject.features[feature]
    t = time.perf_counter()
    f = fit(x, cfg)
    t_fit = time.perf_counter() - t
    rows = []
    for a in alphas or [cfg.alpha]:
        est, sizes = bl.pace_estimates(f, subject.scores, list(params.budgets), alpha=a)
        rows += _rows(subject, label, est, params, replace(cfg, alpha=a), feature, t_fit,
                      sizes, f.reduced, **extra)
    timing = {"subject": subject.name, "approach": label, "feature": feature, **f.timings}
    return rows, f, timing


def _top5_rows(subject: Subject, params: StudyParams, f, base: PaceConfig) -> list[dict]:
    """Table 9: the same selections scored by top-5 correctness (spec 2.10). PACE's selection
    does not depend on labels; SRS / CES / CSS reuse their top-1 seeds, so they draw the same
    samples. Rows carry ``experiment='top5'``."""
    budgets = list(params.budgets)
    sc = subject.scores_top5
    top = replace(subject, scores=sc)

    def rng(approach: str) -> np.random.Generator:
        return seeded_rng(params.seed, "pace", subject.name, approach)

    est, sizes = bl.pace_estimates(f, sc, budgets)
    rows = _rows(top, "PACE", est, params, base, params.feature, f.timings.get("total", np.nan),
                 sizes, f.reduced)
    rows += _rows(top, "SRS", bl.srs(sc, budgets, params.reps, rng("SRS"), params.srs_allow_repeats,
                                     params.ces["init"], params.ces["step"]), params, None, "", np.nan)
    rows += _rows(top, "CES", bl.ces(sc, bl.ces_bins(subject.features["LHL"]), budgets, params.reps,
                                     rng("CES"), params.ces["init"], params.ces["step"],
                                     params.ces["candidates"], allow_repeats=bool(params.ces["allow_repeats"])),
                  params, None, "LHL", np.nan)
    if subject.confidence is not None:
        rows += _rows(top, "CSS", bl.css(sc, subject.confidence, budgets, params.reps, rng("CSS"),
                                         tuple(params.css["cuts"]), tuple(params.css["alloc"]),
                                         params.ces["init"], params.ces["step"], params.css["weights"]),
                      params, None, "CON", np.nan)
    for r in rows:
        r["experiment"] = "top5"
    return rows


def run_subject(kind: str, subject: Subject, params: StudyParams) -> tuple[list[dict], list[dict]]:
    """All rows of one experiment ``kind`` (EXPERIMENTS) on one subject, plus timing records."""
    if kind not in EXPERIMENTS:
        raise ValueError(f"unknown PACE experiment {kind!r}; known: {EXPERIMENTS}")
    budgets = list(params.budgets)
    feat = params.feature
    base = params.pace_config(subject.n, subject.name)
    rows: list[dict] = []
    timings: list[dict] = []

    def rng(approach: str) -> np.random.Generator:
        return seeded_rng(params.seed, "pace", subject.name, approach)

    if kind == "main":
        r, f, tm = _pace_rows(subject, params, feat, "PACE", base)
        rows += r
        # C14 / conclusion 7: the same fit with orders cached for n = 1000 (or N)
        big = fit(subject.features[feat], replace(base, n_max=min(subject.n, 1000)))
        tm["total_nmax_1000"] = big.timings["total"]
        tm["select_max_budget"] = f.select(max(budgets)).timings["allocate"]
        timings.append(tm)
        t = time.perf_counter()
        est = bl.srs(subject.scores, budgets, params.reps, rng("SRS"), params.srs_allow_repeats,
                     params.ces["init"], params.ces["step"])
        rows += _rows(subject, "SRS", est, params, None, "", (time.perf_counter() - t) / params.reps)
        timings.append({"subject": subject.name, "approach": "SRS", "feature": "",
                        "total": (time.perf_counter() - t) / params.reps})
        t = time.perf_counter()
        bins = bl.ces_bins(subject.features["LHL"])
        est = bl.ces(subject.scores, bins, budgets, params.reps, rng("CES"),
                     params.ces["init"], params.ces["step"], params.ces["candidates"],
                     allow_repeats=bool(params.ces["allow_repeats"]))
        dt = (time.perf_counter() - t) / params.reps
        rows += _rows(subject, "CES", est, params, None, "LHL", dt)
        timings.append({"subject": subject.name, "approach": "CES", "feature": "LHL", "total": dt})
        if subject.task == "cls" and subject.confidence is not None:
            t = time.perf_counter()
            est = bl.css(subject.scores, subject.confidence, budgets, params.reps, rng("CSS"),
                         tuple(params.css["cuts"]), tuple(params.css["alloc"]),
                         params.ces["init"], params.ces["step"], params.css["weights"])
            dt = (time.perf_counter() - t) / params.reps
            rows += _rows(subject, "CSS", est, params, None, "CON", dt)
            timings.append({"subject": subject.name, "approach": "CSS", "feature": "CON", "total": dt})
        if subject.scores_top5 is not None:
            rows += _top5_rows(subject, params, f, base)
    elif kind == "features":
        for fe in params.features:
            if fe not in subject.features:
                continue  # CON does not exist for regression subjects
            r, _, tm = _pace_rows(subject, params, fe, f"PACE-{fe}", base)
            rows += r
            timings.append(tm)
    elif kind == "alpha":
        r, _, tm = _pace_rows(subject, params, feat, "PACE", base, alphas=list(params.alphas))
        for row in r:
            row["approach"] = f"alpha={row['alpha']:g}"
        rows += r
    elif kind == "dims":
        for d in params.dims:
            cfg = replace(base, reduce="always", reducer="fastica", dim=d)
            rows += _pace_rows(subject, params, feat, f"FastICA-{d}", cfg)[0]
        rows += _pace_rows(subject, params, feat, "original", replace(base, reduce="none"))[0]
    elif kind == "reducers":
        for red in params.reducers:
            cfg = replace(base, reduce="always", reducer=red, dim=2)
            rows += _pace_rows(subject, params, feat, {"fastica": "FastICA", "pca": "PCA",
                                                       "nmf": "NMF", "fa": "FA"}[red], cfg)[0]
    elif kind == "variants":
        r, f, _ = _pace_rows(subject, params, feat, "PACE", base)
        rows += r
        sc = subject.scores
        for name, fn in (
            ("PACE^g_rand", lambda: bl.pace_group_random(f, sc, budgets, params.reps, rng("g_rand"))),
            ("PACE^m_rand", lambda: bl.pace_minority_random(f, sc, budgets, params.reps, rng("m_rand"))),
            ("PACE_mmd", lambda: bl.pace_mmd(f.processed, sc, budgets, base.gamma)),
            ("PACE_art", lambda: bl.pace_art(f.processed, sc, budgets, params.reps, rng("art"))),
        ):
            t = time.perf_counter()
            est = fn()
            rows += _rows(subject, name, est, params, base, feat, time.perf_counter() - t,
                          reduced=f.reduced)
    return rows, timings


def run_experiment(kind: str, subjects: list[Subject], params: StudyParams) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run ``kind`` on every subject; returns (rows, timings) data frames."""
    import hdbscan  # noqa: F401  (warm imports: their cost is not selection time, Table 8)
    import sklearn.decomposition  # noqa: F401

    from labelfree.joblog import progress

    rows: list[dict] = []
    timings: list[dict] = []
    for s in progress(subjects, desc=f"pace {kind}", unit="subject"):
        r, tm = run_subject(kind, s, params)
        rows += r
        timings += tm
    df = pd.DataFrame(rows)
    exp = df.pop("experiment").fillna(kind) if "experiment" in df else kind
    df.insert(0, "experiment", exp)
    return df, pd.DataFrame(timings)


def errors(rows: pd.DataFrame) -> pd.DataFrame:
    """The paper's "MSE" (spec 4.1) per (experiment, subject, approach, budget) over reps."""
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
    from labelfree.store import atomic_path

    with atomic_path(rows_csv) as tmp:
        rows.to_csv(tmp, index=False, float_format="%.6g")
    save_json(timings.to_dict("records"), timings_json)
