"""score_zoo on a small synthetic zoo: aggregation by shift kind, label guard, outputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import labelfree.scorecard.core as core
from labelfree.numerics import softmax
from labelfree.scorecard import report
from labelfree.scorecard.core import score_zoo


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

    from labelfree.scorecard import report
    from labelfree.scorecard.core import score_zoo

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
    assert titles == ["one: estimation MAE",
                      "one: few-label estimation (selection not applicable: one model)"]


def _one_model_zoo():
    """One model, K = 2, every row's top probability 0.8; hand-made labels, 4 repeated 5 times:
    the model is right on 3 of 4 `clean` inputs, 2 of 4 `a` and 1 of 4 `b` inputs (accuracy
    0.75, 0.5, 0.25)."""
    row = np.array([0.8, 0.2])
    p = np.tile(row, (1, 20, 1))  # predicts class 0 everywhere
    labels = {"clean": np.tile([0, 0, 0, 1], 5), "a": np.tile([0, 0, 1, 1], 5),
              "b": np.tile([0, 1, 1, 1], 5)}
    return {s: p for s in labels}, labels, {"clean": "source", "a": "noise", "b": "blur"}


def test_one_model_zoo_scores_estimation_and_says_what_is_not_applicable():
    """Issue 18 ("a scorecard for every zoo"): a zoo of one model gets the label-free MAE per
    kind of shift and the few-label estimators' error per budget; every ranker, GDE, ALine,
    ModelPicker and CODA are rows that say "not applicable: one model", never silently missing
    and never counted as failures. Known answers by hand (_one_model_zoo): AC = 0.8 on every
    set, so its MAE is |0.8 - 0.5| = 0.3 on `noise`, |0.8 - 0.25| = 0.55 on `blur`, 0.425
    overall; labelling the whole pool (budget 20 of 20) gives SRS+labels the true accuracy, MAE 0."""
    probs, labels, kinds = _one_model_zoo()
    skip = {"COT", "COTT", "Dispersion", "FD"}  # time; features
    card = score_zoo(probs, labels, kinds, budgets=(10, 20), n_runs=3, exclude=sorted(skip))
    assert card.failures.empty
    est = card.summary["estimation"].set_index(["method", "shift"])
    assert est.loc[("AC", "noise"), "mae"] == pytest.approx(0.3)
    assert est.loc[("AC", "blur"), "mae"] == pytest.approx(0.55)
    assert est.loc[("AC", "overall"), "mae"] == pytest.approx(0.425)
    assert est.loc[("AC", "source (sanity)"), "mae"] == pytest.approx(0.05)
    for m in core.NEEDS_TWO_MODELS:
        assert est.loc[(m, "all"), "note"].startswith(core.ONE_MODEL), m
    rank = card.summary["ranking"]
    assert set(rank["method"]) == {m.name for m in core.methods("rank")} - skip  # all listed
    assert (rank["shift"] == "all").all() and rank["note"].str.startswith(core.ONE_MODEL).all()
    assert card.ranking.empty  # nothing ranked, nothing counted as undefined
    few = card.summary["fewlabel"]
    na = few[few["shift"] == "all"].set_index("method")
    assert set(na.index) == set(core.SELECTION_ONLY)
    scored = few[few["shift"] != "all"].set_index(["method", "budget", "shift"])
    assert {"ActiveTesting", "SRS+labels", "PACE+labels", "CES+labels"} <= set(
        scored.index.get_level_values(0))
    assert scored.loc[("SRS+labels", 20, "overall"), "mae"] == pytest.approx(0, abs=1e-12)
    assert scored[["regret", "p_best", "spearman", "kendall"]].isna().all().all()
    assert scored["note"].str.contains(core.ONE_MODEL).all()
    best = report.best_per_kind(card).set_index("shift")
    assert best.loc["overall", "estimator"] and best.loc["overall", "mae"] <= 0.425
    assert (best["ranker"] == core.ONE_MODEL).all() and best["spearman"].isna().all()
    md = report.markdown(card, "one")
    assert "## Not applicable" in md and "ModelPicker" in md and "LaF" in md
    # the source set alone (no pool): the few-label table still says what is not applicable
    src = score_zoo({"clean": probs["clean"]}, {"clean": labels["clean"]}, {"clean": "source"},
                    include={"estimate": ["AC"], "rank": ["LaF"], "fewlabel": ["ModelPicker"]})
    assert src.summary["fewlabel"]["method"].tolist() == ["ModelPicker"]


def test_multi_model_zoo_has_no_not_applicable_rows(zoo):
    """The one-model rules leave a zoo of several models as it was: no `all` rows, empty notes."""
    probs, labels, kinds = zoo
    card = score_zoo(probs, labels, kinds, include=FAST, budgets=(10,), n_runs=2)
    assert card.not_applicable.empty
    for name, table in card.summary.items():
        assert list(table.columns) == core.SUMMARY_COLUMNS[name]
        assert "all" not in set(table["shift"]) and (table["note"] == "").all(), name
    assert card.summary["fewlabel"]["regret"].notna().all()


def test_unscored_zoo_lists_every_method_with_its_reason(tmp_path):
    """A zoo whose labels the scorecard cannot score (multi-label only) writes tables that say
    why for every registered method, and a which-method-when row with that reason."""
    card = core.unscored("multi-label labels only (metamorphic-ml)")
    for name, kind in (("estimation", "estimate"), ("ranking", "rank"), ("fewlabel", "fewlabel")):
        t = card.summary[name]
        assert set(t["method"]) == {m.name for m in core.methods(kind)}, name
        assert (t["note"] == "multi-label labels only (metamorphic-ml)").all(), name
    best = report.best_per_kind(card)
    assert best.to_dict("records")[0]["note"] == "multi-label labels only (metamorphic-ml)"
    assert best["estimator"].tolist() == [""]
    assert report.figure(card, tmp_path / "u.png", "u").exists()
    assert "Not scored: multi-label" in report.markdown(card, "u")


def test_coverage_takes_the_reason_a_scorecard_job_found():
    rows = [dict(zoo="a", models=3, scored_testsets=2, scorecard="yes", reason=""),
            dict(zoo="ml", models=1, scored_testsets=3, scorecard="estimation only",
                 reason="one model: ...")]
    best = {"a": pd.DataFrame(dict(shift=["overall"], estimator=["AC"], mae=[0.1], ranker=["AC"],
                                   spearman=[0.5], note=[""])),
            "ml": report.best_per_kind(core.unscored("multi-label labels only"))}
    table = report.coverage(rows, best).set_index("zoo")
    assert table.loc["a"].tolist() == [3, 2, "yes", ""]
    assert table.loc["ml"].tolist() == [1, 0, "no", "multi-label labels only"]
