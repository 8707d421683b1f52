"""PACE spec section 8, check C11 (metrics on the paper's Tables 2-7) and C12 (1 - MSE)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labelfree.pace.metrics import (
    best_counts,
    improvement,
    mse_percent,
    regression_accuracy,
    stat_tests,
)

DATA = Path(__file__).parent / "data"
APPROACHES = ["SRS", "CES", "CSS", "PACE"]
CLS = [*range(1, 11), *range(17, 25)]
GROUPS = {
    "C": CLS,
    "R": list(range(11, 17)),
    "High": [1, 2, 3, 7, 8, 10, 11, 12, 15, 17, 24],
    "Low": [4, 5, 6, 9, 13, 14, 16, 18, 19, 20, 21, 22, 23],
    "Ori": [1, 2, 3, 7, 8, 9, 10, 11, 12, 17, 22, 23, 24],
    "Mut": [13, 14, 15, 16],
    "Gen": [18, 19, 20, 21],
}


def _read(name: str) -> pd.DataFrame:
    rows = []
    for line in (DATA / name).read_text().splitlines():
        parts = line.split()
        im = float(parts[-1]) if parts[-1] not in ("—", "-") else np.nan
        rows.append({"subject": parts[0], "approach": parts[1], "mse": np.array(parts[2:16], float),
                     "im": im})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def t23() -> pd.DataFrame:
    return _read("table23.txt")


def _mse(df: pd.DataFrame, subject: str, approach: str) -> np.ndarray:
    row = df[(df.subject == subject) & (df.approach == approach)]
    return row.iloc[0]["mse"]


def test_c11_improvement_column_per_subject(t23):
    per = t23[t23.subject != "Avg"]
    for _, row in per[per.approach != "PACE"].iterrows():
        got = improvement(row["mse"], _mse(t23, row["subject"], "PACE"))
        # cells are rounded to 3 decimals: the recomputed Im agrees within 0.03 points
        assert got == pytest.approx(row["im"], abs=0.03), (row["subject"], row["approach"])
    assert improvement(_mse(t23, "1", "SRS"), _mse(t23, "1", "PACE")) == pytest.approx(76.94, abs=0.01)


def test_c11_average_rows_and_their_improvement(t23):
    per = t23[t23.subject != "Avg"]
    for a, im in zip(["SRS", "CES", "CSS"], [51.06, 50.94, 70.12], strict=True):
        avg = np.mean(np.stack(per[per.approach == a]["mse"].tolist()), axis=0)
        np.testing.assert_allclose(avg, _mse(t23, "Avg", a), atol=1e-3)
        assert improvement(_mse(t23, "Avg", a), _mse(t23, "Avg", "PACE")) == pytest.approx(im, abs=0.01)


def test_c11_best_counts(t23):
    per = t23[t23.subject != "Avg"]
    wide = pd.DataFrame(
        np.stack(per["mse"].tolist()), index=pd.MultiIndex.from_frame(per[["subject", "approach"]])
    )
    assert best_counts(wide, APPROACHES) == {"SRS": 7, "CES": 22, "CSS": 12, "PACE": 295}


def test_c11_table4_statistics(t23):
    per = t23[t23.subject != "Avg"]
    ref = {line.split()[0]: np.array(line.split()[1:], float)
           for line in (DATA / "table4.txt").read_text().splitlines()}
    for j in range(14):
        pace = np.array([_mse(t23, str(s), "PACE")[j] for s in range(1, 25)])
        comp = {}
        for a in ["SRS", "CES", "CSS"]:
            vals = []
            for s in range(1, 25):
                r = per[(per.subject == str(s)) & (per.approach == a)]
                vals.append(r.iloc[0]["mse"][j] if len(r) else np.nan)
            comp[a] = np.array(vals)
        res = stat_tests(comp, pace)
        for a in ["SRS", "CES", "CSS"]:
            assert res[a]["A12"] == pytest.approx(ref[a][j], abs=1e-3), (a, j)
            assert res[a]["p"] < 0.05


def test_c11_group_rows_tables_5_to_7(t23):
    per = t23[t23.subject != "Avg"]
    for line in (DATA / "table567.txt").read_text().splitlines():
        parts = line.split()
        grp, a, ref = parts[0], parts[1], np.array(parts[2:16], float)
        rows = per[(per.approach == a) & per.subject.astype(int).isin(GROUPS[grp])]
        avg = np.mean(np.stack(rows["mse"].tolist()), axis=0)
        np.testing.assert_allclose(avg, ref, atol=1e-3, err_msg=f"{grp} {a}")


def test_c12_regression_accuracy_mapping():
    got = regression_accuracy(np.array([0.09660, 0.08176, 0.15019, 0.28828])) * 100
    np.testing.assert_allclose(got, [90.34, 91.824, 84.981, 71.172], atol=1e-3)


def test_mse_percent_is_root_mean_square():
    est = np.array([[0.9, 0.8], [0.7, 0.8]])
    np.testing.assert_allclose(mse_percent(est, 0.8), [100 * np.sqrt(0.01), 0.0])


def test_cross_dataset_table_spans_zoos():
    """Issue 15: one table over every zoo a run holds, a row per subject (zoo) x budget, and per
    budget an Avg row over all subjects of all zoos (as Tables 2-3's Avg rows). Values by hand."""
    from labelfree.pace.report import cross_rows, table_cross_dataset

    def run(subjects, mse):  # mse[subject][approach] = (n=50, n=60)
        err = pd.DataFrame([{"experiment": "main", "subject": s, "approach": a, "budget": b, "mse": v}
                            for s in subjects for a, vals in mse[s].items()
                            for b, v in zip((50, 60), vals, strict=True)])
        err = pd.concat([err, err.assign(experiment="alpha", mse=99.0)])  # other experiments ignored
        meta = pd.DataFrame({"name": subjects, "input_type": "original", "accuracy": 0.9})
        return err, meta

    e1, m1 = run(["a@id"], {"a@id": {"SRS": (4, 3), "CES": (5, 2), "CSS": (6, 6), "PACE": (1, 2)}})
    e2, m2 = run(["b@id", "c@id"], {"b@id": {"SRS": (2, 2), "CES": (2, 2), "CSS": (2, 2), "PACE": (3, 3)},
                                    "c@id": {"SRS": (0, 1), "CES": (2, 2), "CSS": (1, 1), "PACE": (2, 1)}})
    t = table_cross_dataset([cross_rows(e1, m1, "zooA", "mnist"), cross_rows(e2, m2, "zooB", "cifar10")])
    per = t[t.subject != "Avg"]
    assert len(per) == 3 * 2  # 3 subjects (2 zoos) x 2 budgets
    assert per[["zoo", "dataset"]].drop_duplicates().values.tolist() == [["zooA", "mnist"], ["zooB", "cifar10"]]
    row = per[(per.subject == "a@id") & (per.budget == 60)].iloc[0]
    assert (row.SRS, row.CES, row.CSS, row.PACE, row.best) == (3, 2, 6, 2, "CES/PACE")  # tie: both
    assert per[(per.subject == "c@id") & (per.budget == 50)].best.item() == "SRS"
    avg = t[t.subject == "Avg"].set_index("budget")
    # n=50: SRS (4+2+0)/3 = 2, CES 3, CSS 3, PACE (1+3+2)/3 = 2 -> SRS/PACE tie
    np.testing.assert_allclose(avg.loc[50, ["SRS", "CES", "CSS", "PACE"]].to_numpy(float), [2, 3, 3, 2])
    assert avg.loc[50, "best"] == "SRS/PACE" and avg.loc[50, "subjects"] == 3 and avg.loc[50, "zoo"] == "all"
    # n=60: SRS 2, CES 2, CSS 3, PACE 2
    np.testing.assert_allclose(avg.loc[60, ["SRS", "CES", "CSS", "PACE"]].to_numpy(float), [2, 2, 3, 2])
    with pytest.raises(ValueError, match="zooA"):
        table_cross_dataset([cross_rows(e1, m1, "zooA", "mnist"), cross_rows(e1, m1, "zooA", "mnist")])
