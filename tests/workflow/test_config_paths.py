"""Issue 14 item 5: every relative path of a config resolves against the config file's folder
(a sheet's `weights` against the sheet's), whatever the working directory: a dry run from
elsewhere finds the prediction folder, the sheet and its checkpoint."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.workflow.runner import run_snakemake

pytestmark = pytest.mark.slow


def test_relative_paths_resolve_against_the_config_folder(tmp_path):
    cfg = tmp_path / "project" / "config"
    for m in ("a", "b"):
        (cfg / "arrays" / "predictions" / m).mkdir(parents=True)
        np.save(cfg / "arrays" / "predictions" / m / "id.npy",
                np.random.default_rng(0).normal(size=(20, 3)))
    (cfg / "sheets").mkdir()
    (cfg / "sheets" / "w.safetensors").write_bytes(b"checked at parse time only for existence")
    (cfg / "sheets" / "mine.tsv").write_text(
        "model\tsource\tarch\twidth\tweights\nm16\tcheckpoint\tmlp\t16\tw.safetensors\n")
    (cfg / "c.yaml").write_text(
        "datasets:\n  digits: {source: digits}\n"
        "zoos:\n  preds: {predictions: arrays}\n"
        "  mine: {dataset: digits, testsets: [id], sheet: sheets/mine.tsv}\n")
    work = tmp_path / "elsewhere"  # neither `arrays` nor `sheets` exists here
    proc = run_snakemake(work, "--dry-run", configfile=cfg / "c.yaml", timeout=300)
    out = proc.stdout + proc.stderr
    scan = json.loads((work / ".snakemake" / "labelfree" / "predictions-preds.json").read_text())
    assert scan["zoo"]["root"] == str((cfg / "arrays").resolve())
    assert "results/zoo/mine/m16/weights.safetensors" in out  # the checkpoint's job is planned
    # the same config read from another folder: the relative paths no longer resolve
    moved = tmp_path / "c.yaml"
    moved.write_text((cfg / "c.yaml").read_text())
    proc = run_snakemake(work, "--dry-run", configfile=moved, check=False, timeout=300)
    assert proc.returncode != 0
    assert str(tmp_path / "arrays") in proc.stdout + proc.stderr
