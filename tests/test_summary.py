"""results/summary: every study's checks gathered with provenance, embedded in README (issue 13)."""

from __future__ import annotations

import pandas as pd
import pytest

from labelfree.store import save_table
from labelfree.summary import (
    BEGIN,
    COLUMNS,
    END,
    _fmt,
    collect,
    collect_methods,
    embed,
    embedded,
    from_csv,
    holds,
    render,
    write,
)

META = {"config": "config/config.yaml", "config_digest": "abc", "commit": "0123",
        "machine": "test cpu"}


def checks(tmp_path, study, rows):
    path = tmp_path / f"{study}.csv"
    save_table(pd.DataFrame(rows, columns=["check", "value", "threshold", "holds"]), path)
    return path


def test_collect_keeps_study_order_and_every_check(tmp_path):
    paths = {
        "laf": checks(tmp_path, "laf", [("c1", 0.61, 0.5, True), ("c2", 0.1, 0.2, False)]),
        "pace": checks(tmp_path, "pace", [("p1", 3.4, 5.0, True)]),
    }
    df = collect(paths)
    assert list(df["study"]) == ["laf", "laf", "pace"]
    assert list(df["check"]) == ["c1", "c2", "p1"]
    block = render(df, META)
    # counts per study from the holds column (a bug counting rows, not verdicts, fails this)
    assert "| `laf` | 1 of 2 |" in block and "| `pace` | 1 of 1 |" in block
    assert "| `laf` | c2 | 0.1 | 0.2 | **no** |" in block
    assert "commit `0123`" in block and "test cpu" in block
    assert block.startswith(BEGIN) and block.rstrip().endswith(END)


def test_collect_names_a_table_without_the_columns(tmp_path):
    path = tmp_path / "bad.csv"
    save_table(pd.DataFrame({"check": ["x"], "value": [1]}), path)
    with pytest.raises(ValueError, match="bad.csv.*threshold"):
        collect({"laf": path})


def test_embed_replaces_only_the_block():
    readme = f"intro\n{BEGIN}\nold\n{END}\nrest\n"
    new = f"{BEGIN}\nnew\n{END}\n"
    out = embed(readme, new)
    assert out == f"intro\n{BEGIN}\nnew\n{END}\nrest\n"
    assert embedded(out) == new
    with pytest.raises(ValueError):
        embed("no markers", new)


def test_markdown_is_rendered_from_the_csv_as_written(tmp_path):
    paths = {"laf": checks(tmp_path, "laf", [("c1", 0.123456789, 0.5, False), ("c2", "n/a", 1, True)])}
    write(paths, tmp_path / "s.csv", tmp_path / "s.md", {**META})
    table, meta = from_csv(tmp_path / "s.csv")
    assert meta == META
    assert (tmp_path / "s.md").read_text() == render(table, meta)


@pytest.mark.parametrize(("value", "verdict"), [(True, True), ("yes", True), ("True", True),
                                                (1, True), (False, False), ("no", False),
                                                ("no data", False), (float("nan"), False)])
def test_verdicts_of_every_studys_encoding(value, verdict):
    """The studies write holds as bool, yes/no or 'no data'; counting must read them all."""
    assert holds(value) is verdict


def test_numbers_read_back_as_text_are_still_rounded():
    assert _fmt("-0.032299999999999995") == "-0.0323" and _fmt(0.123456) == "0.1235"
    assert _fmt("0.311 vs 0.227") == "0.311 vs 0.227" and _fmt(3) == "3"


def test_methods_file_is_written_even_when_no_zoo_was_scored(tmp_path):
    """The summary rule declares summary-methods.csv; a run whose zoos have no shifted set has no
    scorecard, so the file must still be written (header only) and the block has no
    which-method-when table (a prediction zoo of one clean set failed on a missing output)."""
    paths = {"laf": checks(tmp_path, "laf", [("c1", 0.5, 0.4, True)])}
    write(paths, tmp_path / "s.csv", tmp_path / "s.md", {**META}, best={},
          methods_path=tmp_path / "m.csv")
    got = pd.read_csv(tmp_path / "m.csv")
    assert list(got.columns) == ["zoo", "shift", "estimator", "mae", "ranker", "spearman"]
    assert got.empty and "Which method" not in (tmp_path / "s.md").read_text()


def test_methods_of_one_model_and_unscored_zoos(tmp_path):
    """Issue 18: a zoo of one model is in which-method-when with its estimator and no ranker
    (shown as not applicable, its Spearman as a dash); an unscored zoo's reason row is left out."""
    one = tmp_path / "one.csv"
    pd.DataFrame({"shift": ["overall", "source (sanity)"], "estimator": ["ATC-MC", "DoC"],
                  "mae": [0.02, 0.0], "ranker": ["not applicable: one model"] * 2,
                  "spearman": [float("nan")] * 2, "note": ["x", "x"]}).to_csv(one, index=False)
    unscored = tmp_path / "ml.csv"
    pd.DataFrame({"shift": ["all"], "estimator": [""], "mae": [float("nan")], "ranker": [""],
                  "spearman": [float("nan")], "note": ["multi-label"]}).to_csv(unscored, index=False)
    m = collect_methods({"one": one, "ml": unscored})
    assert m.drop(columns="spearman").to_dict("records") == [dict(
        zoo="one", shift="overall", estimator="ATC-MC", mae=0.02, ranker="not applicable: one model")]
    md = render(pd.DataFrame(columns=COLUMNS), {k: "x" for k in ("config", "config_digest",
                                                                   "commit", "machine")}, m)
    assert "| `one` | overall | ATC-MC | 0.02 | not applicable: one model | — |" in md
