"""The scorecard reads a zoo's artefacts, features included (issue 14: a prediction zoo's
imported features reach Dispersion and FD; scorecard spec 0: optional penultimate features)."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree import store
from labelfree.methods.registry import call
from labelfree.numerics import softmax
from labelfree.scorecard.artefacts import read_zoo
from labelfree.scorecard.core import score_zoo
from labelfree.stats import spearman

M, N, K, D = 3, 60, 4, 5


@pytest.fixture()
def artefacts(tmp_path):
    """Three models' inference files on `id` (labelled) and `shifted` (labelled) and `extra`
    (unlabelled), with `penultimate` features, as the import of a prediction zoo writes them."""
    r = np.random.default_rng(0)
    files = []
    raw = {}
    for m in range(M):
        sets = {}
        for t in ("id", "shifted", "extra"):
            z = r.normal(size=(N, K)).astype(np.float32)
            f = r.normal(size=(N, D)).astype(np.float16)
            sets[t] = {"logits": z, "penultimate": f}
            raw[(m, t)] = (z, f)
        files.append(tmp_path / f"m{m}.npz")
        store.write_inference(files[-1], sets)
    labels = {}
    for t in ("id", "shifted", "extra"):
        y = r.integers(0, K, N) if t != "extra" else None
        labels[t] = tmp_path / f"{t}.npz"
        store.write_labels(labels[t], y, N)
    by_set = {t: files for t in ("id", "shifted", "extra")}
    return by_set, labels, raw


def test_read_zoo_reads_features_of_the_layer_and_skips_unlabelled_sets(artefacts):
    by_set, labels, raw = artefacts
    sets = ["id", "shifted", "extra"]
    kinds = {"id": "source", "shifted": "shifted", "extra": "shifted"}
    z = read_zoo(by_set, sets, [labels[t] for t in sets], kinds, "penultimate")
    assert list(z.probs) == ["id", "shifted"]  # `extra` has no labels
    np.testing.assert_allclose(z.probs["id"][1], softmax(raw[(1, "id")][0]))
    assert z.features is not None and len(z.features["shifted"]) == M
    np.testing.assert_array_equal(z.features["shifted"][2], raw[(2, "shifted")][1].astype(np.float32))
    assert read_zoo(by_set, sets, [labels[t] for t in sets], kinds, None).features is None


def test_scorecard_runs_dispersion_and_fd_only_with_features(artefacts):
    by_set, labels, raw = artefacts
    sets = ["id", "shifted"]
    kinds = {"id": "source", "shifted": "shifted"}
    only = {"estimate": ["AC"], "rank": ["Dispersion", "FD", "AC"], "fewlabel": []}
    with_f = read_zoo(by_set, sets, [labels[t] for t in sets], kinds, "penultimate")
    card = score_zoo(with_f.probs, with_f.labels, with_f.kinds, "id", logits=with_f.logits,
                     features=with_f.features, include=only, budgets=(10,))
    assert {"Dispersion", "FD", "AC"} <= set(card.ranking["method"]) and card.failures.empty
    # the score the scorecard ranked by is the registry's on these features (FD: against `id`)
    fd = call("rank", "FD", with_f.probs["shifted"], features=with_f.features["shifted"],
              source_features=with_f.features["id"])
    acc = (with_f.probs["shifted"].argmax(2) == with_f.labels["shifted"]).mean(1)
    row = card.ranking.set_index(["method", "set"]).loc[("FD", "shifted")]
    assert row["spearman"] == pytest.approx(spearman(fd, acc))
    no_f = read_zoo(by_set, sets, [labels[t] for t in sets], kinds, None)
    card = score_zoo(no_f.probs, no_f.labels, no_f.kinds, "id", logits=no_f.logits,
                     features=no_f.features, include=only, budgets=(10,))
    assert set(card.ranking["method"]) == {"AC"}  # Dispersion and FD need features


def test_a_zoo_with_multi_label_labels_only_says_why_it_is_not_scored(tmp_path):
    """scorecard spec 0.2, 12: accuracy is argmax == y on labels of shape (N,); multi-hot labels
    (N, K) have none, so read_zoo scores no set and says why instead of inventing a metric."""
    r = np.random.default_rng(1)
    f = tmp_path / "m.npz"
    store.write_inference(f, {t: {"logits": r.normal(size=(N, K)).astype(np.float32)}
                              for t in ("id", "metamorphic-ml")})
    paths = []
    for t in ("id", "metamorphic-ml"):
        paths.append(tmp_path / f"{t}.npz")
        np.savez(paths[-1], y=r.integers(0, 2, (N, K)))  # multi-hot, as DigitScenes writes it
    z = read_zoo({"id": [f], "metamorphic-ml": [f]}, ["id", "metamorphic-ml"], paths,
                 {"id": "source", "metamorphic-ml": "metamorphic_ml"})
    assert not z.probs and z.skipped == {"id": "multi-label", "metamorphic-ml": "multi-label"}
    assert z.why_unscored().startswith("multi-label labels only (id, metamorphic-ml)")
