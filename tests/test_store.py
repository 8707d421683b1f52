"""The artefact store: atomic writes, contract checks, errors that name the file."""

from __future__ import annotations

import os
import time
import zipfile

import numpy as np
import pandas as pd
import pytest

from labelfree import store
from labelfree.store import ArtefactError


def _images(n=4, h=8, w=8, c=1):
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (n, h, w, c), dtype=np.uint8), np.arange(n) % 3


def test_image_set_round_trip_with_extras(tmp_path):
    x, y = _images()
    boxes = np.tile(np.array([[0, 0, 4, 4]], dtype=np.float32), (4, 1))
    store.write_image_set(tmp_path / "a.npz", x, y, boxes=boxes)
    got = store.read_image_set(tmp_path / "a.npz")
    np.testing.assert_array_equal(got.x, x)
    assert got.y.dtype == np.int64 and len(got) == 4
    np.testing.assert_array_equal(got.extras["boxes"], boxes)


@pytest.mark.parametrize(
    ("x", "y", "fragment"),
    [
        (np.zeros((2, 8, 8, 1), np.float32), np.zeros(2, int), "x must be uint8 NHWC"),
        (np.zeros((2, 8, 8), np.uint8), np.zeros(2, int), "x must be uint8 NHWC"),
        (np.zeros((2, 8, 8, 2), np.uint8), np.zeros(2, int), "1 or 3 channels"),
        (np.zeros((2, 8, 8, 1), np.uint8), np.zeros(3, int), "does not match 2 images"),
        (np.zeros((2, 8, 8, 1), np.uint8), np.array([0, -1]), "negative labels"),
    ],
)
def test_contract_breaches_name_the_file(tmp_path, x, y, fragment):
    path = tmp_path / "bad.npz"
    with pytest.raises(ArtefactError, match="bad.npz") as info:
        store.write_image_set(path, x, y)
    assert fragment in str(info.value)
    assert not path.exists()


def test_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "t.txt"
    with pytest.raises(RuntimeError), store.atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed mid-write")
    assert list(tmp_path.iterdir()) == []


def test_atomic_files_get_umask_permissions(tmp_path):
    store.save_json({"a": 1}, tmp_path / "a.json")
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o666 & ~umask


def test_corrupt_and_missing_npz_are_named(tmp_path):
    bad = tmp_path / "corrupt.npz"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(ArtefactError, match="corrupt.npz: not a readable npz"):
        store.load_npz(bad)
    with pytest.raises(ArtefactError, match="missing.npz: file not found"):
        store.load_npz(tmp_path / "missing.npz")


def test_inference_artefacts_refuse_nan_and_cast_features(tmp_path):
    logits = np.ones((3, 4), np.float64)
    store.write_inference(
        tmp_path / "m.npz", {"id": {"logits": logits, "penultimate": np.ones((3, 2, 2))}}
    )
    assert store.read_logits(tmp_path / "m.npz", "id").dtype == np.float32
    assert store.read_features(tmp_path / "m.npz", "penultimate", "id").shape == (3, 4)
    assert store.load_npz(tmp_path / "m.npz")["feat_penultimate.id"].dtype == np.float16
    logits[1, 2] = np.nan
    with pytest.raises(ArtefactError, match=r"n.npz \[id\]: logits contain NaN"):
        store.write_inference(tmp_path / "n.npz", {"id": {"logits": logits}})
    np.savez(tmp_path / "raw.npz", **{"logits.id": logits.astype(np.float32)})
    with pytest.raises(ArtefactError, match="raw.npz .id.: logits contain NaN"):
        store.read_logits(tmp_path / "raw.npz", "id")


def test_group_file_holds_every_set_and_names_a_missing_one(tmp_path):
    """One file per model and test-set group (ARCHITECTURE.md): each set is its own member,
    read alone; asking for a set the group lacks names the file and the sets it holds."""
    path = tmp_path / "g.npz"
    sets = {
        "fog-1": {"logits": np.full((2, 3), 1.0), "first": np.zeros((2, 5))},
        "fog-3": {"logits": np.arange(12.0).reshape(4, 3), "first": np.ones((4, 5))},
    }
    store.write_inference(path, sets)
    assert store.inference_testsets(path) == ["fog-1", "fog-3"]
    np.testing.assert_array_equal(store.read_logits(path, "fog-3"), sets["fog-3"]["logits"])
    assert store.read_features(path, "first", "fog-1").shape == (2, 5)
    with pytest.raises(ArtefactError, match=r"g.npz: no test set 'fog-5'.*fog-1"):
        store.read_logits(path, "fog-5")
    with pytest.raises(ArtefactError, match="has no feat_penultimate"):
        store.read_features(path, "penultimate", "fog-1")
    with pytest.raises(ArtefactError, match="at least one test set"):
        store.write_inference(tmp_path / "e.npz", {})


def test_stack_predictions(tmp_path):
    """(N, M) argmax predictions, one column per model in the order given."""
    for i, cls in enumerate([[1, 0, 2, 2, 1], [2, 2, 0, 1, 0]]):
        lg = np.zeros((5, 3), np.float32)
        lg[np.arange(5), cls] = 1
        store.write_inference(tmp_path / f"m{i}.npz", {"id": {"logits": lg}})
    pred = store.stack_predictions([tmp_path / "m0.npz", tmp_path / "m1.npz"], "id")
    assert pred.tolist() == [[1, 2], [0, 2], [2, 0], [2, 1], [1, 0]]
    back = store.stack_predictions([tmp_path / "m1.npz", tmp_path / "m0.npz"], "id")
    np.testing.assert_array_equal(back, pred[:, ::-1])


