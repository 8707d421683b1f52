"""The study's part of the smoke configuration end to end (spec 7.4 checks, issue 7 "Done means").

Runs `mm_report` (and what it needs: DigitScenes datasets, zoos, inference, follow-ups,
verdicts) on config/smoke.yaml in a scratch directory. The smoke models are tiny (LeNet width 4,
1-3 epochs, 40-60 scene bases) and mostly near chance, so checks A-F are computed here but their
outcome is not asserted (it is on the default run: README, section metamorphic, and
results/metamorphic/tables/checks.csv); what is asserted is the part of F that rests on the oracle
and the hidden masks alone: every invalid flag comes from a scene with an annotation defect.
"""

from __future__ import annotations

import pandas as pd
import pytest

from labelfree.metamorphic.tables import FIGURES, TABLES
from tests.workflow.runner import run_snakemake

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def mm_smoke(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("mm-smoke")
    run_snakemake(workdir, "mm_report")
    return workdir


def test_every_table_and_figure(mm_smoke):
    root = mm_smoke / "results" / "metamorphic"
    for t in TABLES:
        assert (root / "tables" / f"{t}.csv").exists() and (root / "tables" / f"{t}.md").exists(), t
    for f in FIGURES:
        assert (root / "figures" / f"{f}.png").exists() and (root / "figures" / f"{f}.pdf").exists(), f


def test_checks_computed_and_invalid_flags_come_from_defects(mm_smoke):
    checks = pd.read_csv(mm_smoke / "results" / "metamorphic" / "tables" / "checks.csv")
    hard = checks[checks["hard"]]
    assert set(hard["check"]) == set("ABCDEF")
    assert len(hard[hard["check"] == "F"]) == 2
    rq1 = pd.read_csv(mm_smoke / "results" / "metamorphic" / "tables" / "table1-3_oracle_precision.csv")
    single = rq1[rq1["role"] != "multilabel"]
    assert single["total_flags"].sum() > 0
    # clean scenes give valid follow-ups (padded tight box): no "other" false positives
    assert (single["FP_other"] == 0).all()
    invalid = single["total_flags"] - single["TP"]
    assert (invalid == single["FP_multiple"] + single["FP_incomplete"]).all()


def test_follow_up_sets_hold_every_variant(mm_smoke):
    from labelfree.store import read_image_set

    base = read_image_set(mm_smoke / "results" / "testsets" / "mm_unbiased" / "mm-rho09.npz")
    fol = read_image_set(mm_smoke / "results" / "testsets" / "mm_unbiased" / "mm-rho09-c3.npz")
    n = len(base)
    assert len(fol) == 7 * n
    assert (fol.x[:n] == base.x).all()
    region = base.extras["region"]
    # obj-white: R painted white, B untouched
    obj_white = fol.x[3 * n : 4 * n]
    assert (obj_white[region] == 255).all() and (obj_white[~region] == base.x[~region]).all()
