"""One answer per zoo (docs/methods.md, "The answer"): which model is best, how
accurate each is likely to be, and which inputs to label, from the zoo's inference artefacts.

For every test set of the zoo:

- LaF ranks the models without labels (methods registry ``rank/LaF``, Hu et al., TOSEM 2023);
- each model's accuracy is estimated without labels: ATC (Garg et al., ICLR 2022; registry
  ``ATC-MC``) calibrated on the labelled in-distribution set when the test set is another one,
  else average confidence (``AC``); the interval is a percentile bootstrap over the test set's
  inputs (B resamples, seeded), i.e. the estimator's sampling spread, not its bias;
- the true accuracy is shown where the test set has labels, to judge both.

PACE (Chen et al., TOSEM 2020; registry ``select/PACE``), run on the top-ranked model's output
probabilities, then picks the ``budget`` inputs of the first test set that a person should label
to measure that model's accuracy.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from labelfree.methods import estimators, registry  # noqa: E402
from labelfree.numerics import softmax  # noqa: E402
from labelfree.scorecard.core import ONE_MODEL  # noqa: E402


@dataclass(frozen=True)
class TestSet:
    """One test set of a zoo: per-model probabilities (M, N, K) and labels (N,) or None."""

    name: str
    probs: np.ndarray
    labels: np.ndarray | None


def bootstrap_interval(correct_proxy: np.ndarray, n_boot: int, seed: int,
                       level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of per-model means of a per-input quantity (M, N) over resampled
    inputs: one index matrix (B, N) shared by every model, so the loop is over B only."""
    m, n = correct_proxy.shape
    if n == 0:
        nan = np.full(m, np.nan)
        return nan, nan
    idx = np.random.default_rng(seed).integers(0, n, size=(n_boot, n))
    means = np.stack([correct_proxy[:, i].mean(axis=1) for i in idx])  # (B, M)
    lo, hi = np.quantile(means, [(1 - level) / 2, (1 + level) / 2], axis=0)
    return lo, hi


def atc_threshold(source_probs: np.ndarray, source_labels: np.ndarray) -> np.ndarray:
    """Per-model ATC-MC threshold t on the max-confidence of the labelled source set, the
    registry's ATC-MC rule (:func:`labelfree.methods.estimators.atc_threshold`; Garg et al., ICLR
    2022, as saurabhgarg1996/ATC_code@6f1e336 ``ATC_helper.py::find_ATC_threshold`` computes it):
    ``t = sort(conf)[n_inc - 1]`` with ``n_inc`` the source errors, 0.0 for a model without a
    source error; an input counts as correct when its confidence is ``>= t``."""
    conf = source_probs.max(axis=2)  # (M, Ns)
    correct = source_probs.argmax(axis=2) == source_labels[None]
    with warnings.catch_warnings():  # a perfect source model: t = 0.0, as ATC-MC in the scorecard
        warnings.simplefilter("ignore")
        return np.array([estimators.atc_threshold(conf[j], correct[j])
                         for j in range(len(conf))])


def answer_table(models: Sequence[str], sets: Sequence[TestSet], source: str | None,
                 n_boot: int = 200, seed: int = 0) -> pd.DataFrame:
    """One row per (test set, model): LaF score and rank, estimated accuracy with interval,
    estimator used, true accuracy (NaN when unlabelled)."""
    by_name = {s.name: s for s in sets}
    src = by_name.get(source) if source else None
    rows = []
    for k, s in enumerate(sets):
        m = s.probs.shape[0]
        if m >= 2:
            laf = np.asarray(registry.call("rank", "LaF", s.probs), dtype=float)
        else:
            laf = np.full(m, np.nan)
        conf = s.probs.max(axis=2)
        if src is not None and src.labels is not None and s.name != src.name:
            t = atc_threshold(src.probs, src.labels)
            proxy = (conf >= t[:, None]).astype(float)
            method = "ATC-MC"
        else:
            proxy = conf
            method = "AC"
        est = proxy.mean(axis=1)
        lo, hi = bootstrap_interval(proxy, n_boot, seed + k)
        true = ((s.probs.argmax(axis=2) == s.labels[None]).mean(axis=1)
                if s.labels is not None else np.full(m, np.nan))
        order = (-np.nan_to_num(laf, nan=-np.inf)).argsort(kind="stable")
        ranks = np.empty(m, dtype=int)
        ranks[order] = np.arange(1, m + 1)
        for j, model in enumerate(models):
            rows.append({"testset": s.name, "model": model, "laf_score": laf[j],
                         "laf_rank": int(ranks[j]), "estimated_accuracy": est[j],
                         "interval_low": lo[j], "interval_high": hi[j], "estimator": method,
                         "true_accuracy": true[j], "inputs": s.probs.shape[1]})
    return pd.DataFrame(rows)


