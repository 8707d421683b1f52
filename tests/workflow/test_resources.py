"""Resource requests fit their jobs (docs/cluster.md, "Job sizes"): on every paper config, a job
that only copies, tabulates, plots or keeps the books asks a cluster for at most
``LIGHT_BUDGET``; only the rules in ``HEAVY`` (training, inference, data preparation, the
studies' analyses) may ask for what their config sizes them to.

The requests are read from each paper config's dry run (Snakemake prints every planned job's
``resources: ..., runtime=M, mem_mb=N, ...``; the SLURM executor submits those). A config that
reads files we cannot have here gets stand-ins: a tiny prediction folder for the LaF prediction
zoos, an empty `local` MNIST folder, an empty checkpoint file (a dry run opens none of them).
"""

from __future__ import annotations

import concurrent.futures
import fnmatch
import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.workflow.runner import REPO, run_snakemake, shared_value
from tests.workflow.test_laf_prediction_configs import PAPER, make_folder

pytestmark = pytest.mark.slow

#: The most a job without heavy work may request: runtime in minutes, memory in MB.
LIGHT_BUDGET = {"runtime": 60, "mem_mb": 4000}

#: Rules (fnmatch patterns: per-dataset and per-zoo rules carry the name) whose requests come
#: from a config key sized for heavy work: they are not held to LIGHT_BUDGET.
HEAVY = {
    "data_download": "downloads a dataset (datasets.<name>.runtime/mem_mb)",
    "data_download_corrupted": "downloads a released -C archive (gigabytes)",
    "data_prepare_*": "decodes and splits a dataset",
    "zoo_model": "trains or resolves a model (zoos.<zoo>.runtime/mem_mb)",
    "zoo_bundle_*": "trains or resolves the models of a bundle",
    "inference_model": "runs a model on its test sets (inference.runtime/mem_mb)",
    "inference_bundle_*": "runs the models of a bundle on their test sets",
    "alphatrim_zoo": "trains an experiment's seed-regime zoos, or merges their blocks",
    "alphatrim_zoo_block": "trains a seed block",
    "alphatrim_analyse": "alpha-hat, churn and ensembles over every model of an experiment",
    "laf_part": "the LaF analysis of one part of a zoo's test sets",
    "pace_mutated_inputs": "mutates the pool with the subjects",
    "pace_generated_inputs": "generates inputs with the subjects",
    "pace_subjects": "trains PACE's subjects",
    "pace_css_cov": "coverage of the pool over the training set",
    "pace_experiment": "one PACE experiment over every subject",
    "syp_testsets": "builds SYP's test sets",
    "syp_indicators": "SYP's indicators of one model",
    "syp_oracle": "trains SYP's oracle of one model",
    "scorecard": "every method on every test set of a zoo",
}

#: Files the paper configs name that a dry run only checks for (relative to config/paper/).
STAND_INS = {
    "dirs": ["../../../shared/data/mnist"],
    "files": ["resources/models/deepinspect_coco_resnet50.pth"],
}


def heavy(rule: str) -> bool:
    return any(fnmatch.fnmatchcase(rule, pattern) for pattern in HEAVY)


def planned_jobs(workdir: Path, configfile: Path) -> list[dict[str, str]]:
    """One dict per planned job: its rule and each resource, from a dry run."""
    out = run_snakemake(workdir, "--dry-run", configfile=configfile, timeout=600).stdout
    jobs = []
    for block in re.split(r"\n(?=\[[^\]]+\]\n(?:local)?rule )", out):
        m = re.search(r"^(?:local)?rule (\w+):$", block, flags=re.M)
        if not m or m.group(1) == "all":
            continue
        res = re.search(r"^    resources: (.*)$", block, flags=re.M)
        jobs.append({"rule": m.group(1), **dict(re.findall(r"(\w+)=([^,]+)", res.group(1)))})
    assert jobs, out[-2000:]
    return jobs


def paper_configs(tmp: Path) -> dict[str, Path]:
    """Every config/paper/*.yaml, copied with its sheets under ``tmp`` (so that its relative
    paths resolve there) and the files it names stood in for."""
    paper = tmp / "repo" / "config" / "paper"
    shutil.copytree(REPO / "config" / "paper", paper)
    for d in STAND_INS["dirs"]:
        (paper / d).mkdir(parents=True, exist_ok=True)
    for f in STAND_INS["files"]:
        (paper / f).parent.mkdir(parents=True, exist_ok=True)
        (paper / f).touch()
    configs = {}
    for path in sorted(paper.glob("*.yaml")):
        name = path.stem.removeprefix("laf-")
        if path.stem.startswith("laf-") and name in PAPER:  # a prediction zoo
            cfg = yaml.safe_load(path.read_text())
            (zoo,) = cfg["zoos"]
            cfg["zoos"][zoo]["predictions"] = str(tmp / "predictions" / name)
            make_folder(tmp / "predictions" / name, *PAPER[name])
            path.write_text(yaml.safe_dump(cfg))
        configs[path.stem] = path
    return configs


@pytest.fixture(scope="module")
def paper_jobs(tmp_path_factory) -> dict[str, list[dict[str, str]]]:
    """The planned jobs of every paper config, dry-run once per session (runner.shared_value:
    under pytest-xdist the module's tests may run on both workers, which each ran the 21 dry
    runs before)."""
    def compute() -> dict[str, list[dict[str, str]]]:
        tmp = tmp_path_factory.mktemp("paper-resources")
        configs = paper_configs(tmp)
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            jobs = pool.map(lambda kv: planned_jobs(tmp / "run" / kv[0], kv[1]), configs.items())
            return dict(zip(configs, jobs, strict=True))

    return shared_value(tmp_path_factory, "paper-resources", compute)


def test_every_paper_config_dry_runs(paper_jobs):
    assert set(paper_jobs) == {p.stem for p in (REPO / "config" / "paper").glob("*.yaml")}


def test_light_jobs_request_a_small_budget(paper_jobs):
    over = sorted(
        {
            f"{name}: {job['rule']} asks {key}={job[key]} (budget {limit})"
            for name, jobs in paper_jobs.items()
            for job in jobs
            if not heavy(job["rule"])
            for key, limit in LIGHT_BUDGET.items()
            if int(job.get(key, 0)) > limit
        }
    )
    assert not over, "\n".join(over)


def test_every_heavy_pattern_names_a_planned_rule(paper_jobs):
    """A renamed or removed rule leaves no stale exemption behind."""
    rules = {job["rule"] for jobs in paper_jobs.values() for job in jobs}
    stale = [p for p in HEAVY if not fnmatch.filter(rules, p)]
    assert not stale, stale


def test_the_copy_of_a_training_split_asks_for_its_dataset_not_the_study(paper_jobs):
    """alphatrim-cifar10 sizes its training jobs at 48 h and 32 GB; the job that copies the
    training split as a test set asks for the dataset's own request."""
    cifar = yaml.safe_load((REPO / "config" / "paper" / "alphatrim-cifar10.yaml").read_text())
    assert cifar["alphatrim"]["runtime"] > LIGHT_BUDGET["runtime"]  # the premise
    (copy,) = [j for j in paper_jobs["alphatrim-cifar10"] if j["rule"] == "alphatrim_train_testset"]
    (train,) = {j["runtime"] for j in paper_jobs["alphatrim-cifar10"] if j["rule"] == "alphatrim_zoo"}
    assert int(train) == cifar["alphatrim"]["runtime"]
    assert int(copy["runtime"]) <= LIGHT_BUDGET["runtime"]
    assert int(copy["mem_mb"]) <= LIGHT_BUDGET["mem_mb"]
