"""CES bin readings (docs/pace.md, reading R10): numpy histogram semantics against Li et al.'s
released code (Lizn-zn/DNNOpAcc at e0804c2, ``CE method/MNIST/mutant1/crossentropy.py``), whose
``output_to_interval`` counts a value only strictly between two edges."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.pace.baselines import ces, ces_bins, ces_objective
from labelfree.pace.run import StudyParams, Subject, _ces


def li_output_to_interval(output, interval):
    return np.array([np.sum(np.logical_and(output > interval[i], output < interval[i + 1]))
                     for i in range(interval.shape[0] - 1)])


def li_coverage(test_output, sample, divide):
    """Li et al.'s build_neuron_tables + neuron_entropy + coverage (KL reading), transliterated."""
    lo, hi = test_output.min(axis=0), test_output.max(axis=0)
    out = test_output[sample, :]
    ent = []
    for j in range(test_output.shape[1]):
        interval = np.linspace(lo[j], hi[j], divide)
        bench = li_output_to_interval(test_output[:, j], interval) / len(test_output)
        test = li_output_to_interval(out[:, j], interval) / len(sample)
        p1, p2 = np.clip(test, 1e-10, 1), np.clip(bench, 1e-10, 1)
        ent.append(np.sum(np.log(p2) * test) - np.sum(np.log(p1) * test))
    return float(np.mean(ent))


def test_bins_by_hand():
    # edges 0, 1, 2, 3, 4 (n_edges 5): 2.0 and the extremes lie on an edge
    v = np.array([[0.0], [0.5], [1.5], [2.0], [3.5], [4.0]])
    assert ces_bins(v, 5, "histogram")[:, 0].tolist() == [0, 0, 1, 2, 3, 3]
    assert ces_bins(v, 5, "reference")[:, 0].tolist() == [-1, 0, 1, -1, 3, -1]


def test_objective_by_hand_reference_reading():
    # pool: 0 (edge), 0.5, 1.5, 2 (edge), 3.5, 4 (edge); p = (1, 1, 0, 1) / 6 per bin
    v = np.array([[0.0], [0.5], [1.5], [2.0], [3.5], [4.0]])
    bins = ces_bins(v, 5, "reference")
    # sample {0.5, 4.0}: q = (1/2, 0, 0, 0); obj = 1/2 ln(1/6) - 1/2 ln(1/2) = -1/2 ln 3
    assert ces_objective(bins, np.array([1, 5]), 5) == pytest.approx(-0.5 * np.log(3), abs=1e-12)
    assert ces_objective(bins, np.array([1, 5]), 5) == pytest.approx(li_coverage(v, [1, 5], 5), abs=1e-12)
    # histogram reading: p = (2, 1, 1, 2) / 6, q = (1/2, 0, 0, 1/2): obj = ln(1/3) - ln(1/2)
    hist = ces_bins(v, 5, "histogram")
    assert ces_objective(hist, np.array([1, 5]), 5) == pytest.approx(np.log(1.5) * -1, abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_reference_reading_equals_li_et_al_on_relu_activations(seed):
    rng = np.random.default_rng(seed)
    x = np.maximum(rng.normal(0, 1, (400, 12)), 0).astype(np.float32)  # half the values are 0
    x[:, 5] = 0.7  # a constant neuron
    for divide in (5, 20, 30):
        bins = ces_bins(x, divide, "reference")
        for _ in range(3):
            s = rng.choice(400, 35, replace=True)
            want = li_coverage(x.astype(np.float64), s, divide)
            assert ces_objective(bins, s, divide) == pytest.approx(want, rel=1e-12, abs=1e-12)


def test_the_two_readings_differ():
    rng = np.random.default_rng(0)
    x = np.maximum(rng.normal(0, 1, (600, 10)), 0)
    scores = (rng.random(600) < 0.8).astype(float)
    s = rng.choice(600, 40, replace=False)
    a, b = ces_bins(x, 20, "histogram"), ces_bins(x, 20, "reference")
    assert (b == -1).mean() > 0.4 and (a >= 0).all()
    assert ces_objective(a, s) != pytest.approx(ces_objective(b, s))
    budgets = [50, 100, 180]
    ea = ces(scores, a, budgets, 4, np.random.default_rng(1))
    eb = ces(scores, b, budgets, 4, np.random.default_rng(1))
    assert not np.array_equal(ea, eb)


def test_config_reaches_ces():
    p = StudyParams.from_config({"ces": {"reading": "reference", "edges": 30}, "reps": 2,
                                 "budgets": [50, 60]})
    assert p.ces["reading"] == "reference" and p.ces["edges"] == 30 and p.ces["init"] == 30
    d = StudyParams.from_config({"reps": 2, "budgets": [50, 60]})
    assert d.ces["reading"] == "histogram" and d.ces["edges"] == 20
    rng = np.random.default_rng(0)
    x = np.maximum(rng.normal(0, 1, (300, 8)), 0)
    sub = Subject("s", "cls", "original", False, "m", "id", (rng.random(300) < 0.8).astype(float),
                  {"LHL": x})
    want = ces(sub.scores, ces_bins(x, 30, "reference"), [50, 60], 2, np.random.default_rng(3),
               n_edges=30)
    assert np.array_equal(_ces(sub, sub.scores, p, np.random.default_rng(3)), want)
    with pytest.raises(ValueError, match="reading"):
        ces_bins(np.zeros((3, 2)), 20, "open")
