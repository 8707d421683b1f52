"""The registry: uniform signatures, needs checking, study methods registered unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from labelfree.methods.arrays import MethodInputError
from labelfree.methods.registry import call, methods
from labelfree.numerics import softmax


@pytest.fixture(scope="module")
def zoo():
    r = np.random.default_rng(0)
    M, N, K = 5, 300, 4
    y = r.integers(0, K, N)
    ys = r.integers(0, K, 200)

    def make(lab, shift):
        z = r.normal(size=(M, len(lab), K)) * (1 + shift)
        z[:, np.arange(len(lab)), lab] += (1.5 + 0.4 * np.arange(M) - shift)[:, None]
        return softmax(z)

    return dict(P=make(y, 0.5), y=y, Ps=make(ys, 0.0), ys=ys,
                feats=[r.normal(size=(N, 6)) for _ in range(M)],
                sfeats=[r.normal(size=(200, 6)) for _ in range(M)])


def test_every_method_runs_with_its_uniform_signature(zoo):
    ctx = dict(source_probs=zoo["Ps"], source_labels=zoo["ys"], features=zoo["feats"],
               source_features=zoo["sfeats"])
    M, N = zoo["P"].shape[:2]
    acc = (zoo["P"].argmax(2) == zoo["y"]).mean(1)  # 0.46 ... 0.80, increasing with the model
    for m in methods():
        if m.kind in ("rank", "estimate"):
            out = call(m.kind, m.name, list(zoo["P"]), **ctx)
            assert out.shape == (M,) and np.all(np.isfinite(out)), m.name
            if m.kind == "estimate":
                # measured max |estimate - accuracy| 0.32 (GDE); the target is shifted
                assert np.abs(out - acc).max() < 0.4, m.name
            if m.name not in ("FD", "Dispersion"):  # those two see random-noise features here
                # every score is oriented "higher = better": a sign slip ranks the zoo backwards
                # (measured Spearman 0.7 (MaNo) to 1.0)
                assert scipy.stats.spearmanr(out, acc).statistic >= 0.5, m.name
        elif m.kind == "select":
            idx = call("select", m.name, zoo["P"], 20, 0, **ctx)
            assert len(idx) <= 20 and len(set(idx.tolist())) == len(idx), m.name
            assert idx.min() >= 0 and idx.max() < N
        else:
            r = call("fewlabel", m.name, zoo["P"], zoo["y"], [10, 20], 0, 2, **ctx)
            assert r.best.shape == (2, 2) and r.scores.shape == (2, 2, M), m.name


def test_needs_are_checked_by_name(zoo):
    with pytest.raises(MethodInputError, match="needs source_labels, source_probs"):
        call("estimate", "ATC-MC", zoo["P"])
    with pytest.raises(MethodInputError, match="needs features"):
        call("rank", "Dispersion", zoo["P"])
    with pytest.raises(MethodInputError, match="no rank method 'Nope'"):
        call("rank", "Nope", zoo["P"])


def test_study_methods_are_the_studies_own(zoo):
    from labelfree.laf.core import rank as laf_rank

    Y = zoo["P"].argmax(2).T
    assert np.array_equal(call("rank", "LaF", zoo["P"]), laf_rank(Y, 4).score)
    from labelfree.syp.baselines import entropy_score

    assert call("rank", "Entropy", zoo["P"])[0] == pytest.approx(-entropy_score(zoo["P"][0]))
    # every estimator is also a ranker under the same name
    est = {m.name for m in methods("estimate")}
    assert est <= {m.name for m in methods("rank")}


def test_srs_select_is_seeded(zoo):
    a = call("select", "SRS", zoo["P"], 30, 4)
    assert np.array_equal(a, call("select", "SRS", zoo["P"], 30, 4))
    assert not np.array_equal(a, call("select", "SRS", zoo["P"], 30, 5))


def test_fast_paths_equal_the_syp_functions(zoo):
    """The registry computes SYP's Entropy and ATC with a one-pass p ln p; same values."""
    from labelfree.syp.baselines import atc_garg_estimate, atc_garg_threshold, entropy_score

    P, Ps, ys = zoo["P"], zoo["Ps"], zoo["ys"]
    ent = call("rank", "Entropy", P)
    assert ent == pytest.approx([-entropy_score(p) for p in P], rel=1e-12)
    atc = call("estimate", "ATC-SYP", P, source_probs=Ps, source_labels=ys)
    ref = [atc_garg_estimate(P[m], atc_garg_threshold(Ps[m], ys)) / 100 for m in range(len(P))]
    assert atc == pytest.approx(ref, abs=1e-12)


