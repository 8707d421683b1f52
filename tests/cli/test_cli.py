"""The ``labelfree`` command end to end, in subprocesses (issue 14 item 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[2]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    return subprocess.run([sys.executable, "-m", "labelfree.cli", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    """Four models whose accuracy grows with the index; logits in npy, probabilities in npz/csv."""
    d = tmp_path_factory.mktemp("zoo")
    r = np.random.default_rng(0)
    N, K = 200, 4
    y = r.integers(0, K, N)
    (d / "preds").mkdir()
    for m in range(4):
        z = r.normal(size=(N, K))
        z[np.arange(N), y] += 0.5 + 0.8 * m
        if m == 0:
            np.save(d / "preds" / f"m{m}.npy", z)  # logits
        elif m == 1:
            np.savez(d / "preds" / f"m{m}.npz", probs=_softmax(z))
        else:
            np.save(d / "preds" / f"m{m}.npy", _softmax(z).astype(np.float32))
    np.save(d / "labels.npy", y)
    return d, y


def test_console_script_declared():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"labelfree": "labelfree.cli:main"}


def test_help_has_an_example():
    out = run("--help")
    assert out.returncode == 0 and "labelfree rank preds/" in out.stdout
    out = run("select", "--help")
    assert out.returncode == 0 and "--budget" in out.stdout and "example" in out.stdout


def test_rank_orders_the_models(zoo):
    d, _ = zoo
    out = run("rank", str(d / "preds"), "--csv")
    assert out.returncode == 0, out.stderr
    df = pd.read_csv(pd.io.common.StringIO(out.stdout))
    assert df["model"].tolist()[0] == "m3" and df["rank_LaF"].tolist() == [1, 2, 3, 4]
    assert {"LaF", "CRC-mean", "EnsembleAgreement", "MaNo"} <= set(df.columns)


def test_estimate_label_free_and_with_source(zoo):
    d, y = zoo
    out = run("estimate", str(d / "preds"), "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [r["model"] for r in rows] == ["m0", "m1", "m2", "m3"] and "AC" in rows[0]
    assert "ATC-MC (needs --source and --source-labels)" in out.stderr
    out = run("estimate", str(d / "preds"), "--source", str(d / "preds"), "--source-labels",
              str(d / "labels.npy"), "--method", "DoC", "--csv")
    assert out.returncode == 0, out.stderr
    df = pd.read_csv(pd.io.common.StringIO(out.stdout))
    # DoC on its own source returns the source accuracy (scorecard spec 5 check 1)
    P = [np.load(d / "preds" / "m2.npy")]
    assert df.loc[2, "DoC"] == pytest.approx(np.mean(P[0].argmax(1) == y), abs=1e-6)


def test_select_then_estimate_from_labels(zoo, tmp_path):
    d, y = zoo
    out = run("select", str(d / "preds"), "--budget", "30", "--method", "SRS", "--csv")
    assert out.returncode == 0, out.stderr
    picks = pd.read_csv(pd.io.common.StringIO(out.stdout))
    assert len(picks) == 30 and picks["index"].nunique() == 30
    picks["label"] = y[picks["index"]]
    picks[["index", "label"]].to_csv(tmp_path / "lab.csv", index=False)
    out = run("estimate", str(d / "preds"), "--labels", str(tmp_path / "lab.csv"), "--json")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    idx = picks["index"].to_numpy()
    P3 = np.load(d / "preds" / "m3.npy")
    assert rows[3]["accuracy"] == pytest.approx(np.mean(P3[idx].argmax(1) == y[idx]))
    assert rows[3]["labels"] == 30
    out = run("select", str(d / "preds"), "--budget", "20")  # PACE by default
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.strip().splitlines()) == 21  # header + 20 picks


# Each bad input of issue 14 item 1, as the command and the workflow's prediction-zoo scan
# (labelfree.zoo.predictions.scan, run at parse time) see it: the same file gives the same
# message, naming the file and the model. (writer, kind of file, words the message must hold)
BAD = {
    "wrong_k": (lambda p: np.save(p.with_suffix(".npy"), _softmax(np.zeros((200, 3)))),
                "has K = 3 classes; the zoo's other files have K = 4"),
    "nan": (lambda p: np.save(p.with_suffix(".npy"), np.where(np.eye(200, 4) > 0, np.nan, 0.25)),
            "4 row(s) hold NaN or infinite values (the first: nan at row 0, column 0)"),
    "inf_logits": (lambda p: np.savez(p.with_suffix(".npz"),
                                      logits=np.where(np.eye(200, 4) > 0, np.inf, 1.0)),
                   "row(s) hold NaN or infinite values (the first: inf"),
    "percent": (lambda p: np.save(p.with_suffix(".npy"), 100 * _softmax(np.zeros((200, 4)))),
                "every row is non-negative and sums to 100: probabilities in percent?"),
    "dead_row": (lambda p: np.save(p.with_suffix(".npy"), np.where(np.eye(200, 4) > -1,
                                                                   -np.inf, 0.0)),
                 "200 row(s) are -inf in every class"),
    "probs_sum": (lambda p: np.savez(p.with_suffix(".npz"), probs=np.full((200, 4), 0.3)),
                  "declared probabilities, but rows are negative or do not sum to 1 (row 0 "
                  "sums to 1.2"),
    "auto_sum": (lambda p: np.savetxt(p.with_suffix(".csv"), np.full((200, 4), 0.2),
                                      delimiter=","),
                 "rows look like probabilities (all in [0, 1]) but do not sum to 1 (row 0 sums "
                 "to 0.8"),
    "rows": (lambda p: np.save(p.with_suffix(".npy"), _softmax(np.zeros((150, 4)))),
             "has 150 rows; the other models have 200: every model must score the same inputs"),
    "unreadable": (lambda p: p.with_suffix(".npy").write_bytes(b"\x93NUMPY truncated"),
                   "not readable as an array"),
    "shape": (lambda p: np.save(p.with_suffix(".npy"), np.zeros(200)),
              "expected an (N, K) matrix with K >= 2, got shape (200,)"),
}


def _problem(message: str, model: str) -> str:
    """The part of a one-file message after its file name (paths differ between the two)."""
    head = f"model {model!r}"
    return head + message.split(head, 1)[1].split("; ", 1)[0] if head in message else message


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_one_line_naming_file_and_model_as_the_zoo_scan_does(zoo, tmp_path, case):
    from labelfree.zoo.predictions import PredictionZooError, scan

    d, _ = zoo
    write, msg = BAD[case]
    good = {"m1": np.load(d / "preds" / "m1.npz")["probs"], "m2": np.load(d / "preds" / "m2.npy")}
    # the command: a folder of one file per model
    (tmp_path / "cli").mkdir()
    for m, a in good.items():
        np.save(tmp_path / "cli" / f"{m}.npy", a)
    write(tmp_path / "cli" / "zz_bad")
    bad = next((tmp_path / "cli").glob("zz_bad.*"))
    out = run("rank", str(tmp_path / "cli"))
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("labelfree: error: "), out.stderr
    assert f"{bad}: model 'zz_bad'" in lines[0] and msg in lines[0], out.stderr
    # the workflow: the same files as a prediction zoo, one test set `id`
    for m, a in good.items():
        (tmp_path / "zoo" / "predictions" / m).mkdir(parents=True)
        np.save(tmp_path / "zoo" / "predictions" / m / "id.npy", a)
    (tmp_path / "zoo" / "predictions" / "zz_bad").mkdir()
    zbad = tmp_path / "zoo" / "predictions" / "zz_bad" / f"id{bad.suffix}"
    zbad.write_bytes(bad.read_bytes())
    with pytest.raises(PredictionZooError) as err:
        scan(tmp_path / "zoo")
    assert f"{zbad}: model 'zz_bad'" in str(err.value)
    same = _problem(str(err.value), "zz_bad").replace(" on test set 'id'", "")
    assert same == _problem(lines[0], "zz_bad")
    # the command on the prediction zoo folder: the scan's message, on one line
    out = run("rank", str(tmp_path / "zoo"))
    assert out.returncode == 2 and out.stdout == ""
    zlines = out.stderr.strip().splitlines()
    assert len(zlines) == 1 and zlines[0] == f"labelfree: error: {err.value}", out.stderr


def test_every_bad_file_in_one_line(zoo, tmp_path):
    d, _ = zoo
    np.save(tmp_path / "a.npy", _softmax(np.zeros((200, 3))))
    np.save(tmp_path / "b.npy", np.full((200, 4), np.nan))
    out = run("estimate", str(d / "preds"), str(tmp_path / "a.npy"), str(tmp_path / "b.npy"))
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert out.stderr.startswith("labelfree: error: 2 problems: ")
    assert "a.npy: model 'a' has K = 3" in out.stderr and "b.npy: model 'b': 200 row(s)" in out.stderr


def test_unreadable_and_missing_files(tmp_path):
    f = tmp_path / "broken.npy"
    f.write_bytes(b"not numpy")
    out = run("estimate", str(f))
    assert out.returncode == 2 and "broken.npy: model 'broken': not readable" in out.stderr
    out = run("estimate", str(tmp_path / "nope"))
    assert out.returncode == 2 and "nope: no such file or folder" in out.stderr


def test_kind_declared_or_forced(zoo, tmp_path):
    d, _ = zoo
    # --input probs refuses logits, naming the file; --input logits takes any finite matrix
    out = run("rank", str(d / "preds" / "m0.npy"), str(d / "preds" / "m2.npy"), "--input",
              "probs")
    assert out.returncode == 2 and "m0.npy: model 'm0': declared probabilities" in out.stderr
    np.savetxt(tmp_path / "flat.csv", np.full((200, 4), 0.2), delimiter=",")
    out = run("rank", str(tmp_path / "flat.csv"), str(d / "preds" / "m0.npy"), "--input",
              "logits", "--method", "LaF")
    assert out.returncode == 0, out.stderr


def test_features_and_source_labels_read_by_the_zoo_reader(zoo, tmp_path):
    d, y = zoo
    r = np.random.default_rng(3)
    (tmp_path / "f").mkdir()
    for m in ("m0", "m1", "m2", "m3"):
        np.save(tmp_path / "f" / f"{m}.npy", r.normal(size=(200, 5)).astype(np.float32))
    out = run("rank", str(d / "preds"), "--features", str(tmp_path / "f"), "--method",
              "Dispersion", "--csv")
    assert out.returncode == 0, out.stderr
    df = pd.read_csv(pd.io.common.StringIO(out.stdout))
    assert df["Dispersion"].notna().all() and len(df) == 4
    # FD: features on the target and on the source set; here the same, so FD = 0 for all
    out = run("rank", str(d / "preds"), "--features", str(tmp_path / "f"), "--source",
              str(d / "preds"), "--source-labels", str(d / "labels.npy"), "--source-features",
              str(tmp_path / "f"), "--method", "FD", "--csv")
    assert out.returncode == 0, out.stderr
    fd = pd.read_csv(pd.io.common.StringIO(out.stdout))["FD"]
    np.testing.assert_allclose(fd, 0.0, atol=1e-6)  # Frechet distance of a set to itself
    np.save(tmp_path / "f" / "m2.npy", np.ones((199, 5)))
    out = run("rank", str(d / "preds"), "--features", str(tmp_path / "f"), "--method",
              "Dispersion")
    assert out.returncode == 2 and "f/m2.npy: model 'm2': expected (200, D)" in out.stderr
    (tmp_path / "f" / "m2.npy").unlink()
    out = run("rank", str(d / "preds"), "--features", str(tmp_path / "f"))
    assert out.returncode == 2 and "m2.npy: model 'm2' has no features file" in out.stderr
    np.save(tmp_path / "short.npy", y[:10])
    out = run("estimate", str(d / "preds"), "--source", str(d / "preds"), "--source-labels",
              str(tmp_path / "short.npy"))
    assert out.returncode == 2 and "short.npy: expected 200 labels" in out.stderr


def test_csv_input_and_methods_listing(tmp_path):
    r = np.random.default_rng(1)
    for m in range(3):
        np.savetxt(tmp_path / f"c{m}.csv", _softmax(r.normal(size=(40, 3)) * (m + 1)),
                   delimiter=",")
    out = run("rank", str(tmp_path), "--method", "LaF")
    assert out.returncode == 0, out.stderr
    assert "c0" in out.stdout
    out = run("methods", "--csv")
    assert out.returncode == 0
    df = pd.read_csv(pd.io.common.StringIO(out.stdout))
    assert {"rank", "estimate", "select", "fewlabel"} == set(df["kind"])


# A prediction zoo folder, the workflow's layout (docs/your-zoo.md section 2): one file per model
# and test set, labels and features optional and per test set.


@pytest.fixture(scope="module")
def pzoo(tmp_path_factory, zoo):
    """The four models of `zoo` on `id` (labelled, the files of `zoo`) and on `shift` (noisier, no
    labels), with `penultimate` features on both; also the `shift` files as a folder of files."""
    d, y = zoo
    root = tmp_path_factory.mktemp("pzoo")
    r = np.random.default_rng(5)
    N, K = 150, 4
    y_shift = r.integers(0, K, N)
    for f in sorted((d / "preds").iterdir()):
        m = f.stem
        (root / "zoo" / "predictions" / m).mkdir(parents=True)
        (root / "zoo" / "features" / m).mkdir(parents=True)
        (root / "zoo" / "predictions" / m / f"id{f.suffix}").write_bytes(f.read_bytes())
        z = r.normal(size=(N, K)) * 1.5
        z[np.arange(N), y_shift] += 0.3 + 0.5 * int(m[1:])
        z = z if m == "m0" else _softmax(z)  # what the model's id file holds (one kind a model)
        np.save(root / "zoo" / "predictions" / m / "shift.npy", z)
        (root / "files").mkdir(exist_ok=True)
        np.save(root / "files" / f"{m}.npy", z)
        for t, n in (("id", len(y)), ("shift", N)):
            np.save(root / "zoo" / "features" / m / f"{t}.penultimate.npy", r.normal(size=(n, 6)))
    (root / "zoo" / "labels").mkdir()
    np.save(root / "zoo" / "labels" / "id.npy", y)
    return root, y


def _frame(out) -> pd.DataFrame:
    assert out.returncode == 0, out.stderr
    return pd.read_csv(pd.io.common.StringIO(out.stdout))


def test_prediction_zoo_ranks_a_test_set_as_its_files_do(pzoo):
    root, _ = pzoo
    by_zoo = _frame(run("rank", str(root / "zoo"), "--testset", "shift", "--method", "LaF",
                        "--method", "MaNo", "--csv"))
    by_files = _frame(run("rank", str(root / "files"), "--method", "LaF", "--method", "MaNo",
                          "--csv"))
    pd.testing.assert_frame_equal(by_zoo, by_files)  # shift has no labels: no true accuracy
    assert by_zoo["model"].tolist()[0] == "m3"


def test_prediction_zoo_true_accuracy_where_labels_exist(pzoo, zoo):
    root, y = pzoo
    d, _ = zoo
    df = _frame(run("estimate", str(root / "zoo"), "--testset", "id", "--method", "AC", "--csv"))
    for i in range(4):
        f = next((d / "preds").glob(f"m{i}.*"))
        P = np.load(f)["probs"] if f.suffix == ".npz" else np.load(f)
        assert df.loc[i, "true_accuracy"] == pytest.approx(np.mean(P.argmax(1) == y))
    # a zoo of one test set needs no --testset
    one = root / "one"
    for m in ("m0", "m3"):
        (one / "predictions" / m).mkdir(parents=True)
        src = root / "zoo" / "predictions" / m / "id.npy"
        (one / "predictions" / m / "id.npy").write_bytes(src.read_bytes())
    out = _frame(run("rank", str(one), "--method", "LaF", "--csv"))
    assert sorted(out["model"]) == ["m0", "m3"] and "true_accuracy" not in out


def test_prediction_zoo_source_and_features_from_its_folder(pzoo, zoo):
    """--source names the zoo's labelled test set; features come from features/<model>/."""
    root, y = pzoo
    d, _ = zoo
    by_zoo = _frame(run("estimate", str(root / "zoo"), "--testset", "shift", "--source", "id",
                        "--method", "DoC", "--method", "ATC-MC", "--csv"))
    by_files = _frame(run("estimate", str(root / "files"), "--source", str(d / "preds"),
                          "--source-labels", str(d / "labels.npy"), "--method", "DoC",
                          "--method", "ATC-MC", "--csv"))
    pd.testing.assert_frame_equal(by_zoo, by_files)
    feats = root / "feats"
    feats.mkdir()
    for m in ("m0", "m1", "m2", "m3"):
        src = root / "zoo" / "features" / m / "shift.penultimate.npy"
        (feats / f"{m}.npy").write_bytes(src.read_bytes())
    by_zoo = _frame(run("rank", str(root / "zoo"), "--testset", "shift", "--method", "Dispersion",
                        "--csv"))
    by_files = _frame(run("rank", str(root / "files"), "--features", str(feats), "--method",
                          "Dispersion", "--csv"))
    pd.testing.assert_frame_equal(by_zoo, by_files)
    out = run("select", str(root / "zoo"), "--testset", "shift", "--budget", "10", "--csv")
    assert len(_frame(out)) == 10