def label_plan(probs: np.ndarray, budget: int, seed: int) -> np.ndarray:
    """Indices PACE would have a person label (registry ``select/PACE``), ascending."""
    n = probs.shape[1]
    budget = int(min(budget, n))
    picks = registry.call("select", "PACE", probs, budget, seed)
    return np.sort(np.asarray(picks, dtype=np.int64))


def _pct(v: float) -> str:
    return "—" if v != v else f"{100 * v:.1f}"


def scorecard_summary(zoo: str, best: pd.DataFrame | None, note: str = "") -> str:
    """One paragraph of the zoo's scorecard for its answer (docs/methods.md): the best label-free
    estimator (lowest MAE) and ranker (highest Spearman) over all shifted sets, then per kind of
    shift, from ``extra-<zoo>-best.csv`` (:func:`labelfree.scorecard.report.best_per_kind`). A
    zoo of one model names its best estimator and says ranking and model selection are not
    applicable; a zoo scored on its source set only names the best estimator there (a sanity
    row); a zoo its scorecard could not score (e.g. multi-label labels) gives the table's note;
    ``note`` (why the zoo has no scorecard) when ``best`` is None."""
    if best is None:
        return f"Scorecard: none for this zoo: {note}"

    def cell(r) -> str:
        est = f"{r.estimator} (MAE {_pct(r.mae)} points)" if r.estimator else "no estimator"
        if r.ranker == ONE_MODEL:
            return est
        rk = f"{r.ranker} (Spearman {r.spearman:.2f})" if r.ranker else "no ranker"
        return f"{est}, {rk}"

    rows = best.assign(**{c: best[c].astype(object).fillna("").astype(str)
                          for c in ("estimator", "ranker")})
    where = f"Scorecard (`results/scorecard/tables/extra-{zoo}-best.csv`"
    if not (rows["estimator"].str.len() > 0).any():
        notes = [str(n) for n in rows.get("note", pd.Series(dtype=str)).dropna() if str(n)]
        return f"{where}): none for this zoo: {notes[0] if notes else note or 'nothing scored'}."
    one = (rows["ranker"] == ONE_MODEL).any()
    head = rows[rows["shift"] == "overall"]
    sanity = rows[rows["shift"].str.startswith("source")]
    kinds = rows[~rows["shift"].isin(["overall", "macro"])
                 & ~rows["shift"].str.startswith("source")]
    text = where + "; every method on this zoo's test sets against true accuracy): "
    what = "best estimator" if one else "best estimator and ranker"
    if len(head):
        text += f"over all shifted test sets, {what}: {cell(head.iloc[0])}"
    elif len(sanity):
        text += (f"only the source set is scored (a sanity row: estimators fitted on it), "
                 f"{what} there: {cell(sanity.iloc[0])}")
    text += "".join(f"; on `{r.shift}`: {cell(r)}" for r in kinds.itertuples(index=False))
    if one:
        text += f". Ranking and model selection: {ONE_MODEL} (nothing to rank)"
    return text + "."


