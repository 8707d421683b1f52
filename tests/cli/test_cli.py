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
    assert "ATC-MC (needs source_labels, source_probs)" in out.stderr
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


BAD = {
    "shape": (lambda: np.zeros((5, 4, 2)), "expected an N x K matrix"),
    "k": (lambda: _softmax(np.zeros((200, 3))), "3 classes"),
    "nan": (lambda: np.where(np.eye(200, 4) > 0, np.nan, 0.25), "non-finite value nan at row 0"),
    "sum": (lambda: np.full((200, 4), 0.2), "do not sum to 1"),
    "n": (lambda: _softmax(np.zeros((150, 4))), "150 rows"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_one_line_naming_the_file(zoo, tmp_path, case):
    d, _ = zoo
    make, msg = BAD[case]
    bad = tmp_path / f"zz_bad_{case}.npy"
    np.save(bad, make())
    out = run("rank", str(d / "preds" / "m1.npz"), str(d / "preds" / "m2.npy"), str(bad))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and msg in lines[0], out.stderr
    assert out.stdout == ""


def test_unreadable_and_missing_files(tmp_path):
    f = tmp_path / "broken.npy"
    f.write_bytes(b"not numpy")
    out = run("estimate", str(f))
    assert out.returncode == 2 and "broken.npy: cannot be read" in out.stderr
    out = run("estimate", str(tmp_path / "nope"))
    assert out.returncode == 2 and "nope: no such file or folder" in out.stderr


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
