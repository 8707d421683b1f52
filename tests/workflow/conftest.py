"""A clean end-to-end run of the smoke configuration, shared by the workflow tests."""

from __future__ import annotations

import pytest

from tests.workflow.runner import run_snakemake


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory):
    """Run the whole smoke graph once in a scratch directory; return that directory."""
    workdir = tmp_path_factory.mktemp("smoke-a")
    run_snakemake(workdir)
    return workdir
