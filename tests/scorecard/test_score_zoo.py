"""score_zoo on a small synthetic zoo: aggregation by shift kind, label guard, outputs."""

from __future__ import annotations

import os
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import pandas as pd
import pytest

import labelfree.scorecard.core as core
from labelfree.methods.arrays import n_workers
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


def test_sets_on_two_workers_give_the_rows_of_one_process(zoo):
    """score_zoo(workers=2) scores the sets on forked processes: every long table, failure,
    output and summary equals the one-process run's, in the same order (a merge out of set
    order, a set lost, or outputs keyed in another order would differ)."""
    probs, labels, kinds = zoo
    feats = {"n1": [np.zeros((3, 2))] * 4}  # Dispersion fails on n1: failure rows in order too
    kw = dict(features=feats, budgets=(10, 20), n_runs=2,
              include={"estimate": ["AC", "COT", "GDE"], "rank": ["AC", "Dispersion", "MaNo"],
                       "fewlabel": ["SRS+labels", "ActiveTesting", "CODA"]})
    one = score_zoo(probs, labels, kinds, **kw)
    two = score_zoo(probs, labels, kinds, workers=2, **kw)
    for name in ("truth", "estimates", "ranking", "fewlabel", "failures", "not_applicable"):
        pd.testing.assert_frame_equal(getattr(two, name), getattr(one, name))
    assert list(two.timings[["method", "kind", "set"]].itertuples(index=False)) == list(
        one.timings[["method", "kind", "set"]].itertuples(index=False))
    assert list(two.outputs) == list(one.outputs)
    for k, v in one.outputs.items():
        np.testing.assert_array_equal(two.outputs[k], v)
    for name, t in one.summary.items():
        assert two.summary[name].to_csv(index=False) == t.to_csv(index=False)
    assert set(one.fewlabel["set"]) == {"n1", "n2", "b"}
    assert one.failures[["method", "set"]].values.tolist() == [["Dispersion", "n1"]]


def test_map_sets_runs_on_forked_workers_in_set_order():
    """Two workers: every set is scored in another process (one BLAS thread, n_workers() 1, as
    a one-thread job) and the results come back in set order; one worker: in this process."""
    def where(s):
        return s, os.getpid(), n_workers()

    sets = [f"s{i}" for i in range(5)]
    two = list(core._map_sets(where, sets, 2))
    assert [s for s, _, _ in two] == sets
    assert all(pid != os.getpid() for _, pid, _ in two) and {w for _, _, w in two} == {1}
    assert [pid for _, pid, _ in core._map_sets(where, sets, 1)] == [os.getpid()] * 5


def test_map_sets_fails_when_a_worker_dies():
    """A worker that dies (e.g. killed for memory) fails the scoring; it does not hang."""
    def die(s):
        if s == "b":
            os._exit(3)
        return s

    with pytest.raises(BrokenProcessPool):
        list(core._map_sets(die, ["a", "b", "c"], 2))


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
    # drawn once, saved twice (the job's png and pdf): the png is the one a drawing of its own
    # gives, and the second file is a pdf
    report.figure(card, tmp_path / "one.png", "toy", also=[tmp_path / "two.png",
                                                           tmp_path / "two.pdf"])
    alone = report.figure(card, tmp_path / "alone.png", "toy")
    assert (tmp_path / "one.png").read_bytes() == alone.read_bytes()
    assert (tmp_path / "two.png").read_bytes() == alone.read_bytes()
    assert (tmp_path / "two.pdf").read_bytes().startswith(b"%PDF")


