"""labelfree.paper_compare: our tables beside the papers' numbers, on tiny fake result tables.

The fake tables have the layouts the study reports write (laf/report.py table_rq1,
table_corruptions, table_jaccard; pace/report.py table_per_subject; alphatrim/experiment.py
table1, table2); the expected differences are hand computations (ours - paper).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from labelfree import paper_compare as pc


def _paper(rows: list[tuple]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"study": "x", "dataset": "MNIST", "paper_table": t, "paper_line": ln, "row": r,
          "column": c, "value": v, "note": ""} for t, ln, r, c, v in rows]
    )  # fmt: skip


def test_compare_joins_every_paper_number_with_the_difference():
    paper = _paper([("Table 3", 373, "ID", "spearman LaF", 0.89),
                    ("Table 3", 373, "ID", "spearman CRC", 0.26)])  # fmt: skip
    ours = pd.DataFrame([{"row": "ID", "column": "spearman LaF", "value": 0.75},
                         {"row": "ID", "column": "not in paper", "value": 1.0}])  # fmt: skip
    out = pc.compare(ours, paper)
    assert len(out) == 2  # paper rows only
    laf = out[out.column == "spearman LaF"].iloc[0]
    assert laf.ours == 0.75 and math.isclose(laf.difference, 0.75 - 0.89)
    crc = out[out.column == "spearman CRC"].iloc[0]
    assert pd.isna(crc.ours) and pd.isna(crc.difference)
    with pytest.raises(ValueError, match="twice"):
        pc.compare(pd.concat([ours, ours]), paper)
    md = pc.render("laf", out, {"config": "c"}, "a smaller zoo")
    assert "| ID | spearman LaF | 0.75 | 0.89 | -0.14 | 373 |" in md
    assert "| ID | spearman CRC |  | 0.26 |  | 373 |" in md
    assert "1 of 2 paper numbers" in md and "a smaller zoo" in md


def _laf_tables(tmp_path):
    t = tmp_path / "laf"
    t.mkdir()
    pd.DataFrame([
        {"source": "ours", "zoo": "laf_mnist", "spearman LaF": 0.8, "spearman CRC": 0.3,
         "kendall LaF": 0.6, "kendall CRC": 0.2},
        {"source": "paper", "zoo": "MNIST", "spearman LaF": 0.89, "spearman CRC": 0.26,
         "kendall LaF": 0.78, "kendall CRC": 0.18},
    ]).to_csv(t / "table3-4-all-id.csv", index=False)  # fmt: skip
    for table, base in (("table6", 0.5), ("table7", 0.4)):
        pd.DataFrame([
            {"source": "ours", "zoo": "laf_mnist", "corruption": "elastic_transform",
             "Random": base, "SDS": base + 0.01, "CES-best": base + 0.02, "CES-mean": 0.0,
             "LaF": base + 0.03, "CRC": base + 0.04},
            {"source": "ours", "zoo": "laf_mnist", "corruption": "average", "Random": base,
             "SDS": base, "CES-best": None, "CES-mean": None, "LaF": base, "CRC": base},
            {"source": "paper", "zoo": "MNIST-C", "corruption": "average", "Random": 0.62,
             "SDS": 0.48, "CES-best": 0.91, "LaF": 0.82},
        ]).to_csv(t / f"{table}-all.csv", index=False)  # fmt: skip
    pd.DataFrame([
        {"source": "ours", "zoo": "laf_mnist", "testset": "id", "k": 1, "Random": 0.1,
         "SDS": 0.2, "CES-best": 0.3, "CES-mean": 0.25, "LaF": 1.0, "CRC": 0.0},
    ]).to_csv(t / "table5-all.csv", index=False)  # fmt: skip
    return t


def test_laf_reader_maps_names_and_skips_paper_rows(tmp_path):
    ours = pc.ours_laf(_laf_tables(tmp_path)).set_index(["row", "column"])["value"]
    assert ours[("ID", "spearman LaF")] == 0.8  # the 'paper' row of Table 3-4 is not ours
    assert ours[("Elastic", "spearman CES")] == 0.52  # CES-best -> CES, elastic_transform
    assert ours[("Elastic", "kendall CRC")] == pytest.approx(0.44)
    assert ("Average", "spearman CES") not in ours.index  # NaN cells are left out
    assert ours[("jaccard k=1", "Our")] == 1.0 and ours[("jaccard k=1", "CES")] == 0.3
    assert not any(c.endswith("CES-mean") for _, c in ours.index)


def test_cli_writes_md_and_csv_against_the_committed_paper_csv(tmp_path, repo_root):
    tables = _laf_tables(tmp_path)
    out = tmp_path / "laf-mnist.md"
    pc.main(["laf", "--tables", str(tables), "--paper",
             str(repo_root / "docs/paper-vs-ours/laf-mnist-paper.csv"), "--out", str(out),
             "--config", "config/paper/laf-mnist-reduced.yaml", "--wall", "1 min",
             "--peak-mem", "1 GB", "--commit", "abc", "--machine", "test", "--why", "fake"])  # fmt: skip
    md = out.read_text()
    # LaF Table 3, ID row: paper 0.89 (line 373 of the text copy), ours 0.8 -> -0.09
    assert "| ID | spearman LaF | 0.8 | 0.89 | -0.09 | 373 |" in md
    # Table 6, Elastic, LaF: paper 0.46, ours 0.53 -> 0.07
    assert "| Elastic | spearman LaF | 0.53 | 0.46 | 0.07 |" in md
    df = pd.read_csv(out.with_suffix(".csv"))
    assert {"ours", "paper", "difference", "paper_table", "paper_line"} <= set(df.columns)
    assert df["ours"].notna().sum() > 0 and "| wall time | 1 min |" in md


def test_pace_reader(tmp_path):
    pd.DataFrame([
        {"subject": "lenet1@id", "approach": "PACE", "n=50": 0.5, "n=60": 0.4, "Im": None},
        {"subject": "lenet5@pace_bim", "approach": "SRS", "n=50": 7.0, "n=60": None, "Im": 3.0},
        {"subject": "Avg", "approach": "PACE", "n=50": 1.0, "n=60": 1.0, "Im": None},
    ]).to_csv(tmp_path / "table2-3-pace_mnist.csv", index=False)  # fmt: skip
    pd.DataFrame([{"name": "lenet5_m2@id", "accuracy": 0.7727}]).to_csv(
        tmp_path / "table1-pace_mnist.csv", index=False
    )
    ours = pc.ours_pace(tmp_path, "pace_mnist").set_index(["row", "column"])["value"]
    assert ours[("1 PACE", "mse n=60")] == 0.4
    assert ours[("18 SRS", "mse n=50")] == 7.0 and ("18 SRS", "mse n=60") not in ours.index
    assert ours[("5 LeNet-5-M2", "accuracy %")] == pytest.approx(77.27)
    assert len(ours) == 4  # Avg rows and Im are not paper numbers of these subjects


def test_alphatrim_reader_parses_pm_cells_and_scales_fractions(tmp_path):
    pd.DataFrame([{"M_ens": 3, "n_ensembles": 100, "% alpha_hat <= 0.05": 80.0,
                   "accuracy mean ± std": "0.98 ± 0.01",
                   "churn w.r.t. ensemble mean ± std": "120.5 ± 30.25",
                   "ECE mean ± std": "0.0123 ± 0.0045"}]).to_csv(
        tmp_path / "table1-e.csv", index=False)  # fmt: skip
    pd.DataFrame([{"source": "S_init", "accuracy mean ± std": "0.975 ± 0.002",
                   "accuracy range": "[0.970, 0.980]", "ensemble accuracy": 0.981,
                   "accuracy range of runs with alpha_hat <= 0.05": "[0.972, 0.980]"}]).to_csv(
        tmp_path / "table2-e.csv", index=False)  # fmt: skip
    ours = pc.ours_alphatrim(tmp_path, "e").set_index(["row", "column"])["value"]
    assert ours[("M_ens=3", "% alpha<=0.05")] == 80.0
    assert ours[("M_ens=3", "accuracy mean")] == pytest.approx(98.0)
    assert ours[("M_ens=3", "churn std")] == 30.25 and ours[("M_ens=3", "ece mean")] == 0.0123
    assert ours[("S_init", "range max")] == pytest.approx(98.0)
    assert ours[("S_init", "alpha<=0.05 range min")] == pytest.approx(97.2)
    assert ours[("S_init", "ensemble accuracy")] == pytest.approx(98.1)


def test_committed_paper_csvs_hold_the_printed_numbers(repo_root):
    """Spot checks against the papers: LaF Table 3/4 ID rows, PACE Table 2 ID 1, alpha Table I."""
    d = repo_root / "docs" / "paper-vs-ours"
    laf = pc.load_paper(d / "laf-mnist-paper.csv").set_index(["paper_table", "row", "column"])
    assert laf.loc[("Table 3", "ID", "spearman LaF"), "value"] == 0.89
    assert laf.loc[("Table 4", "ID", "kendall CRC"), "value"] == 0.18
    assert laf.loc[("Table 6", "Glass Blur", "spearman Random"), "value"] == -0.16
    pace = pc.load_paper(d / "pace-mnist-paper.csv").set_index(["row", "column"])
    assert pace.loc[("1 PACE", "mse n=50"), "value"] == 0.742
    assert pace.loc[("18 CSS", "mse n=180"), "value"] == 6.089
    at = pc.load_paper(d / "alphatrim-mnist-paper.csv").set_index(["row", "column"])
    assert at.loc[("M_ens=30", "% alpha<=0.05"), "value"] == 100.0
    assert at.loc[("S_batch", "range min"), "value"] == 87.852
