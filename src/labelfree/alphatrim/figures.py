"""Figures of the alpha-trimming study (paper Section V). Each returns a matplotlib figure."""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from labelfree.plots import STYLE, figure


def _size_colours(sizes):
    cmap = plt.get_cmap("viridis")
    return {s: cmap(i / max(1, len(sizes) - 1)) for i, s in enumerate(sizes)}


def fig_gap_histogram_and_curves(
    pool_gaps: np.ndarray, curves: Mapping[str, np.ndarray] | None, title: str
):
    """Fig. 4: left, density of the full-pool ensemble's logit gaps with the per-bin min/max
    density over the individual pool models; right, test accuracy per epoch (mean, ±1 std,
    min-max over the runs) when per-epoch curves were recorded."""
    fig, axes = figure(ncols=2, width=4.2)
    ax = axes[0]
    bins = np.linspace(pool_gaps.min(), pool_gaps.max(), 41)
    dens = np.stack([np.histogram(g, bins=bins, density=True)[0] for g in pool_gaps])
    mid = (bins[1:] + bins[:-1]) / 2
    ax.fill_between(mid, dens.min(0), dens.max(0), step="mid", alpha=0.3, label="single runs min-max")
    ens = pool_gaps.mean(axis=0)
    ax.hist(ens, bins=bins, density=True, histtype="step", lw=1.5, color="k",
            label=f"ensemble of {len(pool_gaps)}")
    ax.set_xlabel("logit gap m(x)")
    ax.set_ylabel("density")
    ax.legend(fontsize=7)
    ax = axes[1]
    if curves is not None and "accuracy" in curves:
        acc = curves["accuracy"]
        ep = np.arange(1, acc.shape[1] + 1)
        mu, sd = acc.mean(0), acc.std(0)
        ax.fill_between(ep, acc.min(0), acc.max(0), alpha=0.2, label="min-max")
        ax.fill_between(ep, mu - sd, mu + sd, alpha=0.4, label="±1 std")
        ax.plot(ep, mu, color="k", lw=1, label="mean")
        ax.set_xlabel("epoch")
        ax.set_ylabel("test accuracy [%]")
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "per-epoch curves not recorded", ha="center", transform=ax.transAxes)
    fig.suptitle(title)
    return fig


def fig_ensemble_scatter(ens: pd.DataFrame, y: str, ylabel: str, title: str,
                         hline: float | None = None):
    """Figs. 5 and 8: one dot per ensemble, x = accuracy, colour = M_ens."""
    fig, ax = figure(width=5.0, height=3.6)
    sizes = sorted(ens["M_ens"].unique())
    col = _size_colours(sizes)
    for s in sizes:
        g = ens[ens["M_ens"] == s]
        ax.scatter(g["accuracy"], g[y], s=8, color=col[s], label=f"M_ens={s}", alpha=0.8)
    if hline is not None:
        ax.axhline(hline, color="r", ls="--", lw=1, label=f"delta_a = {hline:.4f}")
    ax.set_xlabel("ensemble accuracy [%]")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=6, ncol=2)
    ax.set_title(title)
    return fig


