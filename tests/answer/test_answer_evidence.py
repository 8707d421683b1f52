"""The answer's estimator chosen on held-out labelled sets, its split-conformal interval, the
coverage it states and the no-trust message (labelfree.answer; values by hand)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from labelfree.answer import (
    CROSS_KIND,
    NO_EVIDENCE,
    answer_table,
    build,
    choose_estimator,
    conformal_quantile,
    coverage,
    evidence_sets,
    min_cases,
    render,
)
from labelfree.answer import (
    TestSet as Set,
)
from labelfree.numerics import softmax

from .test_answer import synthetic_zoo


def _one_each(v) -> list[np.ndarray]:
    return [np.array([x]) for x in v]


def test_conformal_quantile_with_one_case_per_set_is_the_textbook_rank():
    """ceil((n + 1) * level)-th smallest score; infinite when that rank exceeds n."""
    s = np.array([0.05, 0.01, 0.10, 0.03, 0.07, 0.02, 0.09, 0.04, 0.08, 0.06])  # 0.01 .. 0.10
    assert conformal_quantile(_one_each(s), 0.9) == pytest.approx(0.10)  # ceil(9.9) = 10
    assert conformal_quantile(_one_each(s), 0.8) == pytest.approx(0.09)  # ceil(8.8) = 9
    assert conformal_quantile(_one_each(s), 0.5) == pytest.approx(0.06)  # ceil(5.5) = 6
    assert conformal_quantile(_one_each(s[:5]), 0.9) == np.inf  # ceil(5.4) = 6 > 5
    assert conformal_quantile([], 0.9) == np.inf


def test_conformal_quantile_counts_sets_not_cases():
    """Eight sets of 20 models: 160 cases would give a finite case-pooled quantile at 0.9, but
    eight sets are too few (nine needed). Ten sets, one of ten models at error 0.01 and nine of
    one model at 0.02 .. 0.10: each set weighs one, so the rule needs all ten sets (0.10), where
    pooling the 19 cases would stop at the 18th smallest (0.09)."""
    eight = [np.full(20, 0.01 * (j + 1)) for j in range(8)]
    assert conformal_quantile(eight, 0.9) == np.inf
    ten = [np.full(10, 0.01)] + _one_each(np.arange(2, 11) / 100)
    assert conformal_quantile(ten, 0.9) == pytest.approx(0.10)
    # within a set, models count by their share: half of set 0 below 0.05, half above
    two_level = [np.array([0.01, 0.5])] + _one_each(np.full(9, 0.02))
    assert conformal_quantile(two_level, 0.9) == pytest.approx(0.5)  # 9 + 0.5 < 9.9
    assert conformal_quantile(two_level, 0.85) == pytest.approx(0.02)  # 9 + 0.5 >= 9.35


def test_conformal_interval_covers_a_new_set_when_errors_move_together():
    """Simulation: each set shifts every model's error by one shared offset (the case the rule is
    for), 12 held-out sets of 5 models; over 3000 draws a model of a new set is covered at least
    at the level (up to sampling error: 0.90 - 3 standard errors). Counting the 60 cases as
    exchangeable would under-cover here."""
    rng = np.random.default_rng(0)
    hits = []
    for _ in range(3000):
        err = np.abs(rng.normal(0, 1, (13, 1)) + rng.normal(0, 0.1, (13, 5)))
        q = conformal_quantile(list(err[:12]), 0.9)
        hits.append((err[12] <= q).mean())
    assert np.mean(hits) >= 0.9 - 3 * np.std(hits) / np.sqrt(len(hits))


def _hand_zoo():
    """Three labelled shifted sets a, b, c (two models), estimator GOOD off by 0.01 on a and b,
    BAD off by 0.20 there; on c (the target) BAD happens to be exact."""
    truth = {"a": np.array([0.8, 0.6]), "b": np.array([0.7, 0.5]), "c": np.array([0.9, 0.4])}
    est = {"BAD": {"a": truth["a"] + 0.2, "b": truth["b"] - 0.2, "c": truth["c"].copy()},
           "GOOD": {"a": truth["a"] + 0.01, "b": truth["b"] - 0.01, "c": truth["c"] + 0.3}}
    return truth, est


def test_the_estimator_best_on_the_other_sets_is_chosen():
    truth, est = _hand_zoo()
    c = choose_estimator("c", est, truth, None, None, has_source=False)
    assert c.method == "GOOD" and c.sets == ("a", "b")
    assert c.mae == pytest.approx(0.01) and len(c.errors) == 4 and len(c.by_set) == 2
    assert c.basis == "all other labelled shifted sets"


def test_a_sets_own_labels_never_choose_its_estimator():
    """Target c's labels make BAD exact on c, yet GOOD is chosen; any truth on c gives the same
    choice, evidence and errors."""
    truth, est = _hand_zoo()
    ref = choose_estimator("c", est, truth, None, None, False)
    for fake in (np.array([0.0, 0.0]), est["BAD"]["c"], est["GOOD"]["c"]):
        c = choose_estimator("c", est, {**truth, "c": fake}, None, None, False)
        assert (c.method, c.sets, c.mae) == (ref.method, ref.sets, ref.mae)
        np.testing.assert_array_equal(c.errors, ref.errors)


def test_the_same_kind_of_shift_is_preferred_and_the_source_is_never_evidence():
    labelled = ["id", "n1", "n2", "c1"]
    kinds = {"id": "source", "n1": "noise", "n2": "noise", "c1": "blur", "n3": "noise",
             "x": "other"}
    assert evidence_sets("n1", labelled, kinds, "id") == (
        ("n2",), "same kind of shift (`noise`)", True)
    assert evidence_sets("n3", labelled, kinds, "id")[0] == ("n1", "n2")
    assert evidence_sets("id", labelled, None, "id")[0] == ("n1", "n2", "c1")
    # the source set itself is judged on every other set, and they calibrate its interval
    assert evidence_sets("id", labelled, kinds, "id") == (
        ("n1", "n2", "c1"), "all other labelled shifted sets", True)
    # without kinds every other set judges and calibrates
    assert evidence_sets("x", labelled, None, "id") == (
        ("n1", "n2", "c1"), "all other labelled shifted sets", True)


def test_a_kind_with_too_few_sets_chooses_on_the_others_but_gets_no_interval():
    labelled = ["id", "n1", "n2", "c1"]
    kinds = {"id": "source", "n1": "noise", "n2": "noise", "c1": "blur", "x": "other"}
    # a kind of its own: the other kinds choose the estimator, but do not calibrate
    sets, basis, calibrates = evidence_sets("x", labelled, kinds, "id")
    assert sets == ("n1", "n2", "c1") and basis.startswith(CROSS_KIND) and not calibrates
    # too few of its kind for a finite interval: the same
    sets, basis, calibrates = evidence_sets("n1", labelled, kinds, "id", min_sets=2)
    assert sets == ("n2", "c1") and basis.startswith(CROSS_KIND) and not calibrates
    assert "1 other labelled set(s) of kind `noise`, 2 needed" in basis


def test_the_interval_of_a_new_kind_is_unbounded_and_untrusted():
    """Ten labelled sets of kind `a` bound each other's intervals; a set of kind `b` gets its
    estimator from them but no interval (a bug that still calibrated it on `a` would give a
    finite half-width)."""
    rng = np.random.default_rng(0)
    m, n = 3, 200
    sets = [Set("id", rng.dirichlet(np.ones(4), (m, n)).astype(np.float32),
                    rng.integers(0, 4, n))]
    names = [f"a{i}" for i in range(10)] + ["b0"]
    for t in names:
        sets.append(Set(t, rng.dirichlet(np.ones(4), (m, n)).astype(np.float32),
                            rng.integers(0, 4, n)))
    kinds = {"id": "source", **{t: t[0] for t in names}}
    table = answer_table([f"m{j}" for j in range(m)], sets, "id", n_boot=5, kinds=kinds,
                         estimators=["AC", "ATC-MC"])
    a = table[table.testset == "a0"].iloc[0]
    b = table[table.testset == "b0"].iloc[0]
    assert np.isfinite(a.halfwidth) and a.basis == "same kind of shift (`a`)"
    assert not np.isfinite(b.halfwidth) and b.basis.startswith(CROSS_KIND) and not b.trusted
    assert b.evidence_sets == 10 and (b.interval_low, b.interval_high) == (0.0, 1.0)


def test_min_cases_for_a_finite_interval():
    assert min_cases(0.9) == 9 and min_cases(0.8) == 4 and min_cases(0.5) == 1
    for level in (0.5, 0.8, 0.9, 0.95):
        n = min_cases(level)
        assert np.isfinite(conformal_quantile(_one_each(np.arange(n)), level))
        assert not np.isfinite(conformal_quantile(_one_each(np.arange(n - 1)), level)) or n == 1


def test_the_stated_default_without_evidence():
    est = {"AC": {"s": np.array([0.5])}, "ATC-MC": {"s": np.array([0.6])}}
    c = choose_estimator("s", est, {}, None, "id", has_source=True)
    assert c.method == "ATC-MC" and c.basis == NO_EVIDENCE and np.isnan(c.mae)
    assert choose_estimator("s", est, {}, None, None, has_source=False).method == "AC"


def _zoo(n_sets=12, n=300, seed=0):
    lg, y = synthetic_zoo([0.5, 0.9, 0.7], n=600, seed=seed)
    logits, labels, kinds = {"id": lg}, {"id": y}, {"id": "source"}
    for i in range(n_sets):
        lg_i, y_i = synthetic_zoo([0.4, 0.8, 0.6], n=n, seed=seed + 10 + i, conf=2.0 + 0.1 * i)
        logits[f"s{i}"], labels[f"s{i}"], kinds[f"s{i}"] = lg_i, y_i, "noise"
    return logits, labels, kinds


def test_answer_table_rows_do_not_depend_on_their_sets_labels():
    """End to end: relabelling set s0 changes its true accuracy and coverage only."""
    logits, labels, kinds = _zoo(n_sets=4)
    names = ["a", "b", "c"]
    sets = [Set(t, softmax(lg), labels[t], lg) for t, lg in logits.items()]
    est = ["AC", "ATC-MC", "DoC"]
    t1 = answer_table(names, sets, "id", n_boot=20, kinds=kinds, estimators=est)
    y = labels["s0"].copy()
    y[: len(y) // 2] = (y[: len(y) // 2] + 1) % 5
    sets2 = [Set(s.name, s.probs, y if s.name == "s0" else s.labels, s.logits) for s in sets]
    t2 = answer_table(names, sets2, "id", n_boot=20, kinds=kinds, estimators=est)
    cols = ["estimator", "evidence", "evidence_mae", "estimated_accuracy", "interval_low",
            "interval_high", "spread_low", "spread_high"]
    r1, r2 = t1[t1.testset == "s0"], t2[t2.testset == "s0"]
    pd.testing.assert_frame_equal(r1[cols], r2[cols])
    assert not np.allclose(r1["true_accuracy"], r2["true_accuracy"])
    assert set(t1["estimator"]) <= set(est)


def test_interval_is_the_conformal_quantile_around_the_estimate_and_coverage_is_measured():
    logits, labels, kinds = _zoo(n_sets=12)
    table, plan, first, top = build("z", ["a", "b", "c"], logits, labels, "id", 10, 0,
                                    n_boot=20, kinds=kinds, level=0.9,
                                    estimators=["AC", "ATC-MC", "DoC"])
    r = table[table.testset == "s3"]
    q = r["halfwidth"].iloc[0]
    assert np.isfinite(q) and r["evidence_cells"].iloc[0] == 33  # 11 other sets x 3 models
    assert r["evidence_sets"].iloc[0] == 11
    np.testing.assert_allclose(r["interval_high"], np.clip(r["estimated_accuracy"] + q, 0, 1))
    np.testing.assert_allclose(r["interval_low"], np.clip(r["estimated_accuracy"] - q, 0, 1))
    cov, n = coverage(table)
    assert n == 36  # 12 labelled shifted sets x 3 models; the source set is not counted
    assert cov == table.loc[table.testset != "id", "covered"].mean()
    md = render("z", table, plan, first, top)
    assert "90 % split-conformal prediction interval" in md and "sampling spread" in md
    assert f"{100 * cov:.1f} % of 36 (set, model) cases" in md


def test_coverage_of_a_hand_table():
    t = pd.DataFrame({"covered": [1.0, 0.0, 1.0, np.nan]})
    assert coverage(t) == (pytest.approx(2 / 3), 3)
    assert np.isnan(coverage(t.iloc[3:])[0])


def test_no_evidence_says_so_first_and_recommends_pace():
    """Only the source set is labelled: no held-out evidence, so no trusted number."""
    lg, y = synthetic_zoo([0.5, 0.9])
    table, plan, first, top = build("z", ["m0", "m1"], {"shift": lg[:, :300], "id": lg},
                                    {"id": y, "shift": None}, "id", 10, 0, n_boot=20)
    md = render("z", table, plan, first, top)
    head = "\n".join(md.splitlines()[:5])
    assert ("no trustworthy label-free accuracy estimate (no labelled shifted set to judge "
            "estimators on): label the 10 inputs PACE picked") in md.splitlines()[2]
    assert "No trustworthy label-free accuracy estimate on `shift`" in head
    assert "no labelled shifted set" in head and "`label-these.csv`" in head
    assert "label the 10 inputs of `shift`" in head
    assert "Coverage cannot be measured" in md
    assert not table["trusted"].any()


def test_an_estimator_off_by_more_than_the_threshold_is_not_trusted():
    logits, labels, kinds = _zoo(n_sets=12)
    table, plan, first, top = build("z", ["a", "b", "c"], logits, labels, "id", 10, 0,
                                    n_boot=20, kinds=kinds, max_mae=1e-6,
                                    estimators=["AC", "DoC"])
    assert not table["trusted"].any()
    md = render("z", table, plan, first, top, max_mae=1e-6)
    assert "above the 0-point threshold): label the 10" in md.splitlines()[2]
    assert md.splitlines()[4].startswith("**No trustworthy")
    assert "above the 0-point threshold" in md.splitlines()[4]
