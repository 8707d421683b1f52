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
    compare their runs' tables with this one. Under pytest-xdist every worker shares one run
    (tests.workflow.runner.shared_run: the first worker to ask builds it under a file lock, the
    others wait for it and reuse it).

    Set LABELFREE_SMOKE_RUN to the folder of a finished smoke run (same commit) to reuse it
    while iterating on one workflow test; the fixture then only checks that it is complete.
    """
    from tests.workflow.runner import run_snakemake, shared_run

    reuse = os.environ.get("LABELFREE_SMOKE_RUN")
    if reuse:
        workdir = Path(reuse)
        proc = run_snakemake(workdir, "--dry-run")
        assert "Nothing to be done" in proc.stdout + proc.stderr, f"{workdir}: not a complete run"
        return workdir
    return shared_run(tmp_path_factory, "smoke-a", lambda workdir: run_snakemake(
        workdir, timeout=2400))  # may share 2 cores with another graph run


#: The suite's longest tests, in the order they start (durations from bench/suite_time.py's
#: report, docs/test-suite-time.txt). They run first, then the other `slow` tests, then the rest,
#: so that under pytest-xdist (`-n auto --maxschedchunk 1`, pyproject.toml) no worker is left
#: with a long test at the end while the others idle. Only the order changes, never the set.
#: xdist hands each worker two tests to start with (the first two to one, the next two to the
#: other), then one at a time: the first worker builds the shared smoke run (`smoke_run`) and
#: then runs the sigkill test, which starts from a copy of it; meanwhile the other works through
#: the long tests that need no smoke run, so that no one waits for it; the tests that compare
#: with the smoke run come after them.
LONGEST_FIRST = (
    "tests/workflow/test_smoke.py::test_smoke_run_is_complete",  # its setup builds smoke_run
    "tests/workflow/test_reliability.py::test_sigkill",  # from a copy of smoke_run
    # no smoke run: the default config's metamorphic study, then runs of their own configs
    "tests/metamorphic/test_workflow_smoke.py::test_default_run",
    "tests/workflow/test_incremental.py",
    "tests/test_your_zoo_doc.py",
    "tests/workflow/test_clean_only_zoo.py",
    "tests/inference/test_inference_rules.py",
    "tests/workflow/test_resources.py",  # dry-runs every paper config (21)
    "tests/workflow/test_prediction_zoo.py",
    # after smoke_run
    "tests/workflow/test_study_rerun.py",  # reruns four studies on a copy
    "tests/cluster/test_slurm.py",
    "tests/workflow/test_alphatrim_shards.py",
    "tests/metamorphic/test_workflow_smoke.py",
)


def _run_order(item: pytest.Item) -> tuple[int, int]:
    for rank, prefix in enumerate(LONGEST_FIRST):
        if item.nodeid.startswith(prefix):
            return (0, rank)
    return (1, 0) if item.get_closest_marker("slow") else (2, 0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest tests first (stable: within a rank, collection order is kept)."""
    items.sort(key=_run_order)