@pytest.mark.parametrize("args, words", [
    (["rank"], "prediction zoo with test sets ['id', 'shift']; pick one with --testset"),
    (["rank", "--testset", "nope"], "has no file for test set(s) ['nope']"),
    (["estimate", "--testset", "id", "--source", "shift", "--method", "DoC"],
     "test set 'shift' has no labels file (labels/shift.npy), which --source needs"),
    (["rank", "--testset", "id", "--layer", "logits", "--method", "Dispersion"],
     "model 'm0' has no 'logits' features (--layer)"),
    (["rank", "--testset", "id", "--features", "x"], "--features: a prediction zoo brings its own"),
])
def test_prediction_zoo_misuse_one_line(pzoo, args, words):
    root, _ = pzoo
    out = run(args[0], str(root / "zoo"), *args[1:])
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], out.stderr


def test_prediction_zoo_bad_file_names_file_and_model(pzoo, tmp_path):
    root, _ = pzoo
    import shutil

    shutil.copytree(root / "zoo", tmp_path / "z")
    bad = tmp_path / "z" / "predictions" / "m2" / "shift.npy"
    np.save(bad, np.full((150, 4), np.nan))  # m2 holds probabilities
    out = run("rank", str(tmp_path / "z"), "--testset", "id")  # only the sets it reads
    assert out.returncode == 0, out.stderr
    out = run("rank", str(tmp_path / "z"), "--testset", "shift")
    assert out.returncode == 2
    assert f"{bad.resolve()}: model 'm2'" in out.stderr and "NaN" in out.stderr, out.stderr
