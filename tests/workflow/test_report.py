"""`snakemake --report` builds on the smoke run with the plain install (issue 22, item 3)."""

from __future__ import annotations

import re
from importlib.metadata import requires

import pytest

from tests.workflow.runner import run_snakemake

pytestmark = pytest.mark.slow

STUDIES = ("laf", "pace", "syp", "alphatrim", "metamorphic")


def test_plain_install_has_what_the_report_needs():
    """Snakemake's HTML report imports pygments, which snakemake itself does not require;
    README command one installs only our dependencies, so we must name it."""
    needed = {re.split(r"[<>=!~; \[]", r, maxsplit=1)[0].lower() for r in requires("labelfree") or []
              if "extra ==" not in r}
    assert "pygments" in needed, sorted(needed)


def test_report_names_every_study(smoke_run, tmp_path):
    report = tmp_path / "report.html"
    run_snakemake(smoke_run, "--report", str(report))
    html = report.read_text(errors="replace")
    assert len(html) > 10_000, "report is nearly empty"
    missing = [s for s in STUDIES if f'"{s}"' not in html and f"'{s}'" not in html]
    assert not missing, f"report has no category for {missing}"
