"""Reliability: bad artefacts met by a job stop it with a message naming the file, no output left.

Works on a copy of the smoke run's artefacts (mtimes kept, so Snakemake reruns only what the
test asks for), corrupts one input, and runs the job that reads it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.workflow.runner import SMOKE_CONFIG, run_snakemake

pytestmark = pytest.mark.slow

SMOKE = yaml.safe_load(SMOKE_CONFIG.read_text())
ZOO = next(iter(SMOKE["zoos"]))
DATASET = SMOKE["zoos"][ZOO]["dataset"]


def _copy_results(src: Path, dst: Path) -> None:
    for part in ("data", "testsets", "zoo", "infer"):
        shutil.copytree(src / "results" / part, dst / "results" / part, copy_function=shutil.copy2)


def _failing_run(workdir: Path, target: str, fragment: str) -> None:
    proc = run_snakemake(workdir, target, "--force", check=False, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"the job accepted a bad input:\n{out[-2000:]}"
    assert fragment in out, f"expected {fragment!r} in the output; got:\n{out[-4000:]}"
    assert not (workdir / target).exists(), f"{target} was left behind by a failed job"


def test_corrupted_npz_is_named(smoke_run, tmp_path):
    _copy_results(smoke_run, tmp_path)
    # The id set is written by data_prepare itself; the training split's copy (alphatrim's
    # train test set) is a job that reads a stored split.
    bad = tmp_path / "results" / "data" / DATASET / "train.npz"
    bad.write_bytes(b"PK\x03\x04" + b"\x00" * 64)  # a truncated zip, as a killed copy leaves
    target = f"results/testsets/{DATASET}/alphatrim-train.npz"
    (tmp_path / target).unlink()
    _failing_run(tmp_path, target, "train.npz: not a readable npz archive")


def test_nan_logits_are_named(smoke_run, tmp_path):
    """A job reading a zoo's inference files (the zoo's scorecard: its inference job, which now
    writes the accuracy table, would rewrite the file) stops on a NaN in the logits of one model
    on the `id` set, which every scorecard scores."""
    _copy_results(smoke_run, tmp_path)
    infer = next(
        p for p in sorted((tmp_path / "results" / "infer" / ZOO).rglob("*.npz"))
        if "logits.id" in np.load(p).files
    )
    with np.load(infer) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["logits.id"][0, 0] = np.nan
    np.savez(infer, **arrays)
    _failing_run(tmp_path, f"results/scorecard/tables/extra-{ZOO}-estimation.csv",
                 "logits contain NaN or inf")


def test_labels_out_of_range_are_named(smoke_run, tmp_path):
    _copy_results(smoke_run, tmp_path)
    testset = tmp_path / "results" / "testsets" / DATASET / "id.npz"
    with np.load(testset) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["y"][0] = 99  # beyond every class id: only the accuracy table can tell
    np.savez(testset, **arrays)
    _failing_run(tmp_path, f"results/infer/{ZOO}/accuracy.csv", "labels out of range")
