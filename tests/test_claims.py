"""The claims tables: verdicts from a hand-made checks table, and the committed docs' tables
against the claims each study's report module declares."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pandas as pd
import pytest

from labelfree import claims as C

REPO = Path(__file__).resolve().parents[1]

CLAIMS = (
    {"id": "A", "checks": ("1a", "1b"), "claim": "both hold", "cause": "cause of A"},
    {"id": "B", "checks": ("2 *",), "claim": "one of two fails", "cause": "cause of B"},
    {"id": "C", "checks": ("3",), "claim": "fails, no cause given"},
    {"id": "D", "checks": ("4",), "claim": "no data"},
    {"id": "E", "untestable": "needs ImageNet", "claim": "no check"},
    {"id": "F", "checks": ("5",), "claim": "holds here, fails on real data", "cause": "cause F"},
)
NOT_CLAIMS = {"control *": "a control of ours"}


def _table() -> pd.DataFrame:
    return pd.DataFrame({
        "check": ["1a", "1b", "2 first", "2 second", "3", "4", "5", "control z"],
        "value": [0.5, 0.25, 1.0, -1.0, -0.3, float("nan"), 0.7, 1.0],
        "holds": ["yes", True, "True", "no", False, "no data", "yes", "yes"],
    })


def _rows(block: str) -> dict[str, list[str]]:
    """Claim id -> the cells of its row."""
    out = {}
    for line in block.splitlines():
        if line.startswith("| **"):
            cells = [c.strip() for c in line.strip("|").split(" | ")]
            out[cells[0].strip("*")] = cells
    return out


def test_verdicts_and_causes_from_a_hand_made_table():
    real = pd.DataFrame({"check": ["5"], "value": [-0.1], "holds": ["no"]})
    block = C.render(CLAIMS, NOT_CLAIMS, _table(), "provenance line", real, "real run", "doc.md")
    rows = _rows(block)
    # columns: id, claim, checks, ours, verdict, real data, cause
    assert rows["A"][4] == "holds" and rows["A"][3] == "1a: 0.5; 1b: 0.25" and rows["A"][6] == ""
    assert rows["B"][4] == "does not hold (1 of 2 rows hold)"
    # the words the keys share ("2") are left out of the row names
    assert rows["B"][3] == "first: 1; second: -1 (fails)" and rows["B"][6] == "cause of B"
    assert rows["C"][4] == "does not hold" and rows["C"][6] == "not investigated"
    assert rows["D"][4] == "cannot be tested here: no data in this run"
    assert rows["E"][4] == "cannot be tested here: needs ImageNet" and rows["E"][2] == "none"
    # a failure on the real-data run alone shows the cause too
    assert rows["F"][4] == "holds" and rows["F"][5] == "does not hold (-0.1)"
    assert rows["F"][6] == "cause F"
    assert rows["A"][5] == "—"  # no real row for A
    assert "`control *`: a control of ours" in block
    assert block.startswith(C.BEGIN + "\nprovenance line\n") and block.endswith(C.END + "\n")


def test_a_check_matching_no_claim_is_refused():
    t = pd.concat([_table(), pd.DataFrame({"check": ["6 new"], "value": [1.0],
                                           "holds": ["yes"]})], ignore_index=True)
    with pytest.raises(ValueError, match="'6 new' matches no claim"):
        C.render(CLAIMS, NOT_CLAIMS, t, "p")


def test_rows_of_several_tables_and_what_columns():
    a = pd.DataFrame({"check": ["G", "G"], "what": ["ratio x", "ratio y"], "value": [1, 2],
                      "holds": [True, False]})
    ids = C.match(a, ({"id": "X", "checks": ("G: ratio x",)},
                      {"id": "Y", "checks": ("G: ratio y",)}), {})
    assert list(ids) == ["X", "Y"]
    b = pd.DataFrame({"check": ["(i)"], "scope": ["S_all"], "value": [0.1], "holds": [True],
                      "table": ["digits"]})
    assert C.verdict(b).ours == "digits S_all 0.1"


def test_embed_replaces_only_the_block():
    doc = f"# T\n\n{C.BEGIN}\nold\n{C.END}\n\nafter\n"
    new = C.embed(doc, f"{C.BEGIN}\nnew\n{C.END}\n")
    assert new == f"# T\n\n{C.BEGIN}\nnew\n{C.END}\n\nafter\n"
    assert C.embedded(new) == f"{C.BEGIN}\nnew\n{C.END}\n"
    with pytest.raises(ValueError, match="exactly one"):
        C.embed("no markers", "x")


@pytest.mark.parametrize("study", C.STUDIES)
def test_committed_claims_table_names_every_claim_and_check(study):
    """The doc's table is the generator's for the study's CLAIMS: every claim with its checks,
    no claim that CLAIMS lacks (a claim or check added without regenerating fails here)."""
    claims, not_claims = C.study_claims(study)
    rows = _rows(C.embedded((REPO / "docs" / f"{study}.md").read_text()))
    assert set(rows) == {c["id"] for c in claims}
    for c in claims:
        want = ", ".join(f"`{p}`" for p in c.get("checks", ())) or "none"
        assert rows[c["id"]][2] == want.replace("|", "\\|"), c["id"]
        # a claim's patterns matched rows of the run (a mistyped pattern matches none)
        if c.get("checks"):
            assert rows[c["id"]][3] != "—", f"{study} {c['id']}: no check row matched"


@pytest.mark.parametrize("study", C.STUDIES)
def test_every_check_of_the_default_run_has_a_claim(study):
    """Every check id of the committed default-run summary matches a claim or NOT_CLAIMS
    pattern (the summary has no ``what`` column: a ``check: what`` pattern's check part
    counts)."""
    claims, not_claims = C.study_claims(study)
    pats = [p for c in claims for p in c.get("checks", ())] + list(not_claims)
    summary = pd.read_csv(REPO / "docs" / "default-run" / "summary.csv", dtype=str)
    checks = summary[summary.study.str.split("/").str[0] == study].check.str.strip()
    assert len(checks)
    missing = [k for k in checks
               if not any(fnmatch.fnmatchcase(k, p) or p.startswith(f"{k}: ") for p in pats)]
    assert not missing, f"{study}: checks with no claim: {missing}"
