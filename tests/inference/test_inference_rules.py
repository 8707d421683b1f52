"""The zoo and inference rules in a scratch directory: a user sheet mixing a local model and a
checkpoint, trained/resolved, run on the `id` test set, and tabulated (docs/zoo.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from labelfree.store import load_json, read_group_manifest, read_logits
from labelfree.zoo.arch import build_model

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


@pytest.mark.slow
@pytest.mark.parametrize("bundle", ["zoo", "model"])
def test_user_zoo_through_the_rules(tmp_path, bundle):
    """One job for the whole zoo (bundle: zoo) or one per model (bundle: model, generic rules)."""
    torch.manual_seed(0)
    torch.save(build_model("mlp", (8, 8, 1), 10, width=8, depth=1).state_dict(), tmp_path / "mine.pt")
    (tmp_path / "zoo.tsv").write_text(
        "model\tsource\tarch\twidth\tepochs\tweights\n"
        "trained\tlocal\tlenet\t4\t2\t\n"
        "mine\tcheckpoint\tmlp\t8\t\tmine.pt\n"
    )
    studies = ("laf", "pace", "syp", "alphatrim", "metamorphic")
    cfg = {
        "seed": 0,
        "datasets": {"digits": {"source": "digits", "splits": {"train": 0.4, "test": 0.6}}},
        "zoos": {"user": {"dataset": "digits", "testsets": ["id", "natural"], "sheet": str(tmp_path / "zoo.tsv"),
                          "features": ["penultimate"], "bundle": bundle}},
        "inference": {"device": "cpu", "batch_size": 100},
        **{s: {"enabled": False} for s in studies},
    }
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    cmd = [SNAKEMAKE, "-s", str(REPO / "Snakefile"), "-d", str(tmp_path), "--configfile",
           str(tmp_path / "cfg.yaml"), "--cores", "1", "results/infer/user/accuracy.csv"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert proc.returncode == 0, proc.stderr[-4000:]
    table = pd.read_csv(tmp_path / "results/infer/user/accuracy.csv")
    assert table["model"].tolist() == ["trained", "mine"]
    natural = [c for c in table.columns if c.startswith("natural")]
    assert len(natural) > 1  # the group holds several sets: the per-model job lists its stand-in
    assert table.columns.tolist() == ["model", "arch", "params", "val_accuracy", "id", *natural]
    group = tmp_path / "results/testsets/digits/groups/natural.tsv"
    # one input file stands for the group's sets in per-model jobs; bundle jobs list the sets
    assert group.exists() == (bundle == "model")
    if bundle == "model":
        assert list(read_group_manifest(group)) == natural
    for t in natural:
        assert read_logits(tmp_path / "results/infer/user/mine/natural.npz", t).shape[1] == 10
    meta = load_json(tmp_path / "results/zoo/user/mine/meta.json")
    # the relative path in the sheet resolved against the sheet's folder (issue 14)
    assert meta["source"] == "checkpoint" and meta["checkpoint"] == str(tmp_path / "mine.pt")
    logits = read_logits(tmp_path / "results/infer/user/mine/id.npz", "id")
    assert logits.shape == (1078, 10)
    # a bundle runs every test-set group of the zoo in one job (inference.jobs: bundle)
    job = "all" if bundle == "zoo" else "mine/id"
    log = (tmp_path / f"logs/inference/user/{job}.log").read_text()
    assert ("2/2" if bundle == "zoo" else "1/1") in log  # progress in the job log
    assert (tmp_path / "results/infer/user/accuracy.pdf").exists()
    assert (tmp_path / f"benchmarks/inference/user/{job}.tsv").exists()
    built = "all" if bundle == "zoo" else "trained"
    assert (tmp_path / f"logs/zoo/user/{built}.log").exists()
