"""Reliability (issue 8): interruption and recovery, injected failures and retries."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.workflow.runner import result_tables, run_snakemake, snakemake_cmd

pytestmark = pytest.mark.slow


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def test_sigkill_midway_then_rerun_incomplete_matches_clean_run(smoke_run, tmp_path):
    """SIGKILL snakemake and its running job mid-way; `--rerun-incomplete` finishes the same."""
    proc = subprocess.Popen(
        snakemake_cmd(tmp_path), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        # Mid-way: some model of a zoo has been written while the training job still runs.
        _wait_for(lambda: any((tmp_path / "results" / "zoo").rglob("meta.json")), 600,
                  "the first trained model")
        assert proc.poll() is None, "the run finished before it could be interrupted"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # snakemake and every job it started
        proc.wait()
    run_snakemake(tmp_path, "--unlock")
    run_snakemake(tmp_path, "--rerun-incomplete")
    clean, resumed = result_tables(smoke_run), result_tables(tmp_path)
    assert clean.keys() == resumed.keys()
    differing = [k for k in clean if clean[k] != resumed[k]]
    assert not differing, f"tables differ after interruption and rerun: {differing}"


SITECUSTOMIZE = """
import os, sys
marker = os.environ.get("LABELFREE_FAIL_ONCE_MARKER")
target = os.environ.get("LABELFREE_FAIL_ONCE_SCRIPT")
if marker and target and any(target in a for a in sys.argv) and not os.path.exists(marker):
    open(marker, "w").close()
    sys.stderr.write("injected failure in " + target + "\\n")
    sys.exit(3)
"""


@pytest.mark.parametrize("retries", [0, 1])
def test_rule_failing_once_succeeds_with_retries(tmp_path: Path, retries: int):
    """A job whose first attempt fails (injected at interpreter start) passes with --retries 1."""
    inject = tmp_path / "inject"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {
        "PYTHONPATH": os.pathsep.join([str(inject), os.environ.get("PYTHONPATH", "")]),
        "LABELFREE_FAIL_ONCE_MARKER": str(tmp_path / "failed-once"),
        "LABELFREE_FAIL_ONCE_SCRIPT": "report_provenance",
    }
    target = "results/report/software.csv"
    proc = run_snakemake(tmp_path / "run", target, "--retries", str(retries), env=env, check=False,
                         timeout=300)
    assert (tmp_path / "failed-once").exists(), "the failure was not injected"
    if retries:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert (tmp_path / "run" / target).exists()
    else:
        assert proc.returncode != 0
        assert not (tmp_path / "run" / target).exists(), "a failed job left its output"
