"""Resource requests fit their jobs (docs/cluster.md, "Sizing jobs"): on every paper config and
on the default and smoke configs, a job without heavy work (a copy, a table, a figure, a report,
bookkeeping) asks a cluster for at most ``LIGHT_RESOURCES`` of workflow/rules/common.smk and one
thread. A rule with heavy work (training, inference, downloading or preparing a dataset, a
study's computation) says so beside its request, with ``**HEAVY`` among its resources, and may
ask for what its config sizes it to. So a new heavy rule that forgets the mark, or a light rule
that asks for a study's budget, fails here; renaming or merging rules needs no change here.

The requests are read from each config's dry run, one per config and session (Snakemake prints
every planned job's ``resources: ..., heavy=1, runtime=M, mem_mb=N, ...``; the SLURM executor
submits those). A config that reads files we cannot have here gets stand-ins: a tiny prediction
folder for the LaF prediction zoos, an empty `local` MNIST folder, an empty checkpoint file (a dry
run opens none of them).
"""

from __future__ import annotations

import ast
import concurrent.futures
import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.workflow.runner import REPO, SMOKE_CONFIG, run_snakemake, shared_value
from tests.workflow.test_laf_prediction_configs import PAPER, make_folder

pytestmark = pytest.mark.slow


def stated(name: str) -> dict:
    """A dict literal assigned at the top level of workflow/rules/common.smk (one statement)."""
    src = (REPO / "workflow" / "rules" / "common.smk").read_text()
    m = re.search(rf"^{name} = (\{{[^\n]*\}})$", src, flags=re.M)
    assert m, f"{name} not found in common.smk"
    return ast.literal_eval(m.group(1))


#: The most a job without heavy work may request: runtime in minutes, memory in MB (the rules'
#: own constant, read from common.smk, so that the budget is stated once).
LIGHT_BUDGET = stated("LIGHT_RESOURCES")
#: The mark of a heavy job among its resources.
HEAVY_MARK = stated("HEAVY")

#: Files the paper configs name that a dry run only checks for (relative to config/paper/).
STAND_INS = {
    "dirs": ["../../../shared/data/mnist"],
    "files": ["resources/models/deepinspect_coco_resnet50.pth"],
}


def planned_jobs(workdir: Path, configfile: Path) -> list[dict[str, str]]:
    """One dict per planned job: its rule, threads and each resource, from a dry run."""
    out = run_snakemake(workdir, "--dry-run", configfile=configfile, timeout=600).stdout
    jobs = []
    for block in re.split(r"\n(?=\[[^\]]+\]\n(?:local)?rule )", out):
        m = re.search(r"^(?:local)?rule (\w+):$", block, flags=re.M)
        if not m or m.group(1) == "all":
            continue
        res = re.search(r"^    resources: (.*)$", block, flags=re.M)
        threads = re.search(r"^    threads: (\d+)$", block, flags=re.M)
        jobs.append({
            "rule": m.group(1),
            "threads": threads.group(1) if threads else "1",
            **dict(re.findall(r"(\w+)=([^,]+)", res.group(1))),
        })
    assert jobs, out[-2000:]
    return jobs


def heavy(job: dict[str, str]) -> bool:
    return all(job.get(k) == str(v) for k, v in HEAVY_MARK.items())


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


#: The configs besides the paper ones: the default run and the smoke run.
OWN_CONFIGS = {"default": REPO / "config" / "config.yaml", "smoke": SMOKE_CONFIG}


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> dict[str, list[dict[str, str]]]:
    """The planned jobs of every paper config and of the default and smoke configs, dry-run once
    per session (runner.shared_value: under pytest-xdist the module's tests may run on both
    workers, which would each run the dry runs)."""
    def compute() -> dict[str, list[dict[str, str]]]:
        tmp = tmp_path_factory.mktemp("paper-resources")
        configs = {**paper_configs(tmp), **OWN_CONFIGS}
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            jobs = pool.map(lambda kv: planned_jobs(tmp / "run" / kv[0], kv[1]), configs.items())
            return dict(zip(configs, jobs, strict=True))

    return shared_value(tmp_path_factory, "paper-resources", compute)


