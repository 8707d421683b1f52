"""Published-number fixtures and size bins: metamorphic.md section 8, checks 9 and 10."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from labelfree.metamorphic import analysis as an
from labelfree.metamorphic import report as tb
from labelfree.metamorphic.oracle import Verdicts

# Table 5 (spec 5, RQ3): reproduced accuracy and MR-1 / MR-2 / MR-1&2 ratios, in %
TABLE5 = np.array([
    [79.0, 0.95, 10.39, 0.58], [71.3, 0.73, 15.14, 0.64], [71.3, 0.71, 15.80, 0.61],
    [74.9, 0.68, 14.01, 0.53], [76.4, 0.90, 12.93, 0.70], [76.6, 0.87, 12.34, 0.69],
    [75.3, 0.66, 14.30, 0.57], [76.9, 0.70, 11.98, 0.55], [77.7, 0.82, 11.30, 0.65],
    [77.9, 1.04, 11.98, 0.75], [80.4, 1.71, 9.94, 0.97], [70.3, 0.63, 18.83, 0.55],
    [71.2, 0.79, 18.08, 0.63], [75.0, 0.74, 11.60, 0.58], [76.2, 0.89, 10.91, 0.69],
    [77.3, 0.86, 11.11, 0.67], [73.8, 1.25, 17.64, 0.94], [82.7, 2.00, 8.79, 0.93],
])
# Table 7 (spec 5, RQ5): original and MR-2 reliable accuracy, in %
TABLE7_ORIG = [79.02, 71.27, 71.26, 74.93, 76.42, 76.60, 75.34, 76.89, 77.73, 77.87, 80.41,
               70.34, 71.19, 74.97, 76.18, 77.32, 73.77, 82.68]
TABLE7_MR2_REL = [86.40, 82.01, 81.82, 84.05, 85.01, 85.07, 84.21, 85.08, 85.44, 85.95, 87.10,
                  82.65, 82.08, 83.64, 84.59, 85.13, 84.60, 88.40]


def test_table4_cramers_v_yates():
    _, p1, v1 = an.cramers_v(np.array([[169, 52], [63, 35323]]))
    _, p2, v2 = an.cramers_v(np.array([[5145, 1467], [249, 28773]]))
    assert round(v1, 3) == 0.743 and round(v2, 3) == 0.835
    assert p1 < 1e-3 and p2 < 1e-3
    _, _, v1_plain = an.cramers_v(np.array([[169, 52], [63, 35323]]), yates=False)
    assert round(v1_plain, 3) == 0.745


def test_table5_pearson():
    r = [an.pearson(TABLE5[:, 0], TABLE5[:, j]) for j in (1, 2, 3)]
    assert [round(v, 3) for v in r] == [0.702, -0.902, 0.501]


def test_table7_exact_wilcoxon():
    p = an.wilcoxon_greater(TABLE7_MR2_REL, TABLE7_ORIG)
    assert p == pytest.approx(2.0**-18) and f"{p:.2e}" == "3.81e-06"


def test_table8_mean_mr2_gain():
    """Spec 8.9: Table 8 (COCO: original 34.5/45.5/47.9, MR-2 reliable 48.29/72.45/73.03 %) ->
    mean MR-2 gain 21.96 pp, through the report's RQ5 table (tables._wilcoxon)."""
    mains = pd.DataFrame({"zoo": "coco", "acc": [0.345, 0.455, 0.479],
                          "non_MR2_acc": [0.4829, 0.7245, 0.7303],
                          "non_MR1_acc": [0.345, 0.455, 0.479], "non_MR1&2_acc": [0.345, 0.455, 0.479]})
    w = tb._wilcoxon(mains, None)
    mr2 = w[(w["models"] == "all models") & (w["MR"] == "MR-2")].iloc[0]
    assert round(float(mr2["mean_gain_pp"]), 2) == 21.96 and mr2["n_models"] == 3


def test_cochran_sample_sizes():
    """Spec 8.9 / Tables 2-3: flags 3,634 / 4,942 / 6,622 / 957 / 4,732 -> samples 348 / 357 /
    364 / 275 / 356 (Cochran, z 1.96, e 0.05, p 0.5, finite-population correction, rounded up)."""
    got = [an.cochran(n) for n in (3634, 4942, 6622, 957, 4732)]
    assert got == [348, 357, 364, 275, 356]


