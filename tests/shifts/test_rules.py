"""The shifts rules in the real workflow: wildcard resolution and one real job (smoke config).

The smoke config writes a dataset's shifted sets in one job (`shifts.jobs: dataset`, as
config/config.yaml); the per-corruption rules (`shifts.jobs: corruption`, the schema default)
run here on the smoke config with that key changed. tests/workflow/test_merged_jobs.py checks
that both modes write the same arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from labelfree.seeds import rng
from labelfree.shifts.corruptions import corrupt
from labelfree.shifts.natural import natural_shift
from labelfree.store import read_image_set
from tests.workflow.runner import SMOKE_CONFIG, run_snakemake


def _config(tmp_path: Path, jobs: str) -> Path:
    """The smoke config with `shifts.jobs` set to ``jobs``."""
    cfg = yaml.safe_load(SMOKE_CONFIG.read_text())
    cfg["shifts"]["jobs"] = jobs
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"shifts-{jobs}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


@pytest.mark.parametrize(("jobs", "rules"), [
    ("corruption", {"shifts_corruption", "shifts_natural"}),
    ("dataset", {"shifts_testsets"}),
])
def test_dry_run_resolves_shift_targets(tmp_path, jobs, rules):
    cfg = _config(tmp_path, jobs)
    proc = run_snakemake(
        tmp_path / "run",
        "-n",
        "results/testsets/digits/fog-3.npz",
        "results/testsets/digits/natural-thick.npz",
        configfile=cfg,
    )
    planned = {r for r in ("shifts_corruption", "shifts_natural", "shifts_testsets")
               if f"rule {r}:" in proc.stdout}
    assert planned == rules, proc.stdout[-2000:]
    # snow is not in the smoke config's corruptions: no rule may claim it
    bad = run_snakemake(tmp_path / "run", "-n", "results/testsets/digits/snow-3.npz",
                        configfile=cfg, check=False)
    assert bad.returncode != 0 and "MissingRule" in bad.stdout + bad.stderr


@pytest.mark.slow
def test_one_corruption_job_and_natural_job(tmp_path):
    run_snakemake(
        tmp_path,
        "results/testsets/digits/contrast-1.npz",
        "results/testsets/digits/natural-shear.npz",
        configfile=_config(tmp_path / "cfg", "corruption"),
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
