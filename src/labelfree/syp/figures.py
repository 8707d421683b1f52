"""SYP figures (spec 5): predicted-vs-true scatter for every method, and the bar charts of
Figures 4-7 (GT vs ORA-A prediction on meta-training and validation sets)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from labelfree.plots import figure

GROUP_MARKERS = {"clean": "*", "corrupted": "o", "natural": "s"}


def scatter(pred: pd.DataFrame):
    """One panel per (classifier, method): validation-set GT (x) vs predicted accuracy (y), y = x
    line, markers by group; SYP predictions averaged over seeds. Title gives the RMSE."""
    models = list(dict.fromkeys(pred["model"]))
    methods = list(dict.fromkeys(pred["method"]))
    fig, axes = figure(ncols=len(methods), nrows=len(models), width=2.2, height=2.2, squeeze=False)
    for i, model in enumerate(models):
        for j, method in enumerate(methods):
            ax = axes[i][j]
            df = pred[(pred["model"] == model) & (pred["method"] == method)]
            avg = df.groupby(["set", "group"], sort=False)[["true_acc", "pred_acc"]].mean()
            avg = avg.reset_index()
            per_seed = [
                np.sqrt(np.mean((s["true_acc"] - s["pred_acc"]) ** 2))
                for _, s in df.groupby("seed")
            ]
            for grp, marker in GROUP_MARKERS.items():
                sub = avg[avg["group"] == grp]
                ax.scatter(sub["true_acc"], sub["pred_acc"], s=10, marker=marker, label=grp)
            lo = float(min(avg["true_acc"].min(), avg["pred_acc"].min(), 0.0))
            ax.plot([lo, 100], [lo, 100], "k--", lw=0.7)
            ax.set_xlim(lo, 102)
            ax.set_ylim(lo, 102)
            ax.set_title(f"{method}\nRMSE {np.mean(per_seed):.2f}", fontsize=7)
            if j == 0:
                ax.set_ylabel(f"{model}\npredicted acc. (%)", fontsize=7)
            if i == len(models) - 1:
                ax.set_xlabel("true acc. (%)", fontsize=7)
            ax.tick_params(labelsize=6)
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    return fig


def bars(df: pd.DataFrame, title: str, limit: int | None = None):
    """GT vs predicted accuracy per set as paired bars, one row of axes per classifier."""
    models = list(dict.fromkeys(df["model"]))
    fig, axes = figure(ncols=1, nrows=len(models), width=9.0, height=2.4, squeeze=False)
    for i, model in enumerate(models):
        ax = axes[i][0]
        sub = df[df["model"] == model].groupby("set", sort=False)[["true_acc", "pred_acc"]].mean()
        if limit:
            sub = sub.iloc[:limit]
        x = np.arange(len(sub))
        ax.bar(x - 0.2, sub["true_acc"], width=0.4, label="GT")
        ax.bar(x + 0.2, sub["pred_acc"], width=0.4, label="SYP (ORA-A)")
        ax.set_ylabel(f"{model}\naccuracy (%)", fontsize=7)
        ax.set_xlabel("set index", fontsize=7)
        ax.set_xticks(x[:: max(1, len(x) // 20)], labels=(x + 1)[:: max(1, len(x) // 20)])
        ax.tick_params(labelsize=6)
        ax.set_title(title, fontsize=8)
        ax.legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    return fig


def sensitivity(df: pd.DataFrame):
    """Figure 10 (SYP paper): validation RMSE of ORA-A vs training iterations (left) and base
    learning rate (right), one line per classifier, error bars = seed std."""
    fig, axes = figure(ncols=2, nrows=1, width=3.2, height=2.6, squeeze=False)
    for ax, (param, xcol, label) in zip(
        axes[0],
        (("iterations", "iterations", "training iterations"), ("lr", "lr", "base learning rate")),
        strict=True,
    ):
        sub = df[df["parameter"] == param]
        for model, m in sub.groupby("model", sort=False):
            m = m.sort_values(xcol)
            ax.errorbar(m[xcol], m["rmse"], yerr=m["rmse_std"], marker="o", ms=3, capsize=2,
                        label=model)
            d = m[m["is_default"]]
            ax.scatter(d[xcol], d["rmse"], s=40, facecolors="none", edgecolors="k")
        if param == "lr":
            ax.set_xscale("log")
        ax.set_xlabel(label, fontsize=7)
        ax.set_ylabel("validation RMSE (pp)", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.legend(fontsize=6)
    fig.suptitle("Fig. 10 analogue: sensitivity of ORA-A to iterations and lr (circle = default)",
                 fontsize=8)
    fig.tight_layout()
    return fig
