"""GPU requests of training jobs (issue 16, alpha-trimming bullet 1): a job that trains on CUDA
must ask the scheduler for a GPU, or a cluster places it on a CPU node (docs/cluster.md).

The check reads the resources Snakemake would submit for each job from a dry run of the real
workflow (its job listing prints ``resources: ..., gpu=N, ...``; the SLURM executor plugin turns
``gpu=N`` into ``sbatch --gpus=N``). Expected values follow the rules' contract:

- alphatrim_zoo / alphatrim_zoo_block: ``gpu=1`` when the experiment trains a CNN with
  ``model.device: cuda``; ``gpu=0`` for MLPs (they train on the CPU whatever the device,
  labelfree.alphatrim.run.train_models) and for the merge of seed-block shards;
- zoo_model / zoo_bundle_<zoo>_<bundle>: ``gpu=1`` when the job trains local models of a zoo with
  ``train_device: cuda``; ``gpu=0`` with ``cpu``.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from tests.workflow.runner import SMOKE_CONFIG, run_snakemake

SMOKE = yaml.safe_load(SMOKE_CONFIG.read_text())


def _jobs(workdir: Path, configfile: Path) -> list[dict[str, str]]:
    """One dict per planned job: rule, output, wildcards and each resource, from a dry run."""
    out = run_snakemake(workdir, "--dry-run", configfile=configfile, timeout=300).stdout
    jobs = []
    for block in re.split(r"\n(?=\[[^\]]+\]\n(?:local)?rule )", out):
        m = re.search(r"^(?:local)?rule (\w+):$", block, flags=re.M)
        if not m:
            continue
        job = {"rule": m.group(1)}
        for key in ("output", "wildcards", "resources"):
            k = re.search(rf"^    {key}: (.*)$", block, flags=re.M)
            job[key] = k.group(1) if k else ""
        job.update(re.findall(r"(\w+)=([^,]+)", job["resources"]))
        jobs.append(job)
    assert jobs, out[-2000:]
    return jobs


def _write(tmp: Path, cfg: dict) -> Path:
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _gpus(jobs: list[dict[str, str]], rule: str, where: str = "") -> list[str]:
    return [j.get("gpu", "0") for j in jobs
            if j["rule"] == rule and where in j["output"] + j["wildcards"]]


@pytest.fixture(scope="module")
def cuda_jobs(tmp_path_factory) -> list[dict[str, str]]:
    """The smoke graph with CUDA training: the `digits` zoo per model and `laf_tight` in one
    bundle on cuda (`laf_spread` stays on cpu); alphatrim `digits` a CUDA CNN cut into seed-block
    shards, `synthetic` an MLP with device cuda (MLPs train on the CPU)."""
    cfg = copy.deepcopy(SMOKE)
    cfg["zoos"]["digits"].update(train_device="cuda", bundle="model")
    cfg["zoos"]["laf_tight"]["train_device"] = "cuda"
    exps = cfg["alphatrim"]["experiments"]
    exps["digits"]["model"].update(arch="cnn", device="cuda")
    exps["digits"]["models_per_job"] = 16
    exps["synthetic"]["model"]["device"] = "cuda"
    tmp = tmp_path_factory.mktemp("gpu-cuda")
    return _jobs(tmp / "run", _write(tmp, cfg))


def test_alphatrim_cuda_cnn_jobs_request_a_gpu(cuda_jobs):
    blocks = _gpus(cuda_jobs, "alphatrim_zoo_block", "experiment=digits")
    # 3 regimes of 6 models and an ensemble zoo of 12: one block of 16 each
    assert blocks == ["1"] * 4
    assert _gpus(cuda_jobs, "alphatrim_zoo", "experiment=digits") == ["0"]  # merge only
    assert _gpus(cuda_jobs, "alphatrim_zoo", "experiment=synthetic") == ["0"]  # an MLP
    assert _gpus(cuda_jobs, "alphatrim_zoo", "experiment=heads") == ["0"]


def test_alphatrim_unsharded_cuda_job_requests_a_gpu(tmp_path):
    cfg = copy.deepcopy(SMOKE)
    cfg["alphatrim"]["experiments"]["digits"]["model"].update(arch="cnn", device="cuda")
    jobs = _jobs(tmp_path / "run", _write(tmp_path, cfg))
    assert _gpus(jobs, "alphatrim_zoo", "experiment=digits") == ["1"]
    assert _gpus(jobs, "alphatrim_zoo_block") == []


def test_zoo_training_on_cuda_requests_a_gpu(cuda_jobs):
    assert _gpus(cuda_jobs, "zoo_model", "results/zoo/digits/") == ["1"] * 4  # 4 models
    assert _gpus(cuda_jobs, "zoo_bundle_laf_tight_all") == ["1"]
    assert _gpus(cuda_jobs, "zoo_bundle_laf_spread_all") == ["0"]


def test_cpu_config_requests_no_gpu(tmp_path):
    """The smoke config trains everything on the CPU: no training job asks for a GPU."""
    jobs = _jobs(tmp_path / "run", SMOKE_CONFIG)
    training = [j for j in jobs if j["rule"].startswith(("zoo_", "alphatrim_zoo"))]
    assert {j["rule"] for j in training} >= {"zoo_bundle_digits_all", "alphatrim_zoo"}
    assert {j.get("gpu", "0") for j in training} == {"0"}
