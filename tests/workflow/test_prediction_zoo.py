"""A prediction zoo through the real workflow (issue 14 item 1): a folder of arrays, validated at
parse time, imported into the inference artefacts, then LaF, the scorecard and the answer run on
it unchanged; the studies that need weights say in one line that they skip it. A bad folder
stops the run before any job with one message naming every bad file and its model."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.workflow.runner import run_snakemake

pytestmark = pytest.mark.slow

K, N = 10, 200
MODELS = {"m0": 0.5, "m1": 0.65, "m2": 0.8, "m3": 0.9}  # accuracy each model is built to have


def make_folder(root: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """4 models x 200 inputs x 10 classes on two test sets, `id` labelled, `shifted` not; one
    model stores logits as npz, one probabilities as npy, one logits as csv, one logits as npy.
    Returns each model's argmax on `id` (to check accuracies by hand) and the labels."""
    gen = np.random.default_rng(seed)
    truth = {"id": gen.integers(0, K, N), "shifted": gen.integers(0, K, N)}
    (root / "labels").mkdir(parents=True)
    np.save(root / "labels" / "id.npy", truth["id"])
    argmax = {}
    for i, (m, acc) in enumerate(MODELS.items()):
        d = root / "predictions" / m
        d.mkdir(parents=True)
        for t, y in truth.items():
            right = gen.random(N) < (acc if t == "id" else acc - 0.2)
            pred = np.where(right, y, (y + gen.integers(1, K, N)) % K)
            z = gen.normal(size=(N, K))
            z[np.arange(N), pred] += 3.0
            if t == "id":
                argmax[m] = z.argmax(axis=1)
            if i == 0:
                np.savez(d / f"{t}.npz", logits=z)
            elif i == 1:
                p = np.exp(z - z.max(axis=1, keepdims=True))
                np.save(d / f"{t}.npy", p / p.sum(axis=1, keepdims=True))
            elif i == 2:
                np.savetxt(d / f"{t}.csv", z, delimiter=",", fmt="%.8f")
            else:
                np.save(d / f"{t}.npy", z.astype(np.float32))
    return {"labels": truth["id"], **argmax}


def write_config(folder: Path) -> Path:
    """Only the zoo: every study key omitted (defaults), LaF and the scorecard made lighter."""
    cfg = {
        "zoos": {"preds": {"predictions": folder.name}},
        "laf": {"repetitions": 3, "ces": {"repetitions": 1}},
        "scorecard": {"runs": 2, "budgets": [10, 20]},
    }
    path = folder.parent / "preds.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_prediction_zoo_runs_to_the_answer(tmp_path):
    truth = make_folder(tmp_path / "zoo")
    cfg = write_config(tmp_path / "zoo")
    work = tmp_path / "run"
    proc = run_snakemake(work, configfile=cfg, timeout=900)
    err = proc.stderr
    for study in ("pace", "syp", "alphatrim", "metamorphic"):  # one line each, then the run
        lines = [ln for ln in err.splitlines() if ln.startswith(f"labelfree: {study} skipped:")]
        assert len(lines) == 1, err[-3000:]
    assert "labelfree: laf skip" not in err and "labelfree: scorecard skip" not in err

    res = work / "results"
    answer = (res / "answer" / "preds" / "answer.md").read_text()
    assert all(f"`{m}`" in answer for m in MODELS)
    table = pd.read_csv(res / "answer" / "preds" / "answer.csv")
    on_id = table[table["testset"] == "id"].set_index("model")
    for m in MODELS:  # true accuracy by hand: argmax of the arrays written above vs labels
        want = float((truth[m] == truth["labels"]).mean())
        assert on_id.loc[m, "true_accuracy"] == pytest.approx(want, abs=1e-4)
    assert table[table["testset"] == "shifted"]["true_accuracy"].isna().all()  # unlabelled
    # LaF ranks the most accurate model first on this well-separated zoo
    assert on_id["laf_rank"].idxmin() == "m3"

    acc = pd.read_csv(res / "infer" / "preds" / "accuracy.csv").set_index("model")
    assert acc["shifted"].isna().all() and acc.loc["m1", "id"] == pytest.approx(
        float((truth["m1"] == truth["labels"]).mean()), abs=1e-4)
    meta = yaml.safe_load((res / "zoo" / "preds" / "m1" / "meta.json").read_text())
    assert meta["source"] == "predictions" and meta["kind"] == "probabilities"
    # LaF's tables and the scorecard ran on the labelled test set
    rq1 = pd.read_csv(res / "laf" / "tables" / "table3-4-all-id.csv")
    assert "preds" in set(rq1["zoo"])
    assert (res / "scorecard" / "tables" / "extra-preds-ranking.csv").is_file()
    assert not (res / "pace").exists() and not (res / "syp").exists()


def test_bad_folder_stops_at_parse_time_naming_every_file_and_model(tmp_path):
    folder = tmp_path / "zoo"
    make_folder(folder)
    np.save(folder / "predictions" / "m3" / "shifted.npy", np.full((N, K - 1), 2.0))  # wrong K
    bad = np.load(folder / "predictions" / "m0" / "id.npz")["logits"]
    bad[5, 2] = np.nan
    np.savez(folder / "predictions" / "m0" / "id.npz", logits=bad)
    cfg = write_config(folder)
    work = tmp_path / "run"
    proc = run_snakemake(work, "--dry-run", configfile=cfg, check=False, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    line = next((ln for ln in out.splitlines() if "prediction zoo 'preds'" in ln), "")
    assert "2 problems" in line, out[-3000:]
    assert f"{folder.resolve()}/predictions/m3/shifted.npy: model 'm3' has K = 9" in line
    assert f"{folder.resolve()}/predictions/m0/id.npz: model 'm0': 1 row(s) hold NaN" in line
    assert not (work / "results").exists()
    # fixed, the same folder parses (the failed scan was not cached)
    shutil.rmtree(folder)
    make_folder(folder)
    assert run_snakemake(work, "--dry-run", configfile=cfg, timeout=300).returncode == 0