def test_cochran_hand_cases_small_populations():
    """Hand computation of n = ceil(n0 / (1 + (n0 - 1) / N)), n0 = 1.96^2 * 0.25 / 0.05^2 = 384.16.

    The paper-sized populations above do not separate the finite-population correction's
    (n0 - 1) from a mistyped n0 or N - 1; small ones do:
    N = 29: 384.16 / (1 + 383.16/29) = 27.03 -> 28 (with n0 in place of n0 - 1: 26.93 -> 27);
    N = 2: 384.16 / (1 + 383.16/2) = 1.995 -> 2 (with N - 1: 1.0 -> 1); N = 1 -> 1 (all of it);
    N -> infinity: ceil(384.16) = 385; no flags -> 0.
    Spec section 9 item 10: Table 1's totals 826 / 344 / 222 give Cochran 263 / 182 / 141."""
    assert [an.cochran(n) for n in (1, 2, 29, 10**9, 0)] == [1, 2, 28, 385, 0]
    assert [an.cochran(n) for n in (826, 344, 222)] == [263, 182, 141]
    # never more than the population, and monotone in it
    sizes = [an.cochran(n) for n in range(1, 2000)]
    assert all(s <= n for s, n in zip(sizes, range(1, 2000), strict=True))
    assert all(a <= b for a, b in zip(sizes, sizes[1:], strict=False))


def test_vgg16_mr1_ratio():
    """Spec 8.9: Table 5's VGG16 MR-1 259 of 35,634 correct -> 0.73%, through our summary row
    (flags AND correct / #correct) and the prevalence table's formatting."""
    n, correct, flagged = 50000, 35634, 259
    c = np.zeros(n, bool)
    c[:correct] = True
    mr1 = np.zeros(n, bool)
    mr1[:flagged] = True  # flagged and correct
    mr1[-40:] = True  # flagged but incorrect: not counted (spec 2.3 "violated AND correct")
    z = np.zeros(n, bool)
    v = Verdicts(pred=np.zeros(n, int), correct=c, certainty=np.zeros(n), mr1_ok=np.ones((n, 3), bool),
                 mr2_ok=np.ones((n, 3), bool), mr1=mr1, mr2=z, mr12=z, has_region=np.ones(n, bool))
    row = an.summary_row(v)
    assert row["MR1_correct"] == 259 and row["acc_num"] == 35634 and row["MR1"] == 299
    mains = pd.DataFrame([{**row, "zoo": "z", "model": "vgg16", "role": "unbiased", "base": "b",
                           "task": "single"}])
    assert tb._prevalence(mains)["MR-1"].iloc[0] == "259 (0.73%)"


def test_rq1_export_draws_cochran_sized_samples_of_flags():
    """Spec 5 RQ1 "Sampling": per model and MR, Cochran's size drawn uniformly without replacement
    from the flags (violated AND correct), seeded; NASNetLarge's 3,634 MR-2 flags -> 348 (Table 2)."""
    n = 5000
    r = np.random.default_rng(0)
    correct = np.ones(n, bool)
    correct[-300:] = False
    mr2 = np.zeros(n, bool)
    mr2[:3634] = True
    mr2[-100:] = True  # flagged but incorrect: never sampled
    mr1 = r.random(n) < 0.02
    images = pd.DataFrame({"zoo": "z", "model": "nasnet", "base": "b", "colourset": "c3",
                           "id": np.arange(n), "gt": 0, "pred": 0, "certainty": 0.5, "area_ratio": 0.1,
                           "correct": correct, "mr1": mr1, "mr2": mr2})
    study = {"zoos": {"z": {"role": "unbiased", "main": "b"}}, "colourset_main": "c3",
          "rq1": {"base": "b", "models": [], "z": 1.96, "e": 0.05, "seed": 0}}
    sizes, sample = tb.rq1_annotation(images, pd.DataFrame(), study)
    s2 = sizes[sizes["MR"] == "MR-2"].iloc[0]
    assert s2["total_flags"] == 3634 and s2["cochran_sample"] == 348
    got = sample[sample["MR"] == "MR-2"]["id"].to_numpy()
    assert len(got) == 348 and len(set(got)) == 348 and got.max() < 3634  # flags AND correct only
    s1 = sizes[sizes["MR"] == "MR-1"].iloc[0]
    assert s1["total_flags"] == int((mr1 & correct).sum())
    assert s1["cochran_sample"] == an.cochran(s1["total_flags"]) == (sample["MR"] == "MR-1").sum()
    _, again = tb.rq1_annotation(images, pd.DataFrame(), study)
    assert again.equals(sample)  # seeded


