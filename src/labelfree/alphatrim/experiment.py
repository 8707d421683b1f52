"""Experiment blocks of the alpha-trimming study and their tables (spec sections 3, 4 and 6).

An *experiment* is one task (data + MLP recipe) with seed-regime zoos:

- E2 "sources" (spec 3.4): zoos S_init / S_batch / S_all; the first ``reference_fraction`` of
  each zoo is the reference, the rest the candidates; alpha-hat, accuracy, ECE, churn w.r.t. the
  candidate ensemble, pairwise churn (Tables II-IV, Figs. 9-12).
- E1 "ensembles" (spec 3.4): a separate S_all zoo split into reference and ensemble pool;
  ensembles of growing size drawn from the pool (Table I, Figs. 4-8).
- E3 "transfer" (spec 3.3): heads on frozen backbone features, seeds vary like S_all; ensembles
  drawn from the candidates (Table V, Figs. 13-16).

Everything here is a pure function of arrays and config values; seeds come from
``labelfree.seeds.derive_seed(seed, experiment, ...)`` so reruns give identical tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from labelfree.alphatrim.bootstrap import alpha_hat
from labelfree.alphatrim.kernel import delta_a, ecdf_distance
from labelfree.alphatrim.layout import ENSEMBLE_ZOO, REGIMES  # noqa: F401  (re-exported)
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
from labelfree.seeds import derive_seed, rng

# ---------------------------------------------------------------------------------------------
# seeds of the regimes (spec 3.1) and the synthetic tier-2 task (spec 6)
# ---------------------------------------------------------------------------------------------


def regime_seeds(regime: str, k: int, seed: int, experiment: str) -> tuple[list[int], list[int]]:
    """(init seeds, batch seeds) of the k models of a regime zoo (spec 3.1).

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
    """Tier-2 task (spec 6): sklearn make_classification, standardised, first n_train = train.

    Tabular float features are not images, so this task lives in the study, not in the data
    layer (whose contract is uint8 NHWC image sets). Returns x_train, y_train, x_test, y_test.
    """
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
    paper's CIFAR-10 task, spec 3.2); otherwise the labels must already be {0, 1}.
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
    """The analysis keys of the config section (spec 5; schema config/schema/alphatrim.yaml)."""

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
    """Number of reference models: the first ``fraction`` of the zoo (spec 2.10, paper order)."""
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
    """Per-candidate statistics of one zoo (spec 1 "per_model.csv") and the churn matrix."""

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
    ens = cand.mean(axis=0)  # the candidate ensemble (spec 2.8)
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
    """One row per sampled ensemble (spec 1 "ensembles.csv", 2.7).

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
    """delta_a line of Fig. 5 (spec 2.7): N = N_test/2 (``half``, default) or N_test (``full``)."""
    return delta_a(n_test // 2 if s.fig5_delta_n == "half" else n_test, s.eps_a)


# ---------------------------------------------------------------------------------------------
# tables (spec 4)
# ---------------------------------------------------------------------------------------------


def _pm(x: pd.Series, digits: int) -> str:
    return f"{x.mean():.{digits}f} ± {x.std(ddof=1) if len(x) > 1 else 0.0:.{digits}f}"


def _range(x: pd.Series | np.ndarray, digits: int) -> str:
    x = np.asarray(x, dtype=float)
    return f"[{x.min():.{digits}f}, {x.max():.{digits}f}]" if x.size else "(none)"


def table1(ens: pd.DataFrame, cut: float, delta: float) -> pd.DataFrame:
    """Table I: per ensemble size, share with alpha-hat <= cut, accuracy/churn/ECE mean ± std;
    plus mean alpha-hat, mean L_inf and the share below the classical delta_a line (Fig. 5)."""
    out = []
    for size, g in ens.groupby("M_ens", sort=True):
        out.append(
            {
                "M_ens": int(size),
                "n_ensembles": len(g),
                f"% alpha_hat <= {cut}": 100.0 * (g["alpha_hat"] <= cut).mean(),
                "accuracy mean ± std": _pm(g["accuracy"], 2),
                "churn w.r.t. ensemble mean ± std": _pm(g["churn_vs_full_ensemble"], 2),
                "ECE mean ± std": _pm(g["ece"], 4),
                "alpha_hat mean": g["alpha_hat"].mean(),
                "L_inf mean": g["linf_to_reference"].mean(),
                "% L_inf <= delta_a": 100.0 * (g["linf_to_reference"] <= delta).mean(),
            }
        )
    return pd.DataFrame(out)


def table2(per_model: pd.DataFrame, ens_acc: Mapping[str, float], cut: float) -> pd.DataFrame:
    """Table II per regime: accuracy mean ± std and range, candidate-ensemble accuracy, accuracy
    range of runs with alpha-hat <= cut; plus alpha-hat median/max, share <= cut, Pearson
    corr(accuracy, alpha-hat), mean plain-KS rejection rate (spec 6.1 columns)."""
    out = []
    for regime, g in per_model.groupby("regime", sort=False):
        low = g[g["alpha_hat"] <= cut]
        corr = (
            float(np.corrcoef(g["accuracy"], g["alpha_hat"])[0, 1])
            if g["alpha_hat"].std() > 0 and g["accuracy"].std() > 0
            else float("nan")
        )
        out.append(
            {
                "source": regime,
                "accuracy mean ± std": _pm(g["accuracy"], 3),
                "accuracy range": _range(g["accuracy"], 3),
                "ensemble accuracy": ens_acc[regime],
                f"accuracy range of runs with alpha_hat <= {cut}": _range(low["accuracy"], 3),
                "alpha_hat median": g["alpha_hat"].median(),
                "alpha_hat max": g["alpha_hat"].max(),
                f"share alpha_hat <= {cut}": (g["alpha_hat"] <= cut).mean(),
                "corr(accuracy, alpha_hat)": corr,
                "mean plain-KS rejection rate": g["ks_reject_rate_at_0"].mean(),
            }
        )
    return pd.DataFrame(out)


def pair_table(per_model: pd.DataFrame, churn: np.ndarray) -> pd.DataFrame:
    """All candidate pairs (i < j) of one zoo with their churn and both alpha-hats (Fig. 10)."""
    i, j = np.triu_indices(len(per_model), k=1)
    a = per_model["alpha_hat"].to_numpy()
    return pd.DataFrame({"i": i, "j": j, "churn": churn[i, j], "alpha_i": a[i], "alpha_j": a[j]})


def table3(pairs: Mapping[str, pd.DataFrame], cut: float) -> pd.DataFrame:
    """Table III: range of pairwise churn, and among pairs with both alpha-hats <= cut."""
    out = []
    for regime, p in pairs.items():
        low = p[(p["alpha_i"] <= cut) & (p["alpha_j"] <= cut)]
        out.append(
            {
                "source": regime,
                "range of pairwise churn": _range(p["churn"], 0),
                f"range among pairs with both alpha_hat <= {cut}": _range(low["churn"], 0),
                "n pairs": len(p),
                f"n pairs both <= {cut}": len(low),
                "strict sub-range": bool(
                    len(low) and (low["churn"].max() < p["churn"].max()
                                  or low["churn"].min() > p["churn"].min())
                ),
            }
        )
    return pd.DataFrame(out)


def table_top_band(per_model: pd.DataFrame, band: float) -> pd.DataFrame:
    """Tables IV / V: candidates within ``band`` accuracy points of the best, sorted by alpha-hat."""
    best = per_model["accuracy"].max()
    sel = per_model[per_model["accuracy"] >= best - band].sort_values(
        ["alpha_hat", "model"], kind="stable"
    )
    return pd.DataFrame(
        {
            "model": sel["model"].to_numpy(),
            "ECE": sel["ece"].to_numpy(),
            "churn w.r.t. ensemble": sel["churn_vs_ensemble"].to_numpy(),
            "accuracy": sel["accuracy"].to_numpy(),
            "average churn": sel["avg_pairwise_churn"].to_numpy(),
            "alpha_hat": sel["alpha_hat"].to_numpy(),
        }
    )


# ---------------------------------------------------------------------------------------------
# checks table (spec 6: conclusions that should remain visible at small scale)
# ---------------------------------------------------------------------------------------------


def checks_table(
    per_model: pd.DataFrame, ens: pd.DataFrame, cut: float, corr_max: float = 0.5
) -> pd.DataFrame:
    """Spec 6 small-scale conclusions (i)-(iii) as rows (check, scope, value, threshold, holds).

    (i) alpha-hat mostly near 0 with a tail: median alpha-hat <= cut (required); a tail exists
        (max > cut; informational). (ii) runs with alpha-hat <= cut reach the upper quartile of
        the zoo's accuracy (required); the worst run falls outside them ("usually": not
        required); |corr(accuracy, alpha-hat)| <= ``corr_max`` ("weakly correlated", required).
    (iii) per ensemble size, the means of alpha-hat, churn w.r.t. the big ensemble, the L_inf
        distance and the accuracy spread (std) never increase with M_ens: value = the largest
        increase between consecutive sizes (required, threshold <= 0, i.e. no slack).
    """
    rows = []

    def add(check, scope, value, threshold, holds, required):
        rows.append({"check": check, "scope": scope, "value": float(value),
                     "threshold": threshold, "holds": bool(holds), "required": required,
                     "source": "alpha-trimming spec 6"})

    for regime, pm in per_model.groupby("regime", sort=False):
        a, acc = pm["alpha_hat"].to_numpy(), pm["accuracy"].to_numpy()
        med = float(np.median(a))
        add("(i) median alpha-hat of the candidates", regime, med, f"<= {cut:g}", med <= cut,
            True)
        add("(i) max alpha-hat (a tail of outlying runs)", regime, a.max(), f"> {cut:g}",
            a.max() > cut, False)
        low = a <= cut
        q75 = float(np.quantile(acc, 0.75))
        best_low = float(acc[low].max()) if low.any() else float("nan")
        add("(ii) best accuracy among alpha-hat <= cut minus the zoo's 75th percentile",
            regime, best_low - q75, ">= 0", low.any() and best_low >= q75, True)
        add("(ii) worst run has alpha-hat > cut (1 = yes)", regime,
            float(a[np.argmin(acc)] > cut), "= 1", a[np.argmin(acc)] > cut, False)
        r = float(np.corrcoef(acc, a)[0, 1]) if np.std(a) > 0 and np.std(acc) > 0 else 0.0
        add("(ii) |corr(accuracy, alpha-hat)|", regime, abs(r), f"<= {corr_max:g}",
            abs(r) <= corr_max, True)
    if len(ens):
        by = ens.groupby("M_ens")
        series = {
            "mean alpha-hat": by["alpha_hat"].mean(),
            "accuracy std": by["accuracy"].std(ddof=1),
            "mean churn w.r.t. the big ensemble": by["churn_vs_full_ensemble"].mean(),
            "mean L_inf to the reference": by["linf_to_reference"].mean(),
        }
        for name, s in series.items():
            s = s.sort_index().dropna()
            rise = float(np.diff(s.to_numpy()).max()) if len(s) > 1 else 0.0
            add(f"(iii) largest increase of the {name} between consecutive M_ens", "ensembles",
                rise, "<= 0", rise <= 0, True)
    return pd.DataFrame(rows)