def test_threaded_nuclear_norm_and_fd_equal_per_model(zoo):
    # the registry runs NuclearNorm and FD over models on threads (single-threaded BLAS each)
    from labelfree.methods import estimators as E

    P = zoo["P"]
    got = call("rank", "NuclearNorm", P)
    assert got.tolist() == [E.nuclear_norm(P[m]) for m in range(len(P))]
    fd = call("rank", "FD", P, features=zoo["feats"], source_features=zoo["sfeats"])
    np.testing.assert_allclose(fd, [-_fd(zoo["sfeats"][m], zoo["feats"][m]) for m in range(len(P))],
                               rtol=1e-6)


def _fd(a, b):
    from labelfree.syp.indicators import feature_stats, frechet_distance

    return frechet_distance(feature_stats(a), feature_stats(b))


def test_guide_is_the_mean_of_the_features(zoo):
    # PACE/CES guide: the mean of the per-model features, accumulated without a float64 stack
    from labelfree.methods.registry import _guide

    f32 = [f.astype(np.float32) for f in zoo["feats"]]
    np.testing.assert_allclose(_guide(zoo["P"], {"features": f32}),
                               np.mean([f.astype(np.float64) for f in f32], axis=0), rtol=1e-14)
    assert np.array_equal(_guide(zoo["P"], {}), zoo["P"].mean(axis=0))


@pytest.mark.parametrize("blobs,reduce", [(8, None), (8, "always"), (1, None)])
def test_pace_labels_reuses_one_fit_with_the_same_picks(zoo, monkeypatch, blobs, reduce):
    # PACE+labels fits PACE once when the features are not reduced (the seed reaches PACE only
    # through the reducer) and once per seed when they are, the rule's clustering of the unreduced
    # guide skipped after the first fit (reduce='always'): the accuracies on the picks must equal
    # those of one call("select", "PACE") per (run, budget), the code before the reuse; budgets
    # above PACE's default n_max (180) check that smaller budgets are prefixes of a larger fit.
    # 8 well-separated blobs: PACE's rule keeps the full features; 1 blob: the rule reduces them;
    # reduce="always" forces the reduction on every fit
    import labelfree.methods.registry as reg
    from labelfree.methods import fewlabel as F

    r = np.random.default_rng(5)
    M, N, K = 3, 260, 4
    y = r.integers(0, K, N)
    P = softmax(r.normal(size=(M, N, K)) + 2.0 * np.eye(K)[y][None])
    feats = [r.normal(size=(N, 6)) + 12.0 * np.eye(8, 6)[np.arange(N) % blobs]] * M
    budgets, runs = [10, 40, 200], 2
    fits = []
    real_fit = reg.pace_fit
    monkeypatch.setattr(reg, "pace_fit", lambda *a, **k: fits.append(
        real_fit(*a, **(k if reduce is None else {**k, "reduce": reduce}))) or fits[-1])
    got = call("fewlabel", "PACE+labels", P, y, budgets, 3, runs, features=feats)
    n_fits = len(fits)
    Y = P.argmax(2)
    for rr in range(runs):
        for j, b in enumerate(budgets):
            idx = call("select", "PACE", P, b, 3 + 1000 * rr + j, features=feats)
            np.testing.assert_array_equal(got.accuracy[rr, j], F.labelled_accuracy(Y, idx, y[idx]))
    reduced = reduce == "always" or blobs == 1
    assert {f.reduced for f in fits[:n_fits]} == {reduced}
    assert n_fits == (runs * len(budgets) if reduced else 1)
    if reduced:  # the rule ran on the first fit only
        assert [f.config.reduce for f in fits[:n_fits]] == [reduce or "auto"] + [
            reduce or "always"] * (n_fits - 1)
        assert ["cluster_full" in f.timings for f in fits[:n_fits]] == [reduce is None] + [
            False] * (n_fits - 1)


def test_laf_on_one_blas_thread_ranks_as_laf_core():
    """The registry's LaF holds BLAS to one thread (speed, bench/results/methods_scorecard.md);
    above 10,000 parameters (here 10,500 inputs + 6 models) OpenBLAS would thread the CG's dot
    products: same ranking as labelfree.laf.core.rank, scores equal up to summation order."""
    from labelfree.laf.core import rank

    gen = np.random.default_rng(3)
    n, k, m = 10_500, 50, 6
    y = gen.integers(0, k, n)
    Y = np.stack([np.where(gen.random(n) < 0.4 + 0.1 * j, y, gen.integers(0, k, n))
                  for j in range(m)])
    P = np.full((m, n, k), 0.1 / (k - 1), dtype=np.float32)
    P[np.arange(m)[:, None], np.arange(n)[None, :], Y] = 0.9
    got = call("rank", "LaF", P)
    want = rank(Y.T, k).score
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert np.array_equal(np.argsort(-got), np.argsort(-want))
