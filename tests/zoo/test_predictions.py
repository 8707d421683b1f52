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


# --- issue 14 item 1: every problem at once, the odd file out named, import into artefacts ---


def test_every_problem_is_reported_at_once_each_naming_file_and_model(tmp_path):
    root = make_zoo(tmp_path)
    np.save(root / "predictions" / "m_probs" / "shifted.npy", softmax(np.zeros((20, 5))))
    bad = np.zeros((30, 4))
    bad[0, 0] = np.inf
    np.savez(root / "predictions" / "m_logits" / "id.npz", logits=bad)
    np.save(root / "labels" / "id.npy", np.zeros(29, dtype=int))
    with pytest.raises(PredictionZooError) as err:
        scan(root)
    msg = str(err.value)
    assert msg.startswith("3 problems in prediction zoo"), msg
    assert "m_probs/shifted.npy: model 'm_probs' has K = 5" in msg
    assert "m_logits/id.npz: model 'm_logits': 1 row(s) hold NaN" in msg
    assert "labels/id.npy: expected 30 labels" in msg


def test_the_odd_file_out_is_blamed_not_the_first_model(tmp_path):
    # K and N are what most files agree on: a bad *first* model (alphabetically) is named,
    # not the two good ones after it (a scan that took the first file as the reference would
    # blame m_logits and m_probs instead).
    root = make_zoo(tmp_path)
    np.savetxt(root / "predictions" / "m_csv" / "id.csv", np.zeros((30, 6)), delimiter=",")
    np.savetxt(root / "predictions" / "m_csv" / "shifted.csv", np.zeros((18, 4)), delimiter=",")
    with pytest.raises(PredictionZooError) as err:
        scan(root)
    msg = str(err.value)
    assert "m_csv/id.csv: model 'm_csv' has K = 6 classes; the zoo's other files have K = 4" in msg
    assert "m_csv/shifted.csv: model 'm_csv' has 18 rows" in msg and "have 20" in msg
    assert "'m_logits'" not in msg and "'m_probs'" not in msg


def test_subset_of_test_sets_names_and_features(tmp_path):
    root = make_zoo(tmp_path)
    zoo = scan(root, testsets=["shifted"])
    assert zoo.testsets == ["shifted"] and zoo.labelled == [] and zoo.rows == {"shifted": 20}
    with pytest.raises(PredictionZooError) as err:
        scan(root, testsets=["id", "other"])
    assert "no file for test set(s) ['other']" in str(err.value)
    (root / "predictions" / "bad name").mkdir()
    np.save(root / "predictions" / "bad name" / "id.npy", np.zeros((30, 4)))
    np.save(root / "predictions" / "bad name" / "shifted.npy", np.zeros((20, 4)))
    _expect(root, "model 'bad name'", "letters, digits")


def test_features_checked_and_required_layers(tmp_path):
    root = make_zoo(tmp_path)
    feat = root / "features" / "m_csv"
    feat.mkdir(parents=True)
    np.save(feat / "id.penultimate.npy", np.ones((30, 3), dtype=np.float32))
    _expect(root, "features/m_csv/shifted.penultimate.npy", "not 'shifted'")
    np.save(feat / "shifted.penultimate.npy", np.ones((19, 3), dtype=np.float32))
    _expect(root, "shifted.penultimate.npy", "model 'm_csv'", "expected (20, D)")
    np.save(feat / "shifted.penultimate.npy", np.ones((20, 3), dtype=np.float32))
    assert scan(root).features == {"m_csv": ["penultimate"], "m_logits": [], "m_probs": []}
    with pytest.raises(PredictionZooError) as err:
        scan(root, features=["penultimate"])
    assert "model 'm_logits' has no ['penultimate'] features" in str(err.value)


def test_scan_is_cached_until_a_file_changes(tmp_path, monkeypatch):
    import os

    from labelfree.zoo import predictions as P

    root = make_zoo(tmp_path / "zoo")
    cache = tmp_path / "cache" / "zoo.json"
    first = P.scan_cached(root, cache=cache)
    assert cache.is_file()
    calls = []
    real = P.read_matrix
    monkeypatch.setattr(P, "read_matrix", lambda p: calls.append(p) or real(p))
    again = P.scan_cached(root, cache=cache)
    assert again == first and calls == []  # nothing read: the files did not change
    path = root / "predictions" / "m_probs" / "id.npy"
    np.save(path, softmax(np.zeros((30, 5))))
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.raises(PredictionZooError, match="K = 5"):
        P.scan_cached(root, cache=cache)
    assert calls  # rescanned


