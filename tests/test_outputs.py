"""The one naming rule of the studies' outputs (issue 20 item 2, docs/outputs.md).

Every stem a study declares (library lists and the rule files' lists, read as test_fidelity_doc
reads them) must follow ``<id>[-<detail>]``, give a valid ``<id>-<scope>[-<detail>]`` name, and
have its report caption at ``workflow/report/<study>/{tables,figures}/<stem>.rst``; every caption
file there must belong to a declared stem. A new table named ``foo_bar`` fails all three.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labelfree.outputs import POOLED, check_name, output_name, split_stem, stem_of
from tests.test_fidelity_doc import RULES, SRC, module_literal, module_str, smk_literal

REPO = Path(__file__).resolve().parents[1]
REPORT = REPO / "workflow" / "report"


def declared_stems() -> dict[tuple[str, str], list[str]]:
    """(study, tables|figures) -> the stems the library and the rule files declare."""
    pace = SRC / "pace" / "plan.py"
    return {
        ("laf", "tables"): list(module_literal(SRC / "laf" / "plan.py", "TABLES")),
        ("laf", "figures"): list(module_literal(SRC / "laf" / "plan.py", "FIGURES")),
        ("pace", "tables"): [*module_literal(pace, "TABLES").values(),
                             module_str(pace, "SUBJECTS_STEM"),
                             module_str(pace, "CROSS_STEM"),
                             module_str(pace, "CSS_COV_STEM")],  # fmt: skip
        ("pace", "figures"): list(module_literal(pace, "FIGURES").values()),
        ("syp", "tables"): list(module_literal(SRC / "syp" / "plan.py", "TABLE_NAMES")),
        ("syp", "figures"): list(module_literal(SRC / "syp" / "plan.py", "FIGURE_NAMES")),
        ("alphatrim", "tables"): list(module_literal(SRC / "alphatrim" / "plan.py", "TABLES")),
        ("alphatrim", "figures"): list(module_literal(SRC / "alphatrim" / "plan.py", "FIGURES")),
        ("metamorphic", "tables"): smk_literal(RULES / "metamorphic.smk", "METAMORPHIC_TABLES"),
        ("metamorphic", "figures"): smk_literal(RULES / "metamorphic.smk", "METAMORPHIC_FIGURES"),
        ("scorecard", "tables"): [f"extra-{t}" for t in smk_literal(
            RULES / "functions" / "scorecard.smk", "SCORECARD_TABLES")]
        + [module_str(RULES / "functions" / "scorecard.smk", "SCORECARD_COVERAGE")],  # fmt: skip
        ("scorecard", "figures"): [module_str(RULES / "functions" / "scorecard.smk",
                                              "SCORECARD_FIGURE")],  # fmt: skip
        ("shifts", "figures"): [module_str(RULES / "functions" / "shifts.smk", "SHIFTS_EXAMPLES")],
    }


def rule_problems(stems: dict[tuple[str, str], list[str]], captions: Path) -> list[str]:
    """What breaks the rule: a bad stem, a stem without caption, a caption without stem."""
    found = []
    for (study, kind), names in stems.items():
        for stem in names:
            try:
                split_stem(stem)
                assert stem_of(output_name(stem, "digits")) == stem
            except ValueError as e:
                found.append(f"{study}/{kind}: {e}")
            if not (captions / study / kind / f"{stem}.rst").is_file():
                found.append(f"{study}/{kind}/{stem}: no caption {study}/{kind}/{stem}.rst")
        folder = captions / study / kind
        for rst in sorted(folder.glob("*.rst")) if folder.is_dir() else []:
            if rst.stem not in names:
                found.append(f"{study}/{kind}/{rst.name}: caption of no declared output")
    return found


def test_every_declared_stem_follows_the_rule_and_has_its_caption():
    assert rule_problems(declared_stems(), REPORT) == []


ROMAN = {1: "I", 2: "II", 3: "III", 4: "IV", 5: "V"}


def caption_names_its_paper_item(stem: str, text: str) -> bool:
    """The caption's first 150 characters name the paper item of its stem's id (``table3-4``:
    "Table(s) 3"; ``fig4``: "Fig. 4" / "Figs. 4" / "Figure 4"; Roman numerals for
    alpha-trimming's tables); ``extra`` outputs have no paper item."""
    paper_id, _ = split_stem(stem)
    if paper_id == "extra":
        return True
    m = re.match(r"(table|fig)([A-Z]?)(\d+)", paper_id)
    label, letter, n = "Table" if m[1] == "table" else "Fig", m[2], int(m[3])
    numbers = "|".join(re.escape(x) for x in {f"{letter}{n}", ROMAN.get(n, str(n))})
    return re.search(rf"\b{label}\w*\.?\s*\**\s*(?:{numbers})\b", text[:150]) is not None


def test_every_caption_names_its_paper_item():
    """Issue 20 item 2: the report's captions follow the rule: a caption names its paper item."""
    bad = [f"{study}/{kind}/{stem}.rst"
           for (study, kind), stems in declared_stems().items() for stem in stems
           if not caption_names_its_paper_item(
               stem, (REPORT / study / kind / f"{stem}.rst").read_text())]  # fmt: skip
    assert bad == []
    assert caption_names_its_paper_item("table1", "Reproduces **Table I** of alpha-trimming")
    assert not caption_names_its_paper_item("table1-3", "RQ1 manual check: flags per model")
    assert not caption_names_its_paper_item("fig6", "Reproduces Fig. 16")


def test_a_badly_named_output_is_caught(tmp_path):
    """A plausible regression: a new table `foo_bar` (no paper id, no `extra-`)."""
    stems = declared_stems()
    stems[("laf", "tables")] = [*stems[("laf", "tables")], "foo_bar"]
    found = rule_problems(stems, REPORT)
    assert any("'foo_bar' breaks the naming rule" in p for p in found)
    assert any("laf/tables/foo_bar: no caption" in p for p in found)
    stray = tmp_path / "laf" / "tables"
    stray.mkdir(parents=True)
    (stray / "rq1_id.rst").write_text("stale caption\n")
    assert any("rq1_id.rst: caption of no declared output" in p
               for p in rule_problems({("laf", "tables"): []}, tmp_path))  # fmt: skip


@pytest.mark.parametrize(
    ("stem", "scope", "name"),
    [
        ("table9-10", POOLED, "table9-10-all"),  # one file, two consecutive paper tables
        ("table2-3-best_counts", "pace_digits", "table2-3-pace_digits-best_counts"),
        ("fig4", "digits", "fig4-digits"),
        ("tableA1", POOLED, "tableA1-all"),  # appendix letters kept
        ("extra-checks", "laf_tight", "extra-laf_tight-checks"),
        ("extra-best", "{zoo}", "extra-{zoo}-best"),  # a rule's pattern
    ],
)
def test_output_name_known_answers(stem, scope, name):
    """Names of docs/outputs.md's grammar, written out by hand."""
    assert output_name(stem, scope) == name
    if "{" not in scope:
        parts = check_name(name)
        assert parts["scope"] == scope and stem_of(name) == stem


@pytest.mark.parametrize(
    "name",
    ["rq1_id", "pace_table4_statistics", "digits-table1-ensembles", "laf_tight-best", "extra-all",
     "table2-3", "Table2-all", "table2-all-Best"],
)
def test_old_and_malformed_names_are_refused(name):
    """Three naming schemes before issue 20, an `extra` without detail, a name without scope
    (`table2-3` would read as Table 2 of a zoo `3`: a scope needs a letter), upper case. (The
    metamorphic scheme's `table1-3_oracle_precision` reads as Table 1 of a zoo
    `3_oracle_precision`, which the config schema allows; the smoke run's test catches it by
    its scope, which is no zoo of the run.)"""
    with pytest.raises(ValueError, match="breaks the naming rule"):
        check_name(name)


def test_bad_stems_and_scopes_are_refused():
    for stem in ("foo_bar", "extra", "table", "fig4_data", "checks"):
        with pytest.raises(ValueError, match=f"stem {stem!r} breaks"):
            output_name(stem, "digits")
    for scope in ("my-zoo", "3", ""):
        with pytest.raises(ValueError, match="scope"):
            output_name("table1", scope)
