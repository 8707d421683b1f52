"""Published-number fixtures and size bins: metamorphic.md section 8, checks 9 and 10."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.metamorphic import analysis as an

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
    orig = np.array([34.5, 45.5, 47.9])
    rel = np.array([48.29, 72.45, 73.03])
    assert round(float((rel - orig).mean()), 2) == 21.96


def test_cochran_sample_sizes():
    got = [an.cochran(n) for n in (3634, 4942, 6622, 957, 4732)]
    assert got == [348, 357, 364, 275, 356]


def test_vgg16_mr1_ratio():
    assert f"{259 / 35634:.2%}" == "0.73%"


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
