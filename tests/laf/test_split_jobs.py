"""Issue 15: the LaF study split into independent jobs writes what one job writes.

The one-shot path (labelfree.laf.run.run_study, what one job ran before the split) and the
split path (run_part per part, then merge_parts, the rules laf_part and laf_tables) run on the same
small synthetic zoos, a clone control included; their raw files and every table built from them
must be equal byte for byte, wall-clock times aside (they cannot repeat between two runs).
"""

from __future__ import annotations

import gzip
import io

import numpy as np
import pandas as pd
import pytest

from labelfree import store
from labelfree.laf.plan import partition
from labelfree.laf.report import write_all
from labelfree.laf.run import (
    SetInputs,
    StudyParams,
    analyse_sets,
    clone_control,
    merge_parts,
    read_part,
    run_part,
    run_study,
    write_part,
)
from tests.laf.test_study_report import make_artefacts

SETS = {"id": 0.0, "gaussian_noise-5": 0.45, "fog-3": 0.3, "natural-thick": 0.2}
PARAMS = StudyParams(
    budget_max=60,
    budget_step=20,
    large_budgets=(150,),
    repetitions=3,
    ces_repetitions=1,
    rq4_ratios=(0.5, 1.0),
    rq4_draws=2,
)
MODELS = [f"m{j}" for j in range(6)]


def _without_times(path) -> bytes:
    """A raw CSV's bytes with its wall-clock columns (time_*) dropped."""
    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    df = pd.read_csv(io.BytesIO(raw), dtype=str, keep_default_na=False)
    return df.drop(columns=[c for c in df.columns if c.startswith("time_")]).to_csv().encode()