def over_budget(planned: dict[str, list[dict[str, str]]]) -> list[str]:
    """One line per (config, rule, key) where a job without the heavy mark asks for more than
    the light budget (threads: more than one)."""
    limits = {**LIGHT_BUDGET, "threads": 1}
    return sorted(
        {
            f"{name}: {job['rule']} asks {key}={job[key]} (light budget {limit})"
            for name, jobs in planned.items()
            for job in jobs
            if not heavy(job)
            for key, limit in limits.items()
            if int(job.get(key, 0)) > limit
        }
    )


def test_every_config_dry_runs(planned):
    paper = {p.stem for p in (REPO / "config" / "paper").glob("*.yaml")}
    assert set(planned) == paper | set(OWN_CONFIGS)


def test_light_jobs_request_a_small_budget(planned):
    over = over_budget(planned)
    assert not over, "\n".join(over)


def test_a_forgotten_mark_or_a_study_budget_on_a_light_job_fails():
    """The check itself: a heavy job without the mark (a study-sized request) and a light job
    asking for a study's memory are both reported; the same job with the mark is not."""
    train = {"rule": "foo_train", "threads": "1", "runtime": "2880", "mem_mb": "32000"}
    table = {"rule": "foo_tables", "threads": "1", "runtime": "30", "mem_mb": "16000"}
    marked = {**train, **{k: str(v) for k, v in HEAVY_MARK.items()}}
    over = over_budget({"cfg": [train, table, marked]})
    assert over == [
        "cfg: foo_tables asks mem_mb=16000 (light budget 2000)",
        "cfg: foo_train asks mem_mb=32000 (light budget 2000)",
        "cfg: foo_train asks runtime=2880 (light budget 30)",
    ]


def test_heavy_jobs_are_marked_and_light_ones_are_not(planned):
    """The mark reaches the dry run: training, inference and the studies' analyses carry it;
    the copies, tables, reports and the summary do not."""
    marks = {job["rule"]: heavy(job) for jobs in planned.values() for job in jobs}

    def named(name: str) -> list[str]:  # a trailing _ stands for per-zoo or per-dataset rules
        return [r for r in marks if r == name or (name.endswith("_") and r.startswith(name))]

    for name in ("zoo_bundle_", "inference_bundle_", "data_prepare_", "alphatrim_zoo",
                 "alphatrim_analyse", "laf_part", "scorecard", "syp_oracle"):
        assert named(name) and all(marks[r] for r in named(name)), name
    for name in ("alphatrim_train_testset", "alphatrim_report", "laf_tables", "summary",
                 "report_provenance", "accuracy_table", "metamorphic_report", "testset_id"):
        assert named(name) and not any(marks[r] for r in named(name)), name


def test_the_copy_of_a_training_split_asks_for_a_light_job_not_the_study(planned):
    """alphatrim-cifar10 sizes its training jobs at 48 h and 32 GB; the job that copies the
    training split as a test set asks for its dataset's memory and a light job's runtime."""
    cifar = yaml.safe_load((REPO / "config" / "paper" / "alphatrim-cifar10.yaml").read_text())
    assert cifar["alphatrim"]["runtime"] > LIGHT_BUDGET["runtime"]  # the premise
    jobs = planned["alphatrim-cifar10"]
    (copy,) = [j for j in jobs if j["rule"] == "alphatrim_train_testset"]
    (train,) = {j["runtime"] for j in jobs if j["rule"] == "alphatrim_zoo"}
    assert int(train) == cifar["alphatrim"]["runtime"]
    assert not heavy(copy)
    assert int(copy["runtime"]) <= LIGHT_BUDGET["runtime"]
    assert int(copy["mem_mb"]) <= LIGHT_BUDGET["mem_mb"]
