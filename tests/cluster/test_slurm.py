"""Cluster: a slice of the smoke graph through the SLURM executor on a real single-node SLURM.

The cluster is started by the project's own script (.ci/slurm-single-node.sh: munge, slurmctld,
slurmd, slurmdbd for sacct, on 127.0.0.1, two CPUs) and stopped after; the tables must equal a
local run byte for byte, and two models of one zoo must train at the same time.
Skipped, saying why, when SLURM is not installed or the test does not run as root.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from tests.workflow.runner import REPO, result_tables, snakemake_cmd

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

MISSING = [t for t in ("slurmctld", "slurmd", "munged", "sbatch", "squeue") if not shutil.which(t)]


# A slice of the smoke graph (issue 23; docs/cluster.md): the `digits` zoo at one model per job,
# its test sets, inference and accuracy table: about 20 jobs, grouped into about 10 submissions.
TARGET = "results/infer/digits/accuracy.csv"
GROUPING = [
    "--groups", "shifts_corruption=shifts", "inference_model=infer",
    "--group-components", "shifts=6", "infer=8",
]


def _overlapping_pairs(spans: dict[str, tuple[str, str]]) -> list[tuple[str, str]]:
    """Pairs of SLURM jobs whose [start, end] intervals overlap (ISO times sort as strings)."""
    ids = sorted(spans)
    return [
        (a, b) for i, a in enumerate(ids) for b in ids[i + 1:]
        if spans[a][0] < spans[b][1] and spans[b][0] < spans[a][1]
    ]


@pytest.mark.skipif(bool(MISSING), reason=f"SLURM not installed (missing {MISSING})")
@pytest.mark.skipif(os.geteuid() != 0, reason="starting munge/slurm daemons needs root")
@pytest.mark.skipif(
    importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
    reason="snakemake-executor-plugin-slurm is not installed",
)
@pytest.mark.skipif(not shutil.which("slurmdbd"), reason="slurmdbd not installed (sacct needs it)")
def test_models_train_in_parallel_via_slurm_and_tables_equal_local(smoke_run, tmp_path):
    """Two slots: two models of one zoo train at once (overlapping start/end in sacct), and the
    accuracy table equals the local run's (where the zoo trained in one job)."""
    cfg = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cfg["zoos"]["digits"]["bundle"] = "model"
    cfg_path = tmp_path / "per-model.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    workdir = tmp_path / "slurm"
    logdir = tmp_path / "slurm-logs"
    sacct_out = tmp_path / "sacct.txt"
    models = [
        f"results/zoo/digits/{m}/meta.json"
        for m in ("mlp-w16-adam-e8-f1-s0", "mlp-w64-adam-e8-f1-s0", "lenet-w4-adam-e4-f1-s0",
                  "resnet-w4-adam-e2-f1-s0")
    ]

    def snake(*targets: str) -> str:
        return shlex.join([
            *snakemake_cmd(workdir, *targets, configfile=cfg_path),
            "--executor", "slurm", "--jobs", "2", "--latency-wait", "10", *GROUPING,
            "--slurm-init-seconds-before-status-checks", "1", "--slurm-status-command", "squeue",
            "--slurm-logdir", str(logdir), "--slurm-keep-successful-logs",
        ])

    # First the models alone (after the data job, four trainings compete for the two slots),
    # then the rest of the slice; sacct must run while slurmdbd is up, inside the script's `run`.
    inner = (
        f"timeout -k 10 600 {snake(*models)} && timeout -k 10 900 {snake(TARGET)} && "
        f"sleep 2 && sacct -X -n -P --format=JobID,Start,End > {shlex.quote(str(sacct_out))}"
    )
    workdir.mkdir()
    # munged runs as user munge: its state must not sit under pytest's root-only (0700) tmp dir.
    cluster_root = Path(tempfile.mkdtemp(prefix="labelfree-slurm-"))
    cluster_root.chmod(0o755)
    env = {**os.environ, "SLURM_CI_ROOT": str(cluster_root), "SLURM_CI_ACCOUNTING": "1",
           "SLURM_CI_CPUS": "2"}
    try:
        proc = subprocess.run(
            ["bash", str(REPO / ".ci" / "slurm-single-node.sh"), "run", "bash", "-c", inner],
            capture_output=True, text=True, timeout=1200, env=env,
        )
    finally:
        shutil.rmtree(cluster_root, ignore_errors=True)
    assert proc.returncode == 0, f"SLURM run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    # Jobs went through SLURM: the plugin leaves one log per job, under rule_<name>/<wildcards>/.
    train_ids = {p.stem for p in (logdir / "rule_zoo_model").rglob("*.log")}
    assert len(train_ids) == 4, f"expected 4 per-model training jobs, got {sorted(train_ids)}"
    assert list(logdir.glob("group_*")), "no grouped submission (--group-components)"
    spans = {}
    for line in sacct_out.read_text().splitlines():
        job, start, end = line.split("|")
        if job in train_ids:
            spans[job] = (start, end)
    assert spans.keys() == train_ids, f"sacct lacks training jobs: {sacct_out.read_text()}"
    assert _overlapping_pairs(spans), f"no two models trained at once: {spans}"
    local, cluster = result_tables(smoke_run), result_tables(workdir)
    assert cluster and cluster.keys() <= local.keys()
    differing = [k for k in cluster if local[k] != cluster[k]]
    assert not differing, f"tables differ between local and SLURM runs: {differing}"
    # The script stops every daemon it started.
    left = subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True)
    assert left.returncode != 0, "slurmctld still running after the test"