def test_import_writes_the_artefacts_studies_read(tmp_path):
    from labelfree import store
    from labelfree.zoo.predictions import import_labels, import_model

    root = make_zoo(tmp_path / "zoo")
    zoo = scan(root)
    out = tmp_path / "out"
    for m in zoo.models:
        meta = import_model("z", m, zoo.files[m], zoo.kind[m], zoo.num_classes, zoo.rows, {},
                            out / m / "predictions.npz", out / m / "meta.json")
        assert meta["source"] == "predictions" and meta["num_classes"] == 4
        assert set(meta["testsets"]) == {"id", "shifted"}
        for t in zoo.testsets:
            got = store.read_logits(out / m / "predictions.npz", t)
            np.testing.assert_array_equal(got, load_logits(zoo, m, t))
    probs = np.load(root / "predictions" / "m_probs" / "shifted.npy")
    lg = store.read_logits(out / "m_probs" / "predictions.npz", "shifted").astype(np.float64)
    np.testing.assert_allclose(softmax(lg), probs, atol=1e-6)
    outs = {t: out / "testsets" / f"{t}.npz" for t in zoo.testsets}
    import_labels({t: str(zoo.label_file(t)) if zoo.label_file(t) else None
                   for t in zoo.testsets}, zoo.rows, zoo.num_classes, outs)
    np.testing.assert_array_equal(store.read_labels(outs["id"]), np.arange(30) % 4)
    assert store.read_labels(outs["shifted"]) is None


def test_import_refuses_a_file_changed_since_the_scan(tmp_path):
    from labelfree.zoo.predictions import import_model

    root = make_zoo(tmp_path / "zoo")
    zoo = scan(root)
    np.save(root / "predictions" / "m_probs" / "id.npy", softmax(np.zeros((31, 4))))
    with pytest.raises(PredictionZooError, match="m_probs/id.npy.*shape \\(31, 4\\)"):
        import_model("z", "m_probs", zoo.files["m_probs"], "probabilities", 4, zoo.rows, {},
                     tmp_path / "o.npz", tmp_path / "meta.json")
    assert not (tmp_path / "o.npz").exists()


def test_rounded_probabilities_are_refused_not_taken_as_logits(tmp_path):
    # probabilities written with two decimals sum to 1 only within ~0.05; `auto` must not
    # read them as logits (softmax would flatten them); an explicit kind decides.
    root = make_zoo(tmp_path)
    p = np.round(softmax(np.random.default_rng(1).normal(size=(30, 4)) * 3), 2)
    assert 1e-3 < np.abs(p.sum(1) - 1).max() <= 0.1
    np.savetxt(root / "predictions" / "m_csv" / "id.csv", p, delimiter=",", fmt="%.2f")
    _expect(root, "m_csv/id.csv", "model 'm_csv'", "look like probabilities")
    zoo = scan(root, kind="logits")
    assert zoo.kind["m_csv"] == "logits"


# --- the tensor layout: one (models, inputs, classes) file per test set, names in models.txt ---


def tensor_zoo(per_model: Path, root: Path, suffix: str = ".npy") -> Path:
    """The per-model zoo ``per_model`` rewritten in the tensor layout: each test set's matrices
    stacked in model order (logits kept, probabilities as log-probabilities: one kind a file)."""
    zoo = scan(per_model)
    (root / "predictions").mkdir(parents=True)
    for t in zoo.testsets:
        stack = np.stack([load_logits(zoo, m, t).astype(np.float64) for m in zoo.models])
        path = root / "predictions" / f"{t}{suffix}"
        if suffix == ".pt":
            import torch

            torch.save(torch.from_numpy(stack), path)
        elif suffix == ".npz":
            np.savez(path, logits=stack)
        else:
            np.save(path, stack)
    (root / "predictions" / "models.txt").write_text("\n".join(zoo.models) + "\n")
    (root / "labels").mkdir()
    np.save(root / "labels" / "id.npy", np.arange(zoo.rows["id"]) % zoo.num_classes)
    return root


