"""Shared test fixtures. Tests never touch the network except 127.0.0.1."""

from __future__ import annotations

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
    """
    from tests.workflow.runner import run_snakemake

    workdir = tmp_path_factory.mktemp("smoke-a")
    run_snakemake(workdir)
    return workdir