def render(zoo: str, table: pd.DataFrame, plan: np.ndarray, plan_set: str, top_model: str,
           scorecard_line: str = "") -> str:
    """answer.md: the main test set's ranking, then a line per other test set."""
    first = table["testset"].iloc[0]
    main = table[table["testset"] == first].sort_values("laf_rank")
    lines = [f"# Answer for zoo `{zoo}`", ""]
    lead = (f"Models ranked without labels by LaF on test set `{first}`" if len(main) > 1 else
            f"One model, so nothing to rank; test set `{first}`")
    lines.append(f"{lead} ({int(main['inputs'].iloc[0])} inputs); estimated accuracy without labels "
                 f"({main['estimator'].iloc[0]}) with a 95 % bootstrap interval over inputs; true "
                 "accuracy where the test set has labels.")
    lines += ["", "| rank | model | LaF score | estimated accuracy % [95 % interval] | "
              "true accuracy % |", "|---|---|---|---|---|"]
    for r in main.itertuples(index=False):
        laf = "—" if r.laf_score != r.laf_score else f"{r.laf_score:.3f}"  # one model: none
        lines.append(f"| {r.laf_rank} | `{r.model}` | {laf} | {_pct(r.estimated_accuracy)}"
                     f" [{_pct(r.interval_low)}, {_pct(r.interval_high)}] | "
                     f"{_pct(r.true_accuracy)} |")
    others = table[table["testset"] != first]
    if len(others):
        lines += ["", "Other test sets: LaF's top model, its estimated and true accuracy, and "
                  "the rank LaF gave the truly best model (where labels exist).", "",
                  "| test set | LaF top model | estimated % | true % | LaF rank of the truly best |",
                  "|---|---|---|---|---|"]
        for name, grp in others.groupby("testset", sort=False):
            top = grp.sort_values("laf_rank").iloc[0]
            best_rank = ("—" if grp["true_accuracy"].isna().all()
                         else str(int(grp.loc[grp["true_accuracy"].idxmax(), "laf_rank"])))
            lines.append(f"| `{name}` | `{top.model}` | {_pct(top.estimated_accuracy)} | "
                         f"{_pct(top.true_accuracy)} | {best_rank} |")
    lines += ["", f"To measure `{top_model}` on `{plan_set}` with few labels, label these "
              f"{len(plan)} inputs (PACE selection; indices in `label-these.csv`): "
              + ", ".join(map(str, plan[:20])) + (" ..." if len(plan) > 20 else "") + "."]
    if scorecard_line:
        lines += ["", scorecard_line]
    return "\n".join(lines) + "\n"


def figure(table: pd.DataFrame):
    """Estimated (with interval) and true accuracy per model on the main test set, LaF order."""
    first = table["testset"].iloc[0]
    main = table[table["testset"] == first].sort_values("laf_rank")
    x = np.arange(len(main))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.45 * len(main) + 2), 3.2))
    est = 100 * main["estimated_accuracy"].to_numpy()
    err = np.vstack([est - 100 * main["interval_low"].to_numpy(),
                     100 * main["interval_high"].to_numpy() - est])
    ax.errorbar(x, est, yerr=err, fmt="o", capsize=3, label="estimated (no labels)")
    if main["true_accuracy"].notna().any():
        ax.plot(x, 100 * main["true_accuracy"].to_numpy(), "s", mfc="none", label="true")
    ax.set_xticks(x, main["model"], rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("accuracy %")
    ax.set_xlabel(f"models in LaF rank order on `{first}` (best left)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def build(zoo: str, models: Sequence[str], logits: Mapping[str, np.ndarray],
          labels: Mapping[str, np.ndarray | None], source: str | None, budget: int,
          seed: int, n_boot: int = 200) -> tuple[pd.DataFrame, np.ndarray, str, str]:
    """Everything the answer needs: table, PACE plan on the first test set, its name, top model.

    ``logits``: test set -> (M, N, K) in the zoo's model order (first test set = main one).
    """
    sets = [TestSet(name, softmax(np.asarray(lg, dtype=np.float64)), labels.get(name))
            for name, lg in logits.items()]
    table = answer_table(models, sets, source, n_boot=n_boot, seed=seed)
    first = sets[0]
    top = str(table[table["testset"] == first.name].sort_values("laf_rank").iloc[0]["model"])
    j = list(models).index(top)
    plan = label_plan(first.probs[j : j + 1], budget, seed)  # PACE on the top model's outputs
    return table, plan, first.name, top