def test_rank_correlations_are_each_rows_own(monkeypatch):
    # the scorecard computes Spearman and Kendall once per distinct score vector of a set: every
    # ranking and few-label row must still equal labelfree.stats on its own scores and its own
    # set's accuracies. Sets "a" and "b" have the same probabilities (equal label-free scores)
    # but other labels (other accuracies): a share across sets would give "b" the values of "a"
    from labelfree.stats import kendall_tau_b, spearman

    r = np.random.default_rng(7)
    M, N, K = 5, 150, 4
    y0, ya, yb = (r.integers(0, K, N) for _ in range(3))
    z = r.normal(size=(M, N, K)) + (1.0 + 0.3 * np.arange(M))[:, None, None] * np.eye(K)[ya]
    Pa = softmax(z)
    P0 = softmax(r.normal(size=(M, N, K)) + 2.0 * np.eye(K)[y0])
    probs, labels = {"clean": P0, "a": Pa, "b": Pa.copy()}, {"clean": y0, "a": ya, "b": yb}
    kinds = {"clean": "clean", "a": "noise", "b": "noise"}
    outs = {}
    real = core.call

    def keep(kind, name, P, *args, **ctx):
        out = real(kind, name, P, *args, **ctx)
        s = next(k for k, v in probs.items() if v is P)
        outs[(kind, name, s)] = out
        return out

    monkeypatch.setattr(core, "call", keep)
    card = score_zoo(probs, labels, kinds, include={
        "estimate": ["AC", "GDE"], "rank": ["AC", "GDE", "CRC-mean", "EnsembleAgreement"],
        "fewlabel": ["SRS+labels", "ModelPicker", "CODA"]}, budgets=(10, 20), n_runs=3)
    A = card.truth.set_index(["set", "model"])["accuracy"]
    acc = {s: A.loc[s].to_numpy() for s in probs}
    assert not np.array_equal(acc["a"], acc["b"])
    for row in card.ranking.itertuples():
        if row.method in core.BASELINES:
            continue
        sc = outs.get(("rank", row.method, row.set), outs.get(("estimate", row.method, row.set)))
        want = spearman(sc, acc[row.set]), kendall_tau_b(sc, acc[row.set])
        np.testing.assert_array_equal([row.spearman, row.kendall], want)
    assert len(card.fewlabel) == 3 * 2 * 2 * 3
    for row in card.fewlabel.itertuples():
        sc = outs[("fewlabel", row.method, row.set)].scores[row.run, [10, 20].index(row.budget)]
        want = spearman(sc, acc[row.set]), kendall_tau_b(sc, acc[row.set])
        np.testing.assert_array_equal([row.spearman, row.kendall], want)


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
    assert set(rank["method"]) == ({m.name for m in core.methods("rank")} - skip
                                   | {core.SOURCE_RANKING, core.SIZE_RANKING})  # all listed
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
    card = score_zoo(probs, labels, kinds, include=FAST, budgets=(10,), n_runs=2,
                     model_sizes=[1, 2, 3, 4])
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


def _two_model_zoo():
    """Two models, K = 2, four inputs: m0 always says 0, m1 always says 1. On the source set
    `clean` (labels 0 0 0 1) m0 is right on 3 of 4, m1 on 1; on `a` (labels 0 1 1 1) the
    reverse: accuracy 0.75/0.25 at the source, 0.25/0.75 under shift."""
    p0 = np.tile([0.9, 0.1], (4, 1))
    probs = np.stack([p0, p0[:, ::-1]])
    labels = {"clean": np.array([0, 0, 0, 1]), "a": np.array([0, 1, 1, 1])}
    return {s: probs for s in labels}, labels, {"clean": "source", "a": "noise"}


def test_trivial_baselines_by_hand():
    """No shift: each model's source accuracy as its estimate (0.75, 0.25 against 0.25, 0.75 on
    `a`: MAE 0.5); source-accuracy ranking: exactly reversed on `a` (Spearman -1, regret 0.5);
    model size (10, 20 parameters): right (Spearman 1, regret 0). Estimation and ranking are
    reported apart, in their own tables."""
    probs, labels, kinds = _two_model_zoo()
    card = score_zoo(probs, labels, kinds, include={"estimate": ["AC"], "rank": ["AC"],
                                                    "fewlabel": []}, model_sizes=[10, 20])
    est = card.summary["estimation"].set_index(["method", "shift"])
    assert est.loc[(core.NO_SHIFT, "noise"), "mae"] == pytest.approx(0.5)
    assert est.loc[(core.NO_SHIFT, "source (sanity)"), "mae"] == pytest.approx(0.0)
    rank = card.summary["ranking"].set_index(["method", "shift"])
    assert rank.loc[(core.SOURCE_RANKING, "noise"), "spearman"] == pytest.approx(-1)
    assert rank.loc[(core.SOURCE_RANKING, "noise"), "regret"] == pytest.approx(0.5)
    assert rank.loc[(core.SIZE_RANKING, "noise"), "spearman"] == pytest.approx(1)
    assert rank.loc[(core.SIZE_RANKING, "noise"), "regret"] == pytest.approx(0)
    assert core.NO_SHIFT not in set(card.summary["ranking"]["method"])
    assert core.SOURCE_RANKING not in set(card.summary["estimation"]["method"])
    best = report.best_per_kind(card)  # which-method-when names methods, not baselines
    assert not set(best["estimator"]) & core.BASELINES and not set(best["ranker"]) & core.BASELINES


def test_baselines_say_why_they_are_not_available():
    probs, labels, kinds = _two_model_zoo()
    fast = {"estimate": ["AC"], "rank": ["AC"], "fewlabel": []}
    card = score_zoo(probs, labels, kinds, include=fast)  # no parameter counts
    rank = card.summary["ranking"].set_index("method")
    assert rank.loc[core.SIZE_RANKING, "note"] == (
        "not available: the zoo's meta gives no parameter count")
    card = score_zoo({"a": probs["a"]}, {"a": labels["a"]}, {"a": "noise"}, include=fast,
                     model_sizes=[1, 2])  # no source set
    est = card.summary["estimation"].set_index("method")
    assert est.loc[core.NO_SHIFT, "note"] == "not available: no labelled source set"
    assert card.summary["ranking"].set_index("method").loc[core.SOURCE_RANKING, "note"] == (
        "not available: no labelled source set")
