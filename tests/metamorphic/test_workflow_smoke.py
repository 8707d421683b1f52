"""The study's part of the smoke configuration end to end (spec 7.4 checks, issue 7 "Done means").

Runs `mm_report` (and what it needs: DigitScenes datasets, zoos, inference, follow-ups,
verdicts) on config/smoke.yaml in a scratch directory. The smoke models are tiny (LeNet width 4,
1-3 epochs, 40-60 scene bases), mostly near chance, so of the hard checks A-F only F - which
rests on the oracle and the hidden masks, not on model quality - is asserted here; A-E are
asserted on the default run (README, section metamorphic, and results/metamorphic/tables/checks.csv).
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


def test_checks_a_to_f_are_computed_and_f_holds(mm_smoke):
    checks = pd.read_csv(mm_smoke / "results" / "metamorphic" / "tables" / "checks.csv")
    hard = checks[checks["hard"]]
    assert set(hard["check"]) == set("ABCDEF")
    f = hard[hard["check"] == "F"]
    assert len(f) == 2 and f["pass"].all(), f.to_string()


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
