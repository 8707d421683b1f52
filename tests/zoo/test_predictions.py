"""Prediction zoos (issue 14 item 1): a folder of arrays validated before any job runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from labelfree.zoo.predictions import (
    PredictionZooError,
    load_labels,
    load_logits,
    scan,
)


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def make_zoo(root: Path, n: dict[str, int] | None = None, k: int = 4, seed: int = 0) -> Path:
    """Three models: m_logits (npz logits), m_probs (npy probabilities), m_csv (csv logits)."""
    n = n or {"id": 30, "shifted": 20}
    gen = np.random.default_rng(seed)
    for t, rows in n.items():
        z = {m: gen.normal(size=(rows, k)) for m in ("m_logits", "m_probs", "m_csv")}
        (root / "predictions" / "m_logits").mkdir(parents=True, exist_ok=True)
        (root / "predictions" / "m_probs").mkdir(parents=True, exist_ok=True)
        (root / "predictions" / "m_csv").mkdir(parents=True, exist_ok=True)
        np.savez(root / "predictions" / "m_logits" / f"{t}.npz", logits=z["m_logits"])
        np.save(root / "predictions" / "m_probs" / f"{t}.npy", softmax(z["m_probs"]))
        np.savetxt(root / "predictions" / "m_csv" / f"{t}.csv", z["m_csv"], delimiter=",")
    (root / "labels").mkdir(exist_ok=True)
    np.save(root / "labels" / "id.npy", np.arange(n["id"]) % k)
    return root


def test_scan_lists_and_classifies_a_valid_zoo(tmp_path):
    zoo = scan(make_zoo(tmp_path))
    assert zoo.models == ["m_csv", "m_logits", "m_probs"]
    assert zoo.testsets == ["id", "shifted"] and zoo.rows == {"id": 30, "shifted": 20}
    assert zoo.num_classes == 4 and zoo.labelled == ["id"]
    assert zoo.kind == {"m_csv": "logits", "m_logits": "logits", "m_probs": "probabilities"}


def test_probabilities_enter_as_log_probabilities_that_softmax_gives_back(tmp_path):
    root = make_zoo(tmp_path)
    zoo = scan(root)
    probs = np.load(root / "predictions" / "m_probs" / "id.npy")
    z = load_logits(zoo, "m_probs", "id")
    assert z.dtype == np.float32 and z.shape == (30, 4)
    np.testing.assert_allclose(softmax(z.astype(np.float64)), probs, atol=1e-6)
    # logits pass unchanged (to float32)
    raw = np.load(root / "predictions" / "m_logits" / "id.npz")["logits"]
    np.testing.assert_array_equal(load_logits(zoo, "m_logits", "id"), raw.astype(np.float32))
    np.testing.assert_array_equal(load_labels(zoo, "id"), np.arange(30) % 4)
    assert load_labels(zoo, "shifted") is None


def _expect(root: Path, *needles: str, kind: str = "auto") -> None:
    with pytest.raises(PredictionZooError) as err:
        scan(root, kind)
    for needle in needles:
        assert needle in str(err.value), str(err.value)


def test_wrong_number_of_classes_names_file_and_model(tmp_path):
    root = make_zoo(tmp_path)
    np.save(root / "predictions" / "m_probs" / "shifted.npy", softmax(np.zeros((20, 5))))
    _expect(root, "m_probs/shifted.npy", "'m_probs'", "K = 5", "4")


def test_rows_differ_between_models(tmp_path):
    root = make_zoo(tmp_path)
    np.save(root / "predictions" / "m_probs" / "shifted.npy", softmax(np.zeros((19, 4))))
    _expect(root, "m_probs/shifted.npy", "19 rows", "20")


def test_non_finite_values(tmp_path):
    root = make_zoo(tmp_path)
    bad = np.zeros((30, 4))
    bad[3, 1] = np.nan
    np.savez(root / "predictions" / "m_logits" / "id.npz", logits=bad)
    _expect(root, "m_logits/id.npz", "1 row(s) hold NaN")


def test_declared_probabilities_must_sum_to_one(tmp_path):
    root = make_zoo(tmp_path)
    np.savez(root / "predictions" / "m_logits" / "id.npz", probs=np.full((30, 4), 0.3))
    _expect(root, "m_logits/id.npz", "do not sum to 1")


def test_given_kind_probabilities_refuses_logits(tmp_path):
    root = make_zoo(tmp_path)
    _expect(root, "m_csv", "declared probabilities", kind="probabilities")


def test_truncated_and_wrongly_shaped_files(tmp_path):
    root = make_zoo(tmp_path)
    path = root / "predictions" / "m_probs" / "id.npy"
    path.write_bytes(path.read_bytes()[:100])
    _expect(root, "m_probs/id.npy", "not readable")
    np.save(path, np.zeros(30))
    _expect(root, "m_probs/id.npy", "(N, K) matrix", "(30,)")


def test_missing_test_set_for_one_model(tmp_path):
    root = make_zoo(tmp_path)
    (root / "predictions" / "m_csv" / "shifted.csv").unlink()
    _expect(root, "'m_csv'", "shifted", "same test sets")


def test_labels_checked_for_length_range_and_test_set(tmp_path):
    root = make_zoo(tmp_path)
    np.save(root / "labels" / "id.npy", np.zeros(29, dtype=int))
    _expect(root, "labels/id.npy", "expected 30 labels")
    np.save(root / "labels" / "id.npy", np.full(30, 4))
    _expect(root, "labels/id.npy", "[0, 4)")
    np.save(root / "labels" / "id.npy", np.zeros(30, dtype=int))
    np.save(root / "labels" / "other.npy", np.zeros(30, dtype=int))
    _expect(root, "unknown test set(s) ['other']")


def test_no_predictions_folder(tmp_path):
    _expect(tmp_path, "predictions/<model>/<testset>.npy")
