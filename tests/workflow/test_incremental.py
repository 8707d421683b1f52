"""Incremental zoos (issue 23, docs/zoo.md): the model is the unit of work.

On the smoke config with the `digits` zoo at one model per job (`bundle: model`) on its `id`
test set (the corruption sets would add inference jobs that say nothing here): adding a row
trains and infers only the new model (one training job, one inference job per test-set group of
the zoo, then the zoo's readers), and leaves every existing model's files as they were (same
bytes, same mtimes); removing a row reruns no training or inference, only the readers; adding
a test-set group to the zoo runs inference on that group alone.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.workflow.runner import SMOKE_CONFIG, run_snakemake

pytestmark = pytest.mark.slow

TARGET = "results/infer/digits/accuracy.csv"
# the smoke config's digits grid, one family per row so that a row can be added or removed
BASE_ROWS = [
    {"arch": "mlp", "width": 16, "epochs": 8, "batch_size": 32, "seed": 0},
    {"arch": "mlp", "width": 64, "epochs": 8, "batch_size": 32, "seed": 0},
    {"arch": "lenet", "width": 4, "epochs": 4, "batch_size": 32, "seed": 0},
    {"arch": "resnet", "width": 4, "epochs": 2, "batch_size": 32, "seed": 0},
]
NEW_ROW = {"arch": "mlp", "width": 32, "epochs": 8, "batch_size": 32, "seed": 0}
NEW_MODEL = "mlp-w32-adam-e8-f1-s0"
REMOVED_MODEL = "mlp-w16-adam-e8-f1-s0"


def _config(tmp: Path, name: str, rows: list[dict], testsets: tuple[str, ...] = ("id",)) -> Path:
    """The smoke config with the digits zoo at one model per job, the given rows and sets."""
    cfg = yaml.safe_load(SMOKE_CONFIG.read_text())
    cfg["zoos"]["digits"].update(bundle="model", grid=rows, testsets=list(testsets))
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _planned(workdir: Path, cfg: Path, quiet: bool = True) -> dict[str, int] | tuple[dict, str]:
    """Rule -> number of jobs that `snakemake --dry-run` plans for TARGET (its job-stats table);
    with ``quiet=False`` also the whole dry-run output (the jobs and their wildcards)."""
    args = ("--quiet", "rules") if quiet else ()
    proc = run_snakemake(workdir, TARGET, "--dry-run", *args, configfile=cfg)
    out = proc.stdout + proc.stderr
    rows = re.findall(r"^(\w+)\s+(\d+)$", out, flags=re.M)
    planned = {} if "Nothing to be done" in out else {
        rule: int(n) for rule, n in rows if rule != "total"}
    return planned if quiet else (planned, out)


def _files(workdir: Path) -> dict[str, tuple[bytes, int]]:
    """Bytes and mtime (ns) of every model file and inference file of the digits zoo."""
    roots = [workdir / "results" / "zoo" / "digits", workdir / "results" / "infer" / "digits"]
    return {
        str(p.relative_to(workdir)): (p.read_bytes(), p.stat().st_mtime_ns)
        for root in roots
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.suffix in {".safetensors", ".json", ".npz"}
    }


def test_adding_a_row_runs_only_the_new_model_and_removing_one_runs_no_model(tmp_path):
    work = tmp_path / "run"
    base = _config(tmp_path, "base", BASE_ROWS)
    run_snakemake(work, TARGET, configfile=base)
    before = _files(work)
    assert len([f for f in before if f.endswith("weights.safetensors")]) == 4

    # add one row: one training job, one inference job (group id), the table
    added = _config(tmp_path, "added", [*BASE_ROWS, NEW_ROW])
    planned, out = _planned(work, added, quiet=False)  # one dry run: jobs and their wildcards
    assert planned == {"zoo_model": 1, "inference_model": 1, "accuracy_table": 1}
    assert re.findall(r"model=([^,\s]+)", out) == [NEW_MODEL] * 2
    run_snakemake(work, TARGET, configfile=added)
    after = _files(work)
    assert {k: v for k, v in after.items() if k in before} == before, "existing files changed"
    new = sorted(k for k in after if k not in before)
    assert new == [
        f"results/infer/digits/{NEW_MODEL}/id.npz",
        f"results/zoo/digits/{NEW_MODEL}/meta.json",
        f"results/zoo/digits/{NEW_MODEL}/weights.safetensors",
    ]
    assert NEW_MODEL in pd.read_csv(work / TARGET)["model"].tolist()

    # remove one row: no training, no inference; only the zoo's reader reruns
    removed = _config(tmp_path, "removed", [*BASE_ROWS[1:], NEW_ROW])
    assert _planned(work, removed) == {"accuracy_table": 1}
    run_snakemake(work, TARGET, configfile=removed)
    assert _files(work) == after, "removing a row touched model or inference files"
    models = pd.read_csv(work / TARGET)["model"].tolist()
    assert REMOVED_MODEL not in models and len(models) == 4
    assert _planned(work, removed) == {}

    # a new test-set group: inference runs on that group only (one job per model), no training;
    # the per-model jobs list the group through its one stand-in file (rule testset_group); the
    # smoke config writes the dataset's shifted sets in one job (shifts.jobs: dataset)
    grouped = _config(tmp_path, "grouped", [*BASE_ROWS[1:], NEW_ROW], ("id", "natural"))
    assert _planned(work, grouped) == {
        "shifts_testsets": 1, "testset_group": 1, "inference_model": 4, "accuracy_table": 1
    }
