"""score_zoo on a small synthetic zoo: aggregation by shift kind, label guard, outputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import labelfree.scorecard.core as core
from labelfree.methods import softmax
from labelfree.scorecard import report, score_zoo


@pytest.fixture(scope="module")
def zoo():
    r = np.random.default_rng(0)
    M, K = 4, 3

    def make(n, shift):
        y = r.integers(0, K, n)
        z = r.normal(size=(M, n, K)) * (1 + shift)
        z[:, np.arange(n), y] += (1.5 + 0.5 * np.arange(M) - shift)[:, None]
        return softmax(z), y

    sets = {"clean": make(120, 0), "n1": make(100, 0.5), "n2": make(90, 1.0), "b": make(80, 0.6)}
    kinds = {"clean": "clean", "n1": "noise", "n2": "noise", "b": "blur"}
    return {k: v[0] for k, v in sets.items()}, {k: v[1] for k, v in sets.items()}, kinds


FAST = {"estimate": ["AC", "DoC", "GDE"], "rank": ["AC", "LaF", "EnsembleAgreement"],
        "fewlabel": ["SRS+labels", "ActiveTesting"]}


def test_aggregates_by_shift_kind(zoo):
    probs, labels, kinds = zoo
    card = score_zoo(probs, labels, kinds, include=FAST, budgets=(10, 20), n_runs=5)
    e = card.estimates[card.estimates.method == "AC"]
    per_set = e.assign(a=(e.estimate - e.accuracy).abs()).groupby("set")["a"].mean()
    est = card.summary["estimation"].set_index(["method", "shift"])
    # noise = mean of the two noise sets; overall = mean of the three targets; source separate
    assert est.loc[("AC", "noise"), "mae"] == pytest.approx((per_set["n1"] + per_set["n2"]) / 2)
    assert est.loc[("AC", "overall"), "mae"] == pytest.approx(per_set[["n1", "n2", "b"]].mean())
    assert est.loc[("AC", "macro"), "mae"] == pytest.approx(
        ((per_set["n1"] + per_set["n2"]) / 2 + per_set["b"]) / 2)
    assert est.loc[("AC", "source (sanity)"), "mae"] == pytest.approx(per_set["clean"])
    assert est.loc[("DoC", "source (sanity)"), "mae"] == pytest.approx(0, abs=1e-12)
    few = card.summary["fewlabel"]
    assert set(few["budget"]) == {10, 20} and (few["runs"] == 5).all()
    assert set(card.fewlabel["set"]) == {"n1", "n2", "b"}  # the source is no pool


def test_target_labels_reach_only_fewlabel_methods(zoo, monkeypatch):
    probs, labels, kinds = zoo
    seen = []
    real = core.call

    def guard(kind, name, P, *args, **ctx):
        arrays = [a for a in (*args, *ctx.values()) if isinstance(a, np.ndarray)]
        for s in ("n1", "n2", "b"):
            if any(a is labels[s] for a in arrays):
                seen.append((kind, name, s))
        return real(kind, name, P, *args, **ctx)

    monkeypatch.setattr(core, "call", guard)
    score_zoo(probs, labels, kinds, include=FAST, budgets=(10,), n_runs=2)
    assert seen and {k for k, _, _ in seen} == {"fewlabel"}  # spec 12 check 4


def test_failures_are_counted_not_fatal(zoo):
    probs, labels, kinds = zoo
    feats = {"n1": [np.zeros((3, 2))] * 4}  # wrong N: Dispersion raises on n1 only
    card = score_zoo(probs, labels, kinds, features=feats,
                     include={"estimate": ["AC"], "rank": ["AC", "Dispersion"],
                              "fewlabel": ["SRS+labels"]}, budgets=(500,), n_runs=2)
    assert card.fewlabel.empty  # budget larger than every pool: skipped, not an error
    assert isinstance(card.failures, pd.DataFrame)
    assert card.failures[["method", "set"]].values.tolist() == [["Dispersion", "n1"]]
    rk = card.summary["ranking"].set_index(["method", "shift"])
    assert rk.loc[("Dispersion", "overall"), "failed_cells"] == 1


def test_write_tables_and_figure(zoo, tmp_path):
    probs, labels, kinds = zoo
    card = score_zoo(probs, labels, kinds, include=FAST, budgets=(10, 20), n_runs=3)
    paths = report.write(card, tmp_path, "toy")
    names = {p.name for p in paths}
    assert {"estimation.csv", "ranking.csv", "fewlabel.csv", "scorecard.md", "scorecard.png"} <= names
    md = (tmp_path / "scorecard.md").read_text()
    assert "MAE" in md and "| AC" in md
    assert (tmp_path / "scorecard.png").stat().st_size > 10_000
    best = report.best_per_kind(card)
    assert set(best["shift"]) >= {"noise", "blur", "overall"}


def test_figure_of_a_one_model_zoo_does_not_crash(tmp_path, monkeypatch):
    """A zoo of one model has no defined ranking metrics (all NaN); the figure leaves the ranking
    panel out instead of failing the job (found on the alpha-trimming MNIST run) and still draws
    the estimation and few-label panels."""
    import matplotlib.axes
    import numpy as np

    from labelfree.scorecard import report, score_zoo

    titles = []
    real = matplotlib.axes.Axes.set_title
    monkeypatch.setattr(matplotlib.axes.Axes, "set_title",
                        lambda self, t, *a, **k: titles.append(t) or real(self, t, *a, **k))

    g = np.random.default_rng(0)
    p = g.dirichlet(np.ones(2), size=(1, 200))
    y = g.integers(0, 2, 200)
    card = score_zoo({"id": p, "s": p}, {"id": y, "s": y}, {"id": "source", "s": "shift"}, "id",
                     budgets=[10], n_runs=2, exclude=["CODA", "COT", "COTT"])
    path = report.figure(card, tmp_path / "f.png", "one")
    assert path.read_bytes()[:4] == b"\x89PNG"
    assert titles == ["one: estimation MAE", "one: few-label model selection"]