def _clone_spec(source: list[SetInputs], id_set: SetInputs | None = None) -> dict:
    """The rule's clone entry; ``id_set``: the source's `id` set when ``source`` lacks it."""
    spec = {
        "accuracy": 0.6, "copies": 3, "base_models": 4, "source_models": MODELS,
        "source_infer": [t.infer for t in source],
    }
    if id_set is not None:
        spec["source_id"] = {"infer": list(id_set.infer), "labels": id_set.labels}
    return spec


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Raw files and tables of both paths, for a zoo and a clone control (base `tight`, source
    `spread`): `tight` split one job per test set, the clone one job per test-set group.
    Built once per session, also under pytest-xdist (tests.workflow.runner.shared_run), not once
    per worker (issue 22 item 4); the tests only read it."""
    from tests.workflow.runner import shared_run

    return shared_run(tmp_path_factory, "laf-split-jobs", _build_runs)


def _build_runs(root):
    zoos = {
        "tight": make_artefacts(root, "tight", np.linspace(0.75, 0.95, 6), 1, SETS),
        "spread": make_artefacts(root, "spread", np.linspace(0.3, 0.95, 6), 2, SETS),
    }
    # one-shot: every test set of a zoo in one call
    run_study("tight", "d", MODELS, zoos["tight"], PARAMS, 0, root / "one" / "raw" / "tight")
    clone = clone_control(_clone_spec(zoos["spread"]), zoos["tight"])
    run_study("clone", "d", MODELS, zoos["tight"], PARAMS, 0, root / "one" / "raw" / "clone",
              clone=clone)
    # split: one part per test set for `tight`, one per test-set group for the clone control, parts
    # analysed in reverse order, merged in the zoo's order
    for zoo, sets in [("tight", zoos["tight"]), ("clone", zoos["tight"])]:
        by = "group" if zoo == "clone" else "testset"
        parts = partition([t.name for t in sets], [t.origin for t in sets], by)
        paths = []
        for part, names in reversed(parts.items()):
            mine = [t for t in sets if t.name in names]
            cl = None
            if zoo == "clone":
                src = [t for t in zoos["spread"] if t.name in names]
                cl = clone_control(_clone_spec(src, zoos["spread"][0]), mine)
            path = root / "split" / "parts" / zoo / f"{part}.json.gz"
            run_part(zoo, "d", MODELS, mine, PARAMS, 0, path, clone=cl)
            paths.append(path)
        merge_parts(paths, root / "split" / "raw" / zoo, order=[t.name for t in sets])
    for run in ("one", "split"):
        write_all(["tight", "clone"], root / run / "raw", root / run / "tables",
                  root / run / "figures")


@pytest.mark.parametrize("zoo", ["tight", "clone"])
@pytest.mark.parametrize("name", ["metrics.csv.gz", "models.csv", "rq4.csv"])
def test_raw_files_equal_byte_for_byte(runs, zoo, name):
    one = (runs / "one" / "raw" / zoo / name).read_bytes()
    assert one == (runs / "split" / "raw" / zoo / name).read_bytes()
    assert len(one) > 100


@pytest.mark.parametrize("zoo", ["tight", "clone"])
def test_testsets_equal_but_times(runs, zoo):
    one, split = (runs / r / "raw" / zoo / "testsets.csv" for r in ("one", "split"))
    assert _without_times(one) == _without_times(split)
    # same columns in the same order, times included
    assert one.read_text().splitlines()[0] == split.read_text().splitlines()[0]


@pytest.mark.parametrize("zoo", ["tight", "clone"])
def test_ces_guides_equal(runs, zoo):
    one = store.load_npz(runs / "one" / "raw" / zoo / "ces_guides.npz")
    split = store.load_npz(runs / "split" / "raw" / zoo / "ces_guides.npz")
    assert list(one) == list(split) == [t.replace("-", "_") for t in SETS]
    for key in one:
        np.testing.assert_array_equal(one[key], split[key])  # NaN where CES did not run
    assert np.isfinite(one["id"]).any()
    assert np.isnan(one["id"]).any()  # NaN where CES did not run: one bit pattern either way
    # byte for byte too (zip entries carry a fixed time; NaNs are written with one bit pattern)
    assert (runs / "one" / "raw" / zoo / "ces_guides.npz").read_bytes() == (
        runs / "split" / "raw" / zoo / "ces_guides.npz").read_bytes()


def test_every_table_equal(runs):
    tables = sorted((runs / "one" / "tables").glob("*.csv"))
    assert len(tables) == 14
    for t in tables:
        other = runs / "split" / "tables" / t.name
        if t.stem == "extra-all-efficiency":  # wall-clock times only
            assert t.read_text().splitlines()[0] == other.read_text().splitlines()[0]
            continue
        assert t.read_bytes() == other.read_bytes(), t.name


def test_part_file_round_trips_exactly(tmp_path):
    sets = make_artefacts(tmp_path, "z", np.linspace(0.4, 0.9, 5), 3,
                          {"id": 0.0, "natural-thick": 0.2})
    res = analyse_sets("z", "d", MODELS[:5], sets, PARAMS, 0)
    write_part(res, tmp_path / "p.json.gz")
    back = read_part(tmp_path / "p.json.gz")
    assert len(back) == 2
    for a, b in zip(res, back, strict=True):
        # equal including NaN (pandas compares NaN == NaN as equal in assert_frame_equal)
        pd.testing.assert_frame_equal(pd.DataFrame(a.rows), pd.DataFrame(b.rows), check_exact=True)
        pd.testing.assert_frame_equal(pd.DataFrame(a.models), pd.DataFrame(b.models),
                                      check_exact=True)
        pd.testing.assert_frame_equal(pd.DataFrame([a.info]), pd.DataFrame([b.info]),
                                      check_exact=True)
        np.testing.assert_array_equal(a.ces_guides, b.ces_guides)


def test_partition():
    names = ["id", "fog-1", "fog-3", "natural-thick"]
    groups = ["id", "corruptions", "corruptions", "natural"]
    assert partition(names, groups, "group") == {
        "id": ["id"], "corruptions": ["fog-1", "fog-3"], "natural": ["natural-thick"]
    }
    assert list(partition(names, groups, "testset")) == names
    with pytest.raises(ValueError, match="not one of"):
        partition(names, groups, "method")


def test_merge_refuses_missing_or_doubled_sets(runs, tmp_path):
    parts = sorted((runs / "split" / "parts" / "tight").glob("*.json.gz"))
    with pytest.raises(ValueError, match="the zoo has"):
        merge_parts(parts[:-1], tmp_path / "raw", order=list(SETS))
    with pytest.raises(ValueError, match="more than one LaF part"):
        merge_parts([parts[0], parts[0]], tmp_path / "raw")