def test_contingency_layout():
    a = np.array([1, 1, 0, 0, 1], dtype=bool)  # 3 colours
    b = np.array([1, 0, 1, 0, 1], dtype=bool)  # 15 colours
    assert an.contingency(a, b).tolist() == [[2, 1], [1, 1]]


# ---- 8.10 size bins ---------------------------------------------------------------------------


def test_size_bins_edges():
    assert an.size_bin(np.array([1.0, 0.95, 0.0, 0.049999, 0.05, 0.3])).tolist() == [20, 19, 0, 0, 1, 6]


def test_size_bin_denominator_counts_all_images():
    ratio = np.array([0.01, 0.02, 0.03, 0.5, 1.0, 1.0])
    flagged_correct = np.array([1, 0, 0, 1, 0, 1], dtype=bool)
    x, rate, count = an.size_bin_rates(ratio, flagged_correct)
    assert count[0] == 3 and rate[0] == pytest.approx(1 / 3)
    assert rate[10] == 1.0 and rate[20] == 0.5
    assert np.isnan(rate[5])
    assert x[0] == pytest.approx(0.025) and x[20] == 1.0
    xl, _, _ = an.size_bin_rates(ratio, flagged_correct, x_position="left")
    assert xl[20] == pytest.approx(1.0) and xl[1] == pytest.approx(0.05)


def test_flag_frequency_fig6():
    flags = np.array([[1, 1, 0, 0, 1], [0, 1, 0, 0, 1], [0, 1, 0, 0, 0]], dtype=bool)
    assert an.flag_frequency(flags).tolist() == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    # an asymmetric case: per-input counts (1, 1, 1, 2, 3, 0) -> among the 5 flagged inputs,
    # 3 flagged by exactly one model, 1 by two, 1 by three
    flags = np.array([[1, 0, 0, 1, 1, 0], [0, 1, 0, 1, 1, 0], [0, 0, 1, 0, 1, 0]], dtype=bool)
    assert an.flag_frequency(flags).tolist() == pytest.approx([3 / 5, 1 / 5, 1 / 5])
    assert np.isnan(an.flag_frequency(np.zeros((2, 4), bool))).all()


def test_followup_validity_from_hidden_instances():
    inst = np.zeros((3, 2, 8, 8), dtype=bool)
    inst[:, 0, 1:4, 1:4] = True  # annotated glyph
    inst[1, 1, 5:7, 5:7] = True  # a second, unannotated glyph ("multiple")
    region = np.zeros((3, 8, 8), dtype=bool)
    region[:, 1:4, 1:4] = True
    region[2, 1, 1:4] = False  # "incomplete": the box misses a row of the glyph
    mr1, mr2 = an.followup_validity(region, inst)
    assert mr1.tolist() == [True, False, False]
    assert mr2.tolist() == [True, True, False]


def test_counterfactual_drivers_and_recall():
    pred = np.array([3, 3, 3])
    cf_family = np.array([[1, 2, 4], [1, 2, 4], [1, 2, 4]])
    pred_cf = np.array([[1, 2, 3], [3, 3, 3], [1, 3, 3]])
    bg, obj = an.counterfactual_drivers(pred_cf, cf_family, pred)
    assert bg.tolist() == [True, False, False] and obj.tolist() == [False, True, False]
    rec = an.mr2_recall(np.array([True, False, True]), np.array([True, True, True]), bg, obj)
    assert rec["recall"] == 1.0 and rec["false_alarm"] == 0.0 and rec["precision_vs_cf"] == 0.5