def fig_ensemble_panels(ens: pd.DataFrame, y: str, ylabel: str, title: str):
    """Figs. 6/7 (and 15/16): one panel per ensemble size, accuracy vs churn or ECE."""
    sizes = sorted(ens["M_ens"].unique())
    ncols = min(4, len(sizes))
    nrows = int(np.ceil(len(sizes) / ncols))
    fig, axes = figure(ncols=ncols, nrows=nrows, width=2.6, height=2.3, sharex=True, sharey=True,
                       squeeze=False)
    for ax, s in zip(axes.ravel(), sizes, strict=False):
        g = ens[ens["M_ens"] == s]
        ax.scatter(g["accuracy"], g[y], s=6, alpha=0.7)
        ax.set_title(f"M_ens = {s}", fontsize=8)
    for ax in axes.ravel()[len(sizes):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("accuracy [%]")
    for ax in axes[:, 0]:
        ax.set_ylabel(ylabel)
    fig.suptitle(title)
    return fig


def fig_alpha_vs_accuracy(per_model: pd.DataFrame, cut: float, title: str):
    """Fig. 9: alpha-hat vs accuracy of the candidates, one panel per seed regime."""
    regimes = list(dict.fromkeys(per_model["regime"]))
    fig, axes = figure(ncols=len(regimes), width=3.2, height=2.8, sharey=True, squeeze=False)
    for ax, r in zip(axes[0], regimes, strict=True):
        g = per_model[per_model["regime"] == r]
        ax.scatter(g["accuracy"], g["alpha_hat"], s=10, alpha=0.8)
        ax.axhline(cut, color="r", ls="--", lw=0.8)
        ax.set_title(r)
        ax.set_xlabel("accuracy [%]")
    axes[0, 0].set_ylabel("alpha-hat")
    fig.suptitle(title)
    return fig


def fig_pairwise(pairs: Mapping[str, pd.DataFrame], title: str, n_ranges: int = 4):
    """Fig. 10: rows = regimes, columns = equal-width ranges of pairwise churn; each panel
    scatters (alpha_i, alpha_j) of the candidate pairs whose churn falls in that range."""
    regimes = list(pairs)
    fig, axes = figure(ncols=n_ranges, nrows=len(regimes), width=2.4, height=2.2, squeeze=False,
                       sharex=True, sharey=True)
    for row, r in zip(axes, regimes, strict=True):
        p = pairs[r]
        edges = np.linspace(p["churn"].min(), p["churn"].max(), n_ranges + 1)
        for c, ax in enumerate(row):
            last = c == n_ranges - 1
            sel = p[(p["churn"] >= edges[c]) & ((p["churn"] <= edges[c + 1]) if last
                                                  else (p["churn"] < edges[c + 1]))]
            ax.scatter(sel["alpha_i"], sel["alpha_j"], s=4, alpha=0.5)
            ax.set_title(f"{r}: churn [{edges[c]:.0f}, {edges[c + 1]:.0f}]", fontsize=7)
        row[0].set_ylabel("alpha-hat j")
    for ax in axes[-1]:
        ax.set_xlabel("alpha-hat i")
    fig.suptitle(title)
    return fig


def fig_alpha_vs_metrics(per_model: pd.DataFrame, cut: float, title: str):
    """Figs. 11 / 14: alpha-hat vs accuracy, vs churn w.r.t. the candidate ensemble, vs ECE."""
    fig, axes = figure(ncols=3, width=3.0, height=2.8, sharey=True)
    for ax, (col, lab) in zip(
        axes,
        [("accuracy", "accuracy [%]"), ("churn_vs_ensemble", "churn w.r.t. ensemble"),
         ("ece", "ECE")],
        strict=True,
    ):
        ax.scatter(per_model[col], per_model["alpha_hat"], s=10, alpha=0.8)
        ax.axhline(cut, color="r", ls="--", lw=0.8)
        ax.set_xlabel(lab)
    axes[0].set_ylabel("alpha-hat")
    fig.suptitle(title)
    return fig


def fig_3d(per_model: pd.DataFrame, title: str):
    """Fig. 12: accuracy, churn w.r.t. ensemble and ECE in 3-D, coloured by alpha-hat."""
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=(5.5, 4.5))
        ax = fig.add_subplot(projection="3d")
        sc = ax.scatter(per_model["accuracy"], per_model["churn_vs_ensemble"], per_model["ece"],
                        c=per_model["alpha_hat"], cmap="plasma", s=14)
        ax.set_xlabel("accuracy [%]")
        ax.set_ylabel("churn w.r.t. ens.")
        ax.set_zlabel("ECE")
        fig.colorbar(sc, ax=ax, shrink=0.6, label="alpha-hat")
        ax.set_title(title)
    return fig


def fig_curves(curves: Mapping[str, np.ndarray] | None, title: str):
    """Fig. 13: per-epoch test loss and accuracy of the heads (mean, ±1 std, min-max)."""
    fig, axes = figure(ncols=2, width=3.6)
    for ax, key, lab in zip(axes, ("loss", "accuracy"), ("test loss", "test accuracy [%]"),
                            strict=True):
        if curves is None or key not in curves:
            ax.text(0.5, 0.5, "not recorded", ha="center", transform=ax.transAxes)
            continue
        v = curves[key]
        ep = np.arange(1, v.shape[1] + 1)
        ax.fill_between(ep, v.min(0), v.max(0), alpha=0.2, label="min-max")
        ax.fill_between(ep, v.mean(0) - v.std(0), v.mean(0) + v.std(0), alpha=0.4, label="±1 std")
        ax.plot(ep, v.mean(0), color="k", lw=1, label="mean")
        ax.set_xlabel("epoch")
        ax.set_ylabel(lab)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    return fig
