"""Cluster: the smoke configuration through the SLURM executor on a real single-node SLURM.

The cluster is started by the project's own script (.ci/slurm-single-node.sh: munge, slurmctld,
slurmd on 127.0.0.1) and stopped after; the tables must equal a local run byte for byte.
Skipped, saying why, when SLURM is not installed or the test does not run as root.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.workflow.runner import REPO, result_tables, snakemake_cmd

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

MISSING = [t for t in ("slurmctld", "slurmd", "munged", "sbatch", "squeue") if not shutil.which(t)]


@pytest.mark.skipif(bool(MISSING), reason=f"SLURM not installed (missing {MISSING})")
@pytest.mark.skipif(os.geteuid() != 0, reason="starting munge/slurm daemons needs root")
@pytest.mark.skipif(
    importlib.util.find_spec("snakemake_executor_plugin_slurm") is None,
    reason="snakemake-executor-plugin-slurm is not installed",
)
def test_smoke_via_slurm_equals_local(smoke_run, tmp_path):
    workdir = tmp_path / "slurm"
    cmd = [
        "bash", str(REPO / ".ci" / "slurm-single-node.sh"), "run",
        "timeout", "-k", "10", "1200",
        *snakemake_cmd(workdir),
        "--executor", "slurm", "--jobs", "4", "--latency-wait", "10",
        "--slurm-init-seconds-before-status-checks", "1", "--slurm-status-command", "squeue",
        "--slurm-logdir", str(tmp_path / "slurm-logs"), "--slurm-keep-successful-logs",
    ]
    workdir.mkdir()
    # munged runs as user munge: its state must not sit under pytest's root-only (0700) tmp dir.
    cluster_root = Path(tempfile.mkdtemp(prefix="labelfree-slurm-"))
    cluster_root.chmod(0o755)
    env = {**os.environ, "SLURM_CI_ROOT": str(cluster_root)}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, env=env)
    finally:
        shutil.rmtree(cluster_root, ignore_errors=True)
    assert proc.returncode == 0, f"SLURM run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    # Jobs really went through SLURM: the plugin leaves per-job logs.
    assert list((tmp_path / "slurm-logs").rglob("*.log")), "no SLURM job logs were written"
    local, cluster = result_tables(smoke_run), result_tables(workdir)
    assert local.keys() == cluster.keys()
    differing = [k for k in local if local[k] != cluster[k]]
    assert not differing, f"tables differ between local and SLURM runs: {differing}"
    # The script stops every daemon it started.
    left = subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True)
    assert left.returncode != 0, "slurmctld still running after the test"
