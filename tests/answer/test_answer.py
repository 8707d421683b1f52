"""One answer per zoo: ranking, estimates with intervals, PACE's plan."""

from __future__ import annotations

import numpy as np
import pandas as pd

from labelfree.answer import (
    answer_table,
    atc_threshold,
    bootstrap_interval,
    build,
    render,
    scorecard_summary,
)


def synthetic_zoo(accs, n=600, k=5, seed=0, conf=3.0):
    """Logits of models with independent errors at the given accuracies, and the labels."""
    gen = np.random.default_rng(seed)
    y = gen.integers(0, k, n)
    logits = []
    for a in accs:
        right = gen.random(n) < a
        pred = np.where(right, y, (y + gen.integers(1, k, n)) % k)
        z = gen.normal(size=(n, k))
        z[np.arange(n), pred] += conf
        logits.append(z)
    return np.stack(logits), y


def test_laf_ranks_a_well_separated_zoo_and_true_accuracy_is_exact():
    models = ["weak", "best", "mid"]
    lg, y = synthetic_zoo([0.45, 0.9, 0.7])
    table, plan, first, top = build("z", models, {"id": lg}, {"id": y}, "id", budget=30, seed=0)
    main = table.set_index("model")
    assert top == "best" and list(main.sort_values("laf_rank").index) == ["best", "mid", "weak"]
    np.testing.assert_allclose(main.loc["best", "true_accuracy"],
                               (lg[1].argmax(1) == y).mean())
    assert len(plan) == 30 and len(set(plan)) == 30 and plan.max() < 600
    assert (main["interval_low"] <= main["estimated_accuracy"]).all()
    assert (main["estimated_accuracy"] <= main["interval_high"]).all()


def test_average_confidence_by_hand_and_atc_on_other_sets():
    """AC = mean max-probability (hand case); on a non-source set the estimator is ATC-MC,
    whose threshold (the registry's, as in the ATC authors' code) gives the source accuracy
    plus one input on the source set."""
    from labelfree.answer import TestSet

    p = np.array([[[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.5, 0.5]]])  # (1, 4, 2)
    t = answer_table(["m"], [TestSet("id", p, None)], source=None, n_boot=50)
    assert t["estimator"].iloc[0] == "AC"
    np.testing.assert_allclose(t["estimated_accuracy"].iloc[0], (0.9 + 0.6 + 0.7 + 0.5) / 4)
    lg, y = synthetic_zoo([0.8, 0.6], n=2000)
    probs = np.exp(lg) / np.exp(lg).sum(2, keepdims=True)
    thr = atc_threshold(probs, y)
    acc = (probs.argmax(2) == y).mean(1)
    # the registry's rule (sort, >=): on the source itself, its accuracy plus one input
    np.testing.assert_allclose((probs.max(2) >= thr[:, None]).mean(1), acc + 1 / 2000,
                               rtol=0, atol=1e-12)
    sets = [TestSet("id", probs, y), TestSet("shift", probs[:, :1000], None)]
    t = answer_table(["a", "b"], sets, source="id", n_boot=50)
    assert list(t[t.testset == "shift"]["estimator"].unique()) == ["ATC-MC"]
    assert t[t.testset == "shift"]["true_accuracy"].isna().all()


def test_answer_atc_equals_the_registry_atc_mc():
    """One ATC-MC: the answer's estimate on a shifted set is the registry's (the scorecard's)."""
    from labelfree.answer import TestSet
    from labelfree.methods.registry import call
    from labelfree.numerics import softmax

    lg, y = synthetic_zoo([0.8, 0.6, 0.7], n=1500, seed=3)
    probs = softmax(lg)
    shifted = softmax(lg[:, 500:] * 0.7)
    t = answer_table(["a", "b", "c"], [TestSet("id", probs, y), TestSet("s", shifted, None)],
                     source="id", n_boot=20)
    got = t[t.testset == "s"]["estimated_accuracy"].to_numpy()
    ref = call("estimate", "ATC-MC", shifted, source_probs=probs, source_labels=y)
    np.testing.assert_array_equal(got, ref)


def test_bootstrap_interval_narrows_with_more_inputs():
    gen = np.random.default_rng(1)
    small = gen.random((1, 100))
    large = gen.random((1, 10000))
    lo_s, hi_s = bootstrap_interval(small, 300, 0)
    lo_l, hi_l = bootstrap_interval(large, 300, 0)
    assert (hi_s - lo_s)[0] > 5 * (hi_l - lo_l)[0]
    assert lo_l[0] < large.mean() < hi_l[0]


def test_render_lists_models_in_rank_order_and_the_plan():
    lg, y = synthetic_zoo([0.5, 0.9])
    table, plan, first, top = build("z", ["m0", "m1"], {"id": lg, "shift": lg[:, :300]},
                                    {"id": y, "shift": None}, "id", 10, 0)
    md = render("z", table, plan, first, top)
    assert md.index("`m1`") < md.index("`m0`")
    assert "`shift`" in md and "label these 10 inputs" in md


def test_answer_of_one_model_says_there_is_nothing_to_rank():
    lg, y = synthetic_zoo([0.8])
    table, plan, first, top = build("z", ["m0"], {"id": lg}, {"id": y}, "id", 10, 0)
    md = render("z", table, plan, first, top)
    assert "One model, so nothing to rank; test set `id`" in md
    assert "ranked without labels by LaF" not in md
    two = render("z", *build("z", ["m0", "m1"], {"id": np.concatenate([lg, lg])},
                             {"id": y}, "id", 10, 0))
    assert "Models ranked without labels by LaF on test set `id`" in two