def test_tables_are_byte_stable(tmp_path):
    df = pd.DataFrame({"a": [1.0 / 3, 2.0], "b": ["x", "y"]})
    store.save_table(df, tmp_path / "t.csv", title="Table 1")
    first = (tmp_path / "t.csv").read_bytes()
    store.save_table(df, tmp_path / "t.csv", title="Table 1")
    assert (tmp_path / "t.csv").read_bytes() == first
    assert (tmp_path / "t.md").read_text().startswith("**Table 1**")


@pytest.mark.parametrize("compress", [False, True])
def test_npz_bytes_do_not_depend_on_the_clock(tmp_path, monkeypatch, compress):
    """Issue 14: the same arrays give the same npz bytes whenever they are written (zip entries
    carry the fixed 1980-01-01 time, not the clock's). The second write runs with the clock moved
    a day on, so a timestamp taken from it would change the bytes."""
    arrays = {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.array(["x", "yz"])}
    store.save_npz(tmp_path / "one.npz", compress=compress, **arrays)
    later = time.time() + 86_400.0
    monkeypatch.setattr(time, "time", lambda: later)
    monkeypatch.setattr(time, "localtime", lambda t=None: time.gmtime(later if t is None else t))
    store.save_npz(tmp_path / "two.npz", compress=compress, **arrays)
    assert (tmp_path / "one.npz").read_bytes() == (tmp_path / "two.npz").read_bytes()
    with zipfile.ZipFile(tmp_path / "two.npz") as z:
        assert {i.date_time for i in z.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_files_by_testset_and_stack_logits(tmp_path):
    """The answer and scorecard jobs' reading: each test set from the first group listing it,
    models in sheet order, stacked (models, N, K)."""
    gen = np.random.default_rng(0)
    groups = {"id": ["id"], "corr": ["fog-1", "id"]}
    files = []
    for m in ("a", "b"):
        for g, sets in groups.items():
            path = tmp_path / m / f"{g}.npz"
            store.write_inference(path, {t: {"logits": gen.normal(size=(4, 3))} for t in sets})
            files.append(path)
    by_set = store.files_by_testset(files, ["a", "b"], groups)
    assert by_set == {"id": [tmp_path / "a/id.npz", tmp_path / "b/id.npz"],
                      "fog-1": [tmp_path / "a/corr.npz", tmp_path / "b/corr.npz"]}
    stacked = store.stack_logits(by_set["fog-1"], "fog-1")
    assert stacked.shape == (2, 4, 3)
    np.testing.assert_array_equal(stacked[1], store.read_logits(tmp_path / "b/corr.npz", "fog-1"))
    with pytest.raises(store.ArtefactError, match="3 inference files"):
        store.files_by_testset(files[:3], ["a", "b"], groups)


def test_label_only_test_sets(tmp_path):
    """A prediction zoo's test set (no images): labels where given, else only its size;
    read_labels reads y alone from any test set, image sets included."""
    store.write_labels(tmp_path / "l.npz", np.array([2, 0, 1]), 3)
    np.testing.assert_array_equal(store.read_labels(tmp_path / "l.npz"), [2, 0, 1])
    store.write_labels(tmp_path / "u.npz", None, 3)
    assert store.read_labels(tmp_path / "u.npz") is None
    x = np.zeros((2, 4, 4, 1), np.uint8)
    store.write_image_set(tmp_path / "img.npz", x, np.array([1, 0]))
    np.testing.assert_array_equal(store.read_labels(tmp_path / "img.npz"), [1, 0])
    with pytest.raises(store.ArtefactError, match="3 integer class ids"):
        store.write_labels(tmp_path / "bad.npz", np.array([1, 2]), 3)
    with pytest.raises(store.ArtefactError, match="images"):  # no x: not an image set
        store.read_image_set(tmp_path / "l.npz")
    store.save_npz(tmp_path / "other.npz", z=np.zeros(2))
    with pytest.raises(store.ArtefactError, match="other.npz: a test set needs labels"):
        store.read_labels(tmp_path / "other.npz")


def test_group_manifest_lists_sets_in_order_and_changes_when_a_set_does(tmp_path):
    """The stand-in of a test-set group (inference.smk, rule testset_group): the sets in the
    group's order with their paths; a rewritten set of another size changes it; a missing set
    is named, and nothing is written."""
    paths = {}
    for name, n in (("b-1", 5), ("a-2", 7)):
        paths[name] = tmp_path / f"{name}.npz"
        store.write_image_set(paths[name], np.zeros((n, 2, 2, 1), np.uint8), np.zeros(n, np.int64))
    out = tmp_path / "groups" / "g.tsv"
    store.write_group_manifest(out, paths, log=tmp_path / "g.log")
    assert store.read_group_manifest(out) == {k: str(v) for k, v in paths.items()}
    first = out.read_text()
    store.write_image_set(paths["a-2"], np.zeros((9, 2, 2, 1), np.uint8), np.zeros(9, np.int64))
    store.write_group_manifest(out, paths)
    assert out.read_text() != first
    with pytest.raises(ArtefactError, match="'c-3'"):
        store.write_group_manifest(tmp_path / "h.tsv", {**paths, "c-3": tmp_path / "c-3.npz"})
    assert not (tmp_path / "h.tsv").exists()
