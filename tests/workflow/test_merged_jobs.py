"""The default run's merged jobs (docs/pipeline.md, "Jobs, Python processes and the no-op
rerun"): `inference.jobs: bundle` runs every group of a bundled zoo in one job, `shifts.jobs:
dataset` writes every shifted set of a dataset in one job, `laf.jobs: zoo` analyses a zoo in one
job and `pace.jobs: study` runs PACE's experiments in one job. A key read wrongly (the mode
ignored, or a merged job writing other sets than the separate jobs) fails here."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.workflow.runner import REPO, SMOKE_CONFIG, run_snakemake

pytestmark = pytest.mark.slow


def _job_counts(stdout: str) -> dict[str, int]:
    """Rule -> planned jobs, from a dry run's job stats table."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^(\w+)\s+(\d+)$", stdout, flags=re.M) if m.group(1) != "total"}


def test_default_run_plans_one_job_per_zoo_dataset_and_study_step(tmp_path):
    cfg = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    proc = run_snakemake(tmp_path / "run", "--dry-run", configfile=REPO / "config" / "config.yaml")
    counts = _job_counts(proc.stdout)
    bundled = [z for z, zc in cfg["zoos"].items() if zc.get("bundle", "zoo") == "zoo"]
    assert bundled, "the default run has no bundled zoo"
    inference = {r: n for r, n in counts.items() if r.startswith("inference_bundle_")}
    assert inference == {f"inference_bundle_{z}_all": 1 for z in bundled}, inference
    # one shifts job per dataset whose corrupted or natural copies some zoo tests on
    shifted = {zc["dataset"] for zc in cfg["zoos"].values()
               if {"corruptions", "natural"} & set(zc.get("testsets", []))}
    assert len(shifted) > 1, shifted
    assert counts.get("shifts_testsets") == len(shifted), counts
    assert "shifts_corruption" not in counts, counts
    analysed = len(cfg["laf"]["zoos"]) + len(cfg["laf"]["clones"])
    assert counts.get("laf_part") == analysed, counts
    assert counts.get("pace_experiments") == 1 and "pace_experiment" not in counts, counts


def _config(tmp_path: Path, **shifts) -> Path:
    cfg = yaml.safe_load(SMOKE_CONFIG.read_text())
    cfg["shifts"] = {**cfg.get("shifts", {}), **shifts}
    path = tmp_path / f"cfg-{'-'.join(f'{k}-{v}' for k, v in shifts.items())}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def test_one_shifts_job_writes_the_sets_of_the_per_corruption_jobs(tmp_path):
    cfg = yaml.safe_load(SMOKE_CONFIG.read_text())
    shifts = cfg.get("shifts", {})
    names = [f"{c}-{s}" for c in shifts["corruptions"] for s in shifts.get("severities", range(1, 6))]
    names += shifts.get("natural", [])
    targets = [f"results/testsets/digits/{n}.npz" for n in names]
    runs = {}
    for mode in ("dataset", "corruption"):
        work = tmp_path / mode
        proc = run_snakemake(work, *targets, configfile=_config(tmp_path, jobs=mode))
        runs[mode] = work
        rules = set(re.findall(r"^(?:local)?rule (\w+):", proc.stdout + proc.stderr, flags=re.M))
        assert ("shifts_testsets" in rules) == (mode == "dataset"), rules
    for name in names:
        merged = np.load(runs["dataset"] / f"results/testsets/digits/{name}.npz")
        apart = np.load(runs["corruption"] / f"results/testsets/digits/{name}.npz")
        assert sorted(merged.files) == sorted(apart.files), name
        for key in apart.files:
            np.testing.assert_array_equal(merged[key], apart[key], err_msg=f"{name}: {key}")
