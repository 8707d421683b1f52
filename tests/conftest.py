"""Shared test fixtures. Tests never touch the network except 127.0.0.1."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """Run the whole smoke graph once in a scratch directory; return that directory.

    Shared by the workflow tests (tests/workflow) and the cluster test (tests/cluster), which
    compare their runs' tables with this one.

    Set LABELFREE_SMOKE_RUN to the folder of a finished smoke run (same commit) to reuse it
    while iterating on one workflow test; the fixture then only checks that it is complete.
    """
    from tests.workflow.runner import run_snakemake

    reuse = os.environ.get("LABELFREE_SMOKE_RUN")
    if reuse:
        workdir = Path(reuse)
        proc = run_snakemake(workdir, "--dry-run")
        assert "Nothing to be done" in proc.stdout + proc.stderr, f"{workdir}: not a complete run"
        return workdir
    workdir = tmp_path_factory.mktemp("smoke-a")
    run_snakemake(workdir)
    return workdir
