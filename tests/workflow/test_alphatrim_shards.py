"""alphatrim seed-block shards (issue 16, alpha-trimming bullet 2; issue 23 item 1): with
`models_per_job` an experiment's zoos train in resumable jobs of consecutive seeds whose merge is
the result of one job, byte for byte (two runs on the same machine, so the bytes must agree).

The smoke run (the suite's shared one) trains the smoke config's `digits` (S_init/S_batch/S_all
of 6 models, an ensemble zoo of 12) and `synthetic` (S_all of 6) experiments as one job each; a
second run with `models_per_job: 4` (blocks [0, 4) and [4, 6) per zoo, [0, 4), [4, 8), [8, 12)
for the ensemble zoo) must give the identical trained runs table, per-candidate and ensemble
tables and summary (the report's Tables I-V are functions of these). Then the jobs a rerun
plans: a block killed before it was written reruns alone (with the merge and analysis after it);
a grown zoo trains only its new blocks.
"""

from __future__ import annotations

import copy
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.workflow.runner import SMOKE_CONFIG, run_snakemake, shared_run

pytestmark = pytest.mark.slow

SMOKE = yaml.safe_load(SMOKE_CONFIG.read_text())
EXPERIMENTS = ("digits", "synthetic")
TABLES = ("runs.csv", "per_model.csv", "ensembles.csv", "summary.json")
TARGETS = [f"results/alphatrim/raw/{e}/{t}" for e in EXPERIMENTS for t in TABLES]


def _config(tmp: Path, name: str, models_per_job: int, **regimes: int) -> Path:
    cfg = copy.deepcopy(SMOKE)
    for e in EXPERIMENTS:
        cfg["alphatrim"]["experiments"][e]["models_per_job"] = models_per_job
    cfg["alphatrim"]["experiments"]["digits"]["regimes"].update(regimes)
    path = tmp / name
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _planned(workdir: Path, configfile: Path) -> dict[str, list[str]]:
    """rule -> outputs of the jobs a run would start (dry run)."""
    out = run_snakemake(workdir, "--dry-run", *TARGETS, configfile=configfile).stdout
    jobs: dict[str, list[str]] = {}
    for rule, output in re.findall(r"^(?:local)?rule (\w+):\n(?:    .*\n)*?    output: (.*)$",
                                   out, flags=re.M):
        jobs.setdefault(rule, []).append(output)
    return jobs


@pytest.fixture(scope="module")
def runs(smoke_run, tmp_path_factory):
    """(the one-job run, the sharded run, its config): the one-job run is the suite's shared
    smoke run (tests/conftest.py; `models_per_job` 0 there), so only the sharded run is extra.
    It is built once per session, also under pytest-xdist (runner.shared_run), and no test
    changes it: the test that moves files aside works on a copy."""

    def build(sharded: Path) -> None:
        run_snakemake(sharded / "run", *TARGETS, configfile=_config(sharded, "sharded.yaml", 4))

    sharded = shared_run(tmp_path_factory, "alphatrim-shards", build)
    return smoke_run, sharded / "run", sharded / "sharded.yaml"


def test_merged_shards_equal_one_job(runs):
    one, sharded, _ = runs
    blocks = sorted(p.name for p in (sharded / "results/alphatrim/raw/digits/blocks").iterdir())
    assert blocks == [f"{z}-{a:05d}-{b:05d}.npz" for z, a, b in (
        ("E1_all", 0, 4), ("E1_all", 4, 8), ("E1_all", 8, 12), ("S_all", 0, 4), ("S_all", 4, 6),
        ("S_batch", 0, 4), ("S_batch", 4, 6), ("S_init", 0, 4), ("S_init", 4, 6))]
    assert not (one / "results/alphatrim/raw/digits/blocks").exists()
    for target in TARGETS:
        assert (sharded / target).read_bytes() == (one / target).read_bytes(), target
    for e in EXPERIMENTS:
        with np.load(one / f"results/alphatrim/raw/{e}/zoo.npz") as a, \
                np.load(sharded / f"results/alphatrim/raw/{e}/zoo.npz") as b:
            assert a.files == b.files
            for k in a.files:
                np.testing.assert_array_equal(a[k], b[k], err_msg=f"{e}: {k}")


def test_killed_block_reruns_alone(runs, tmp_path):
    """A job killed mid-training leaves its block (and so the merge and what follows) unwritten;
    the rerun trains only that block and keeps every finished one."""
    _, shared, cfg = runs
    sharded = tmp_path / "run"  # a copy (mtimes and .snakemake kept): the shared run stays whole
    shutil.copytree(shared, sharded, symlinks=True)
    assert _planned(sharded, cfg) == {}  # nothing to do after the run
    raw = sharded / "results/alphatrim/raw/digits"
    lost = [raw / "blocks/S_batch-00004-00006.npz",
            *(p for p in raw.iterdir() if p.is_file())]  # zoo.npz, runs.csv, per_model.csv, ...
    aside = tmp_path / "aside"
    aside.mkdir()
    for p in lost:
        shutil.move(p, aside / p.name)
    try:
        jobs = _planned(sharded, cfg)
    finally:
        for p in lost:
            shutil.move(aside / p.name, p)
    assert jobs["alphatrim_zoo_block"] == [
        "results/alphatrim/raw/digits/blocks/S_batch-00004-00006.npz"]
    assert sorted(jobs) == ["alphatrim_analyse", "alphatrim_zoo", "alphatrim_zoo_block"]
    assert _planned(sharded, cfg) == {}


def test_grown_zoo_trains_only_new_blocks(runs, tmp_path):
    _, sharded, _ = runs
    jobs = _planned(sharded, _config(tmp_path, "grown.yaml", 4, S_all=10))
    # S_all 6 -> 10: [0, 4) is kept, [4, 8) and [8, 10) are new; no other zoo retrains
    assert sorted(jobs["alphatrim_zoo_block"]) == [
        "results/alphatrim/raw/digits/blocks/S_all-00004-00008.npz",
        "results/alphatrim/raw/digits/blocks/S_all-00008-00010.npz",
    ]