@pytest.mark.parametrize("suffix", [".npy", ".npz", ".pt"])
def test_tensor_layout_scans_and_imports_as_the_per_model_layout(tmp_path, suffix):
    from labelfree import store
    from labelfree.zoo.predictions import import_model

    per = scan(make_zoo(tmp_path / "per"))
    zoo = scan(tensor_zoo(tmp_path / "per", tmp_path / "tensor", suffix))
    assert zoo.models == per.models and zoo.testsets == per.testsets
    assert (zoo.num_classes, zoo.rows, zoo.labelled) == (per.num_classes, per.rows, ["id"])
    assert set(zoo.kind.values()) == {"logits"}
    for m in zoo.models:
        assert set(zoo.files[m].values()) == {str(tmp_path / "tensor" / "predictions" /
                                                  f"{t}{suffix}") for t in ("id", "shifted")}
        meta = import_model("z", m, zoo.files[m], zoo.kind[m], zoo.num_classes, zoo.rows, {},
                            tmp_path / m / "predictions.npz", tmp_path / m / "meta.json")
        assert meta["num_classes"] == 4
        for t in zoo.testsets:
            got = store.read_logits(tmp_path / m / "predictions.npz", t).astype(np.float64)
            np.testing.assert_allclose(softmax(got), softmax(load_logits(per, m, t)
                                                             .astype(np.float64)), atol=1e-6)


def test_tensor_layout_problems_name_the_file(tmp_path):
    root = tensor_zoo(make_zoo(tmp_path / "per"), tmp_path / "tensor")
    names = root / "predictions" / "models.txt"
    names.write_text("m_csv\nm_logits\n")
    _expect(root, "models.txt: 2 model names for the 3 models", "id.npy")
    names.write_text("m_csv\nm_csv\nm_probs\n")
    _expect(root, "models.txt: model name(s) ['m_csv'] appear more than once")
    names.write_text("m_csv\nm_logits\nm_probs\n")
    (root / "predictions" / "shifted.models.txt").write_text("m_csv\nm_logits\nother\n")
    _expect(root, "shifted.models.txt: test set 'shifted' names other models", "['other']")
    (root / "predictions" / "shifted.models.txt").unlink()
    bad = np.load(root / "predictions" / "id.npy")
    bad[1, 4, 2] = np.nan
    np.save(root / "predictions" / "id.npy", bad)
    _expect(root, "id.npy: model 'm_logits': 1 row(s) hold NaN")
    (root / "predictions" / "m_x").mkdir()
    _expect(root, "holds both model folders ['m_x']", "use one layout")
    (root / "predictions" / "m_x").rmdir()
    names.unlink()
    _expect(root, "id.npy: a (models, inputs, classes) tensor needs its model names")


def test_pandas_csv_header_and_index_column_are_read(tmp_path):
    import pandas as pd

    from labelfree.zoo.predictions import read_label_array, read_matrix

    m = softmax(np.random.default_rng(2).normal(size=(12, 3)))
    pd.DataFrame(m, columns=["a", "b", "c"]).to_csv(tmp_path / "p.csv")
    np.testing.assert_allclose(read_matrix(tmp_path / "p.csv")[0], m)
    pd.DataFrame(m).to_csv(tmp_path / "q.csv", index=False)
    np.testing.assert_allclose(read_matrix(tmp_path / "q.csv")[0], m)
    pd.DataFrame(m).to_csv(tmp_path / "r.csv", header=False)
    with pytest.raises(PredictionZooError, match="r.csv: the first column counts 0, 1, ..., 11"):
        read_matrix(tmp_path / "r.csv")
    pd.Series(np.arange(12) % 3, name="label").to_csv(tmp_path / "y.csv")
    np.testing.assert_array_equal(read_label_array(tmp_path / "y.csv"), np.arange(12) % 3)


def test_log_probabilities_with_minus_inf_enter_as_finite_logits(tmp_path):
    root = make_zoo(tmp_path)
    p = softmax(np.random.default_rng(3).normal(size=(30, 4)))
    p[:4, 1] = 0
    p /= p.sum(1, keepdims=True)
    with np.errstate(divide="ignore"):
        np.savez(root / "predictions" / "m_logits" / "id.npz", logits=np.log(p))
    zoo = scan(root)
    lg = load_logits(zoo, "m_logits", "id")
    assert np.isfinite(lg).all() and lg.dtype == np.float32
    np.testing.assert_allclose(softmax(lg.astype(np.float64)), p, atol=1e-6)


def test_percent_probabilities_are_refused(tmp_path):
    root = make_zoo(tmp_path)
    np.save(root / "predictions" / "m_probs" / "id.npy",
            100 * softmax(np.random.default_rng(4).normal(size=(30, 4))))
    _expect(root, "m_probs/id.npy", "model 'm_probs'", "sums to 100", "percent")
    _expect(root, "m_probs/id.npy", "sums to 100", kind="probabilities")
