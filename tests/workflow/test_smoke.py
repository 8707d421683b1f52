"""End to end: the smoke configuration runs the whole graph, offline, and reruns nothing."""

from __future__ import annotations

import pytest

from labelfree.store import read_table
from tests.workflow.runner import result_tables, run_snakemake

pytestmark = pytest.mark.slow


def test_smoke_run_is_complete(smoke_run):
    proc = run_snakemake(smoke_run, "--dry-run")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_spine_tables(smoke_run):
    tables = sorted((smoke_run / "results" / "infer").glob("*/accuracy.csv"))
    assert tables, "no accuracy tables were written"
    for path in tables:
        df = read_table(path)
        assert len(df) > 0
        assert (path.with_suffix(".png")).exists() and (path.with_suffix(".pdf")).exists()


@pytest.mark.parametrize("study", ["laf", "pace", "syp", "alphatrim", "metamorphic"])
def test_every_study_writes_tables_and_figures(smoke_run, study):
    root = smoke_run / "results" / study
    assert list((root / "tables").glob("*.csv")), f"{study}: no csv tables"
    assert list((root / "tables").glob("*.md")), f"{study}: no markdown tables"
    assert list((root / "figures").glob("*.png")), f"{study}: no png figures"
    assert list((root / "figures").glob("*.pdf")), f"{study}: no pdf figures"


def test_two_clean_runs_give_identical_tables(smoke_run, tmp_path):
    """Reliability: determinism (issue 8): byte-identical csv tables from two clean runs."""
    run_snakemake(tmp_path)
    first, second = result_tables(smoke_run), result_tables(tmp_path)
    assert first.keys() == second.keys()
    differing = [k for k in first if first[k] != second[k]]
    assert not differing, f"tables differ between two clean runs: {differing}"
