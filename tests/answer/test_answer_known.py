"""The workflow's answer reads what its zoo's scorecard computed on the same arrays (LaF's scores,
every estimator's estimates) instead of recomputing them, and gives the same table as the answer
that computes everything (``labelfree answer``, which has no scorecard)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from labelfree.answer import build
from labelfree.methods import registry
from labelfree.numerics import softmax
from labelfree.scorecard.artefacts import (
    MethodOutputs,
    read_method_outputs,
    save_method_outputs,
)
from labelfree.scorecard.core import score_zoo

K = 4
MODELS = ["m0", "m1", "m2"]
#: test set -> (inputs, accuracy drop); each set its own size, so a call names its set.
SETS = {"id": (240, 0.0), "s1": (230, 0.1), "s2": (220, 0.2), "s3": (210, 0.15),
        "u1": (200, 0.25)}
SCORED = ["id", "s1", "s2", "s3"]  # the scorecard's sets; `u1` only the answer's


def _zoo():
    gen = np.random.default_rng(3)
    logits, labels = {}, {}
    for t, (n, drop) in SETS.items():
        y = gen.integers(0, K, n)
        zs = []
        for i, acc in enumerate((0.6, 0.75, 0.9)):
            right = gen.random(n) < acc - drop
            pred = np.where(right, y, (y + gen.integers(1, K, n)) % K)
            z = gen.normal(size=(n, K))
            z[np.arange(n), pred] += 2.0 + 0.3 * i
            zs.append(z)
        logits[t], labels[t] = np.stack(zs).astype(np.float32), y
    return logits, labels


def _scorecard_outputs(logits, labels, tmp_path):
    """The zoo scorecard's method outputs through the file its job writes."""
    probs = {t: softmax(logits[t].astype(np.float64)) for t in SCORED}
    card = score_zoo(probs, {t: labels[t] for t in SCORED},
                     {t: ("source" if t == "id" else "shifted") for t in SCORED}, "id",
                     logits={t: logits[t] for t in SCORED}, model_names=MODELS, budgets=(10,),
                     n_runs=1, include={"fewlabel": ["SRS+labels"]})
    path = tmp_path / "outputs.npz"
    save_method_outputs(path, MethodOutputs(tuple(MODELS), card.source, card.outputs))
    return read_method_outputs(path)


@pytest.fixture()
def calls(monkeypatch):
    """(kind, method, test set) of every registry call the answer makes."""
    seen = []
    sizes = {n: t for t, (n, _) in SETS.items()}
    real = registry.call

    def spy(kind, name, probs, *a, **k):
        seen.append((kind, name, sizes.get(np.shape(probs)[1], "other")))
        return real(kind, name, probs, *a, **k)

    monkeypatch.setattr(registry, "call", spy)
    return seen


def test_answer_reads_the_scorecards_outputs_and_gives_the_same_table(tmp_path, calls):
    logits, labels = _zoo()
    known = _scorecard_outputs(logits, labels, tmp_path)
    calls.clear()
    assert known.source == "id" and ("rank", "LaF", "s2") in known.values
    assert ("estimate", "COT", "s1") in known.values
    args = ("z", MODELS, logits, labels, "id", 20, 0, 50)
    with_known, *rest_k = build(*args, known=known)
    n_known = len(calls)
    alone, *rest = build(*args)
    pd.testing.assert_frame_equal(with_known, alone, check_exact=True)
    for a, b in zip(rest_k, rest, strict=True):
        np.testing.assert_array_equal(a, b)
    # with the scorecard's outputs, LaF and the estimators ran on `u1` alone (the bootstrap
    # spread resamples, so its calls name no set)
    first = calls[:n_known]
    assert {(k, n) for k, n, t in first if t in SCORED and k != "select"} == set()
    assert ("rank", "LaF", "u1") in first and ("estimate", "COT", "u1") in first
    assert {t for k, n, t in calls[n_known:] if k == "estimate"} >= set(SETS)


def test_answer_recomputes_what_another_source_or_model_list_computed(tmp_path, calls):
    logits, labels = _zoo()
    known = _scorecard_outputs(logits, labels, tmp_path)
    calls.clear()
    other_source = MethodOutputs(known.models, "s1", known.values)
    build("z", MODELS, logits, labels, "id", 20, 0, 50, known=other_source)
    # estimates read the source set: recomputed on every set; LaF does not: read
    assert ("estimate", "ATC-MC", "s2") in calls and ("rank", "LaF", "s2") not in calls
    calls.clear()
    reordered = MethodOutputs(tuple(reversed(MODELS)), known.source, known.values)
    build("z", MODELS, logits, labels, "id", 20, 0, 50, known=reordered)
    assert ("estimate", "ATC-MC", "s2") in calls and ("rank", "LaF", "s2") in calls


def test_method_outputs_file_round_trip_keeps_values_bit_for_bit(tmp_path):
    vals = {("estimate", "AC", "id"): np.array([0.1, np.nan, 1 / 3]),
            ("rank", "LaF", "natural-thin"): np.array([-1e-300, 2.5, np.inf]),
            ("estimate", "GDE", "x"): np.array([1.0, 2.0])}  # not one value per model: left out
    save_method_outputs(tmp_path / "o.npz", MethodOutputs(("a", "b", "c"), None, vals))
    back = read_method_outputs(tmp_path / "o.npz")
    assert back.models == ("a", "b", "c") and back.source is None
    assert set(back.values) == set(vals) - {("estimate", "GDE", "x")}
    for k, v in back.values.items():
        assert v.tobytes() == vals[k].tobytes()
    save_method_outputs(tmp_path / "e.npz", MethodOutputs(("a",), "id", {}))
    empty = read_method_outputs(tmp_path / "e.npz")
    assert empty.values == {} and empty.source == "id"