def test_scorecard_summary_names_the_best_methods_per_kind_or_why_none():
    """Issue 18 item 4: the answer summarises the zoo's which-method-when table (the rows of
    labelfree.scorecard.report.best_per_kind, values written here by hand); MAE in points."""
    best = pd.DataFrame({
        "shift": ["corruptions", "macro", "natural", "overall", "source (sanity)"],
        "estimator": ["COTT", "COTT", "COT", "COTT", "AC"],
        "mae": [0.0526, 0.0509, 0.0437, 0.0519, 0.001],
        "ranker": ["COT", "COTT", "COTT", "COT", "AC"],
        "spearman": [0.6025, 0.5879, 0.6395, 0.5949, 1.0]})
    text = scorecard_summary("laf_tight", best)
    assert "extra-laf_tight-best.csv" in text
    assert "over all shifted test sets, best estimator and ranker: COTT (MAE 5.2 points), " \
           "COT (Spearman 0.59)" in text
    assert "on `natural`: COT (MAE 4.4 points), COTT (Spearman 0.64)" in text
    assert "on `corruptions`: COTT (MAE 5.3 points)" in text
    assert "macro" not in text and "sanity" not in text
    assert scorecard_summary("one", None, "zoo 'one' has 1 model(s)") == \
        "Scorecard: none for this zoo: zoo 'one' has 1 model(s)"


def test_scorecard_summary_of_a_one_model_zoo_names_its_best_estimator():
    """Issue 18: a zoo of one model has a scorecard too (estimation only): its answer names the
    best estimator over the shifted sets and per kind, and says ranking is not applicable
    (rows as labelfree.scorecard.report.best_per_kind writes them; values by hand)."""
    from labelfree.scorecard.core import ONE_MODEL

    best = pd.DataFrame({
        "shift": ["macro", "metamorphic_c15", "metamorphic_followups", "overall", "source (sanity)"],
        "estimator": ["ATC-MC", "DoC", "ATC-MC", "ATC-MC", "DoC"],
        "mae": [0.031, 0.05, 0.012, 0.02, 0.0],
        "ranker": [ONE_MODEL] * 5, "spearman": [np.nan] * 5,
        "note": ["ranking and model selection not applicable: one model"] * 5})
    text = scorecard_summary("metamorphic_biased", best)
    assert text.startswith(
        "Scorecard (`results/scorecard/tables/extra-metamorphic_biased-best.csv`")
    assert "over all shifted test sets, best estimator: ATC-MC (MAE 2.0 points)" in text
    assert "on `metamorphic_c15`: DoC (MAE 5.0 points)" in text and "Spearman" not in text
    assert text.endswith("Ranking and model selection: not applicable: one model (nothing to rank).")
    # a one-model zoo scored on its source set only (alphatrim_backbone in the default run)
    src = best[best["shift"] == "source (sanity)"]
    text = scorecard_summary("alphatrim_backbone", src)
    assert "only the source set is scored" in text and "best estimator there: DoC" in text


def test_scorecard_summary_of_an_unscored_zoo_gives_the_scorecards_reason():
    best = pd.DataFrame({"shift": ["all"], "estimator": [np.nan], "mae": [np.nan],
                         "ranker": [np.nan], "spearman": [np.nan],
                         "note": ["multi-label labels only (id, metamorphic-ml)"]})
    text = scorecard_summary("metamorphic_multilabel", best)
    assert text.endswith("none for this zoo: multi-label labels only (id, metamorphic-ml).")


def test_multi_label_sets_are_out_of_scope_said_plainly_and_counted_as_unlabelled():
    """A multi-hot (N, K) label array has no single-label accuracy: the answer must neither
    compare argmax with it (a broadcast or an index error) nor stay silent; it says the set is
    out of scope and gives it no true accuracy, no evidence and no coverage."""
    from labelfree.answer import answer

    lg, y = synthetic_zoo([0.8, 0.6], n=200)
    multi = np.eye(5, dtype=np.int64)[y]  # (200, 5) multi-hot, one label each
    a = answer("ml", ["a", "b"], {"id": lg, "ml": lg}, {"id": y, "ml": multi}, "id",
               budget=10, n_boot=10)
    ml = a.table[a.table["testset"] == "ml"]
    assert ml["true_accuracy"].isna().all() and ml["covered"].isna().all()
    assert "Out of scope: `ml` has multi-label (multi-hot) labels" in a.markdown
    # every set multi-label: the page says so before the no-trust lines
    b = answer("ml", ["a", "b"], {"ml": lg}, {"ml": multi}, None, budget=10, n_boot=10)
    assert b.table["true_accuracy"].isna().all()
    lines = b.markdown.splitlines()
    out = next(i for i, t in enumerate(lines) if t.startswith("Out of scope"))
    trust = next(i for i, t in enumerate(lines) if "No trustworthy" in t)
    assert out < trust
    # single-label labels: no such line
    assert "Out of scope" not in answer("z", ["a", "b"], {"id": lg}, {"id": y}, "id", budget=10,
                                        n_boot=10).markdown
