"""The shifts rules in the real workflow: wildcard resolution and one real job (smoke config)."""

from __future__ import annotations

import numpy as np
import pytest

from labelfree.seeds import rng
from labelfree.shifts.corruptions import corrupt
from labelfree.shifts.natural import natural_shift
from labelfree.store import read_image_set
from tests.workflow.runner import run_snakemake


def test_dry_run_resolves_shift_targets(tmp_path):
    proc = run_snakemake(
        tmp_path,
        "-n",
        "results/testsets/digits/fog-3.npz",
        "results/testsets/digits/natural-thick.npz",
    )
    assert "shifts_corruption" in proc.stdout and "shifts_natural" in proc.stdout
    # snow is not in the smoke config's corruptions: no rule may claim it
    bad = run_snakemake(tmp_path, "-n", "results/testsets/digits/snow-3.npz", check=False)
    assert bad.returncode != 0 and "MissingRule" in bad.stdout + bad.stderr


@pytest.mark.slow
def test_one_corruption_job_and_natural_job(tmp_path):
    run_snakemake(
        tmp_path,
        "results/testsets/digits/contrast-1.npz",
        "results/testsets/digits/natural-shear.npz",
    )
    clean = read_image_set(tmp_path / "results/testsets/digits/id.npz")
    for s in (1, 3, 5):  # the job writes every configured severity
        got = read_image_set(tmp_path / f"results/testsets/digits/contrast-{s}.npz")
        np.testing.assert_array_equal(got.x, corrupt(clean.x, "contrast", s, 0))
        np.testing.assert_array_equal(got.y, clean.y)
    shear = read_image_set(tmp_path / "results/testsets/digits/natural-shear.npz")
    expected = natural_shift(clean.x, "natural-shear", rng(0, "digits", "natural-shear"))
    np.testing.assert_array_equal(shear.x, expected)
    assert (tmp_path / "logs/shifts/digits/contrast.log").stat().st_size > 0
