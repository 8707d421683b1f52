"""The pace, syp, alphatrim and metamorphic studies rerun on a copy of the shared smoke run give
its tables byte for byte, PACE with one job per experiment where the smoke run merged them
(issue 22 item 4: the determinism that the reliability test's second
run of the whole graph used to check for them, without retraining zoos or rerunning inference).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.workflow.runner import SMOKE_CONFIG, result_tables, run_snakemake

pytestmark = pytest.mark.slow

STUDIES = ("pace", "syp", "alphatrim", "metamorphic")

#: The studies' last jobs in the smoke graph; asking for them reruns every job of the studies
#: whose outputs are gone (the test checks that none of the smoke run's study tables is missed).
FINAL_JOBS = (
    # the pace subjects and experiments, then their tables and figures, the cross-dataset
    # table and Table 12 (one pace_report job)
    "pace_report",
    "syp_tables",  # syp_oracle per classifier (indicators, then oracles), then the tables
    "alphatrim_report",  # alphatrim_zoo (trains the seed regimes) and alphatrim_analyse
    "metamorphic_report",  # metamorphic_verdicts per dataset, then the tables
)

#: The studies' test sets (results/testsets, relative paths) and the jobs writing them:
#: pace_testsets (the mutated inputs, FGSM/BIM on the pace zoo, the training split),
#: alphatrim_train_testset, syp_testsets (with its results/syp/raw/testsets_<dataset>.json) and
#: metamorphic_testsets_<dataset>. The id sets (data_prepare_<dataset>, testset_id) and the
#: shifts belong to the spine.
TESTSET_GLOBS = (
    "*/pace_*.npz",
    "*/alphatrim-train.npz",
    "syp_*/syp-*.npz",
    "metamorphic_*/*.npz",
)


def _study_tables(workdir: Path) -> dict[str, bytes]:
    return {k: v for k, v in result_tables(workdir).items() if k.split("/")[0] in STUDIES}


def test_studies_rerun_from_zoos_and_inference_give_the_same_tables(smoke_run, tmp_path):
    """Every job of the four studies reruns on a copy of the smoke run's results and writes
    the same csv tables, byte for byte; then their test-set jobs rerun and write the same files.

    The copy keeps the zoos, inference outputs, data and test sets, with their mtimes (copy2),
    and drops results/{pace,syp,alphatrim,metamorphic} except the syp test-set index (an output
    of syp_testsets: dropping it would rerun syp's inference). `--rerun-triggers mtime`: the copy
    has no Snakemake metadata, and nothing upstream of the studies may rerun. The test sets are
    regenerated in a second call, after the studies, and asked for alone: regenerated first
    they would rerun the inference that reads them.

    Left out of the byte comparison, as in every comparison of runs (runner.result_tables):
    pace's table8-<zoo>-time.csv (wall-clock seconds per method, the table is all timings) and
    timing columns of other tables; raw npz/json/safetensors files and figures are not compared
    (the tables are computed from them), except the test sets, which are compared whole.
    """
    work = tmp_path / "run"
    src = smoke_run / "results"
    keep = {f"syp/raw/{p.name}" for p in (src / "syp" / "raw").glob("testsets_*.json")}

    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(src)
        if rel == Path("."):
            return {n for n in names if n in STUDIES}
        return set()

    shutil.copytree(src, work / "results", ignore=ignore)
    for rel in keep:
        (work / "results" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, work / "results" / rel)

    # PACE reruns one job per experiment (`pace.jobs: experiment`) where the smoke run used one
    # job for the study (`pace.jobs: study`): equal tables also show the two modes agree.
    cfg = yaml.safe_load(SMOKE_CONFIG.read_text())
    assert cfg["pace"].get("jobs") == "study", "the smoke run no longer merges PACE's experiments"
    cfg["pace"]["jobs"] = "experiment"
    per_experiment = tmp_path / "per-experiment.yaml"
    per_experiment.write_text(yaml.safe_dump(cfg, sort_keys=False))
    proc = run_snakemake(work, "--rerun-triggers=mtime", *FINAL_JOBS, configfile=per_experiment,
                         timeout=1800)
    ran = set(re.findall(r"^(?:local)?rule (\w+):", proc.stdout + proc.stderr, flags=re.M))
    assert "pace_experiment" in ran and "pace_experiments" not in ran, sorted(ran)
    clean, rerun = _study_tables(smoke_run), _study_tables(work)
    assert {k.split("/")[0] for k in clean} == set(STUDIES)
    assert rerun.keys() == clean.keys(), sorted(rerun.keys() ^ clean.keys())
    differing = [k for k in clean if clean[k] != rerun[k]]
    assert not differing, f"study tables differ when the studies rerun: {differing}"

    testsets = sorted(
        {str(p.relative_to(smoke_run)) for g in TESTSET_GLOBS for p in src.glob(f"testsets/{g}")}
        | {f"results/{k}" for k in keep}
    )
    assert len(testsets) > len(keep)
    for rel in testsets:
        (work / rel).unlink()
    run_snakemake(work, "--rerun-triggers=mtime", *testsets, timeout=1200)
    differing = [k for k in testsets if (work / k).read_bytes() != (smoke_run / k).read_bytes()]
    assert not differing, f"study test sets differ when regenerated: {differing}"
