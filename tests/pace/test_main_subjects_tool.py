"""tools/pace_main_subjects.py: the main experiment on chosen subjects of a run, one file per
subject, with the rows the workflow's experiment job writes for those subjects."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from labelfree.pace.run import StudyParams, Subject, run_experiment, save_subjects

TOOL = Path(__file__).resolve().parents[2] / "tools" / "pace_main_subjects.py"


def _tool():
    spec = importlib.util.spec_from_file_location("pace_main_subjects", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _subject(name: str, acc: float, seed: int, n: int = 200) -> Subject:
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 4, n)
    lhl = np.maximum(rng.normal(0, 2, (4, 10))[lab] + rng.normal(0, 0.4, (n, 10)), 0)
    con = rng.dirichlet(np.ones(4), n)
    return Subject(name, "cls", "original", False, name, "id", (rng.random(n) < acc).astype(float),
                   {"LHL": lhl, "CON": con}, con.max(axis=1))


def test_rows_equal_the_workflow_experiment_for_the_chosen_subject(tmp_path, monkeypatch):
    subjects = [_subject("a@id", 0.9, 0), _subject("b@id", 0.7, 1)]
    save_subjects(tmp_path / "results/pace/raw/subjects.npz", subjects)
    # a seed and CES reading other than the defaults: the tool must take both from the config
    pace = {"reps": 3, "budgets": {"start": 30, "stop": 40, "step": 5},
            "method": {"min_cluster_size": 5, "rounding": "reference"},
            "ces": {"reading": "reference", "allow_repeats": True}}
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"seed": 7, "pace": pace}))
    tool = _tool()
    monkeypatch.setattr(sys, "argv", ["x", str(tmp_path), str(cfg), "b@id"])
    tool.main()
    out = tmp_path / "results/pace/raw/main_by_subject"
    assert sorted(p.name for p in out.iterdir()) == ["b@id.csv", "b@id_timings.csv"]
    got = pd.read_csv(out / "b@id.csv")

    params = StudyParams.from_config({**pace}, seed=7)
    want, _ = run_experiment("main", subjects, params)
    want = want[want["subject"].eq("b@id")].reset_index(drop=True)
    assert list(got.columns) == list(want.columns)
    assert set(got["approach"]) == {"PACE", "SRS", "CES", "CSS"}
    for col in ("rep", "budget", "size"):
        np.testing.assert_array_equal(got[col], want[col])
    np.testing.assert_allclose(got["estimate"], want["estimate"], rtol=1e-5)

    # done subjects are skipped: the file is not rewritten
    before = (out / "b@id.csv").stat().st_mtime_ns
    tool.main()
    assert (out / "b@id.csv").stat().st_mtime_ns == before


def test_unknown_subject_is_named(tmp_path, monkeypatch):
    save_subjects(tmp_path / "results/pace/raw/subjects.npz", [_subject("a@id", 0.9, 0)])
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"seed": 0, "pace": {"reps": 2}}))
    monkeypatch.setattr(sys, "argv", ["x", str(tmp_path), str(cfg), "lenet1@id"])
    with pytest.raises(SystemExit, match="lenet1@id"):
        _tool().main()


def test_reducer_seeds_tool_refits_pace_per_seed(tmp_path, monkeypatch):
    """tools/pace_reducer_seeds.py: the run's seed gives the main experiment's PACE estimates
    (the subject's reduce override applied), another seed refits from another FastICA start."""
    subject = _subject("a@id", 0.8, 3, n=300)
    save_subjects(tmp_path / "results/pace/raw/subjects.npz", [subject])
    pace = {"reps": 2, "budgets": {"start": 30, "stop": 60, "step": 10},
            "method": {"min_cluster_size": 5, "rounding": "reference"},
            "reduce_overrides": {"a@id": {"reducer": "fastica", "dim": 3}}}
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"seed": 5, "pace": pace}))
    spec = importlib.util.spec_from_file_location(
        "pace_reducer_seeds", TOOL.parent / "pace_reducer_seeds.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    seen = []  # the reducer seed of each fit

    def fit(x, c):
        seen.append(c.seed)
        return real_fit(x, c)

    real_fit = tool.fit
    monkeypatch.setattr(tool, "fit", fit)
    monkeypatch.setattr(sys, "argv", ["x", str(tmp_path), str(cfg), "a@id", "--seeds", "5", "6"])
    tool.main()
    assert seen == [5, 6]
    got = pd.read_csv(tmp_path / "results/pace/raw/reducer_seeds-a@id.csv")
    assert got["reduced"].all() and (got["dim"] == 3).all()
    want, _ = run_experiment("main", [subject], StudyParams.from_config(pace, seed=5))
    want = want[want["approach"].eq("PACE") & want["experiment"].eq("main")]
    np.testing.assert_allclose(got[got["seed"].eq(5)]["estimate"], want["estimate"], rtol=1e-6)
    np.testing.assert_allclose(got["mse"], 100 * (got["estimate"] - got["truth"]).abs(), rtol=1e-5)
