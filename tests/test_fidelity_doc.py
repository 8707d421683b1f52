"""docs/fidelity.md stays true to the workflow (issues 15 and 16, "Done when": the page lists every
table and figure of the papers with the file that reproduces it and its status).

Checked without running Snakemake: the output names come from the lists the rule files and the
study packages declare (read as Python literals, nothing imported), so renaming an output in a
rule or a package makes this test fail until the page follows.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

from labelfree.outputs import output_name

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "fidelity.md"
RULES = REPO / "workflow" / "rules"

#: Every numbered table and figure of each paper, from the captions in ../shared/papers/*.txt:
#: laf-labeling-free-model-selection.txt ("Fig. 1." .. "Fig. 9.", "Table 1." .. "Table 10.",
#: "Table A1.", "Table A2."), pace-practical-accuracy-estimation.txt (Fig. 1-8, Table 1-12),
#: syp-scoring-your-prediction.txt (Figure 1-10, Table 1-5),
#: alpha-trimming-training-variability.txt (Figure 1-17, TABLE I-V),
#: unreliable-inferences-metamorphic.txt (Fig. 1-10, Table 1-8).
ROMAN = ["I", "II", "III", "IV", "V"]
PAPER_ITEMS = {
    "laf": [f"Fig. {i}" for i in range(1, 10)]
    + [f"Table {i}" for i in range(1, 11)]
    + ["Table A1", "Table A2"],
    "pace": [f"Fig. {i}" for i in range(1, 9)] + [f"Table {i}" for i in range(1, 13)],
    "syp": [f"Fig. {i}" for i in range(1, 11)] + [f"Table {i}" for i in range(1, 6)],
    "alphatrim": [f"Fig. {i}" for i in range(1, 18)] + [f"Table {r}" for r in ROMAN],
    "metamorphic": [f"Fig. {i}" for i in range(1, 11)] + [f"Table {i}" for i in range(1, 9)],
}
STATUSES = ("reproduced", "partial", "missing", "n/a")


# ---- what the workflow declares -------------------------------------------------------------
def smk_literal(path: Path, name: str):
    """The Python literal assigned to ``name`` at the top level of a rule file."""
    text = path.read_text()
    m = re.search(rf"^{name}\s*=\s*", text, re.M)
    assert m, f"{path.name}: no `{name} = ...`"
    depth, quote, i = 0, None, m.end()
    for i in range(m.end(), len(text)):
        c = text[i]
        if quote:
            quote = None if c == quote else quote
        elif c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                break
    return ast.literal_eval(text[m.end() : i + 1])


def module_literal(path: Path, name: str):
    """The literal assigned to ``name`` at the top level of a library module (not imported)."""
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path}: no top-level `{name}`")


SRC = REPO / "src" / "labelfree"


def named(stems, scope: str) -> list[str]:
    """File names of ``stems`` computed on ``scope`` (a wildcard such as ``{zoo}`` for a
    per-zoo output), by the one naming rule (labelfree.outputs, docs/outputs.md)."""
    return [output_name(s, scope) for s in stems]


def _pace_tables() -> list[str]:
    pace = SRC / "pace" / "plan.py"
    return named(
        [*module_literal(pace, "TABLES").values(), module_str(pace, "SUBJECTS_STEM"),
         module_str(pace, "CSS_COV_STEM")], "{zoo}"
    ) + named([module_str(pace, "CROSS_STEM")], "all")


def module_str(path: Path, name: str) -> str:
    """The string literal assigned to ``name`` at the top level of a rule file."""
    m = re.search(rf'^{name}\s*=\s*"([^"]+)"', path.read_text(), re.M)
    assert m, f"{path.name}: no `{name} = \"...\"`"
    return m.group(1)


#: (rule file, template text it must contain, path pattern, the names it is expanded with); the
#: stems come from the rule files' and study packages' lists (read as literals, not imported)
TEMPLATES: list[tuple[str, str, str, Callable[[], list[str]]]] = [
    ("laf.smk", 'f"results/laf/tables/{laf_plan.name(t)}.csv"', "results/laf/tables/{}.csv",
     lambda: named(module_literal(SRC / "laf" / "plan.py", "TABLES"), "all")),
    ("laf.smk", 'f"results/laf/figures/{laf_plan.name(f)}.png"', "results/laf/figures/{}.png",
     lambda: named(module_literal(SRC / "laf" / "plan.py", "FIGURES"), "all")),
    ("../../src/labelfree/pace/plan.py", 'f"results/pace/tables/{output_name(stem, zoo)}.{ext}"',
     "results/pace/tables/{}.csv", _pace_tables),
    ("../../src/labelfree/pace/plan.py", 'f"results/pace/figures/{output_name(stem, zoo)}.{ext}"',
     "results/pace/figures/{}.png",
     lambda: named(module_literal(SRC / "pace" / "plan.py", "FIGURES").values(), "{zoo}")),
    ("../../src/labelfree/syp/plan.py", 'f"results/syp/tables/{output_name(k, zoo)}.csv"',
     "results/syp/tables/{}.csv",
     lambda: named(module_literal(SRC / "syp" / "plan.py", "TABLE_NAMES"), "{zoo}")),
    ("../../src/labelfree/syp/plan.py", 'f"results/syp/figures/{output_name(k, zoo)}.png"',
     "results/syp/figures/{}.png",
     lambda: named(module_literal(SRC / "syp" / "plan.py", "FIGURE_NAMES"), "{zoo}")),
    ("functions/alphatrim.smk", 'at_output_file(exp, key, kind, exts[0])',
     "results/alphatrim/tables/{}.csv",
     lambda: named(module_literal(SRC / "alphatrim" / "plan.py", "TABLES"), "{exp}")),
    ("functions/alphatrim.smk", 'at_output_file(exp, key, kind, exts[0])',
     "results/alphatrim/figures/{}.png",
     lambda: named(module_literal(SRC / "alphatrim" / "plan.py", "FIGURES"), "{exp}")),
    ("metamorphic.smk", 'f"results/metamorphic/tables/{output_name(t, POOLED)}.csv"',
     "results/metamorphic/tables/{}.csv",
     lambda: named(smk_literal(RULES / "metamorphic.smk", "METAMORPHIC_TABLES"), "all")),
    ("metamorphic.smk", 'f"results/metamorphic/figures/{output_name(f, POOLED)}.png"',
     "results/metamorphic/figures/{}.png",
     lambda: named(smk_literal(RULES / "metamorphic.smk", "METAMORPHIC_FIGURES"), "all")),
    ("pace.smk", 'f"results/pace/raw/css_cov_strata-{PACE.zoo}.csv"', "results/pace/raw/{}.csv",
     lambda: ["css_cov_strata-{zoo}"]),  # written by rule pace_report for the study's zoo
    ("shifts.smk", "f\"results/shifts/figures/{output_name(SHIFTS_EXAMPLES, '{dataset}')}.png\"",
     "results/shifts/figures/{}.png",
     lambda: named([module_str(RULES / "functions" / "shifts.smk", "SHIFTS_EXAMPLES")], "{dataset}")),
]


def declared_outputs() -> set[str]:
    """Output paths the workflow declares: the templates expanded with their name lists, plus
    every plain (not f-) string path in the rule files, Snakemake wildcards kept as ``{name}``."""
    out: set[str] = set()
    for rule, template, pattern, names in TEMPLATES:
        assert template in (RULES / rule).read_text(), f"{rule} no longer contains {template}"
        got = names()
        assert got, f"{rule}: no names for {pattern}"
        out |= {pattern.format(n) for n in got}
    for path in RULES.rglob("*.smk"):
        out |= set(re.findall(r'(?<![A-Za-z])"(results/[^"\s]+)"', path.read_text()))
    return out


# ---- what the page says ---------------------------------------------------------------------
def listing_rows(text: str) -> dict[str, list[dict[str, str]]]:
    """Rows of each study's listing table (section `## <study>: ...`), keyed by study."""
    studies: dict[str, list[dict[str, str]]] = {}
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        study = re.match(r"(\w+):", block)
        if not study or study.group(1) not in PAPER_ITEMS:
            continue
        lines = [ln for ln in block.splitlines() if ln.startswith("|")]
        head = [c.strip() for c in lines[0].strip("|").split("|")]
        rows = []
        for ln in lines[2:]:
            cells = [c.strip() for c in ln.strip().strip("|").split("|")]
            assert len(cells) == len(head), f"{study.group(1)}: malformed row {ln[:80]}"
            rows.append(dict(zip(head, cells, strict=True)))
        studies[study.group(1)] = rows
    return studies


def backticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def normalise(path: str) -> str:
    return re.sub(r"<(\w+)>", r"{\1}", path)


def reference_problem(ref: str) -> str | None:
    """``path`` or ``path::name[.name]``: the file exists and defines each name."""
    path, _, names = ref.partition("::")
    file = REPO / path
    if path.endswith("/"):
        return None if file.is_dir() else f"{ref}: no such folder"
    if not file.is_file():
        return f"{ref}: no such file"
    text = file.read_text()
    for name in filter(None, names.split(".")):
        if not re.search(rf"^\s*(?:def|class|rule)\s+{name}\b|^{name}\s*[:=]", text, re.M):
            return f"{ref}: {path} defines no {name}"
    return None


def problems(text: str) -> list[str]:
    declared = declared_outputs()
    found: list[str] = []
    rows = listing_rows(text)
    for study, want in PAPER_ITEMS.items():
        have = [r["id"] for r in rows.get(study, [])]
        if sorted(have) != sorted(want):
            missing, extra = set(want) - set(have), set(have) - set(want)
            found.append(f"{study}: rows missing {sorted(missing)}, unexpected {sorted(extra)}")
        for r in rows.get(study, []):
            status = next((s for s in STATUSES if r["status"].startswith(s)), None)
            refs = backticked(r["output"])
            outputs = [p for p in refs if p.startswith("results/")]
            if status is None:
                found.append(f"{study} {r['id']}: status {r['status'][:30]!r} is not one of {STATUSES}")
            elif status in ("reproduced", "partial") and not any(
                p.startswith(("results/", "tests/")) for p in refs
            ):
                found.append(f"{study} {r['id']}: {status} but names no output or test")
            elif status in ("missing", "n/a") and outputs:
                found.append(f"{study} {r['id']}: {status} but names {outputs}")
    # every results/ path on the page is declared; every repository reference exists
    for ref in backticked(text):
        if ref.startswith("results/"):
            if normalise(ref) not in declared:
                found.append(f"{ref}: not an output the workflow declares")
        elif re.match(r"(src|tests|workflow|config|docs|bench)/", ref) and not re.search(r"[<*]", ref):
            found += filter(None, [reference_problem(ref)])
    return found


def test_fidelity_doc_matches_the_workflow():
    assert problems(DOC.read_text()) == []


def test_a_renamed_output_or_dropped_row_is_caught():
    """Each check fails for the change it guards against (the page's own text, edited)."""
    text = DOC.read_text()
    assert "`results/laf/tables/table3-4-all-id.csv`" in text
    renamed = text.replace("`results/laf/tables/table3-4-all-id.csv`", "`results/laf/tables/rq1_id.csv`")
    assert any("rq1_id.csv: not an output" in p for p in problems(renamed))
    dropped = "\n".join(ln for ln in text.splitlines() if not ln.startswith("| Table 12 |"))
    assert any(p.startswith("pace: rows missing ['Table 12']") for p in problems(dropped))
    stale = text.replace("test_golden_fig4", "test_golden_fig_four")
    assert any("defines no test_golden_fig_four" in p for p in problems(stale))
    bare = text.replace("| Table A2 | min–max zoo accuracy per corrupted set | "
                        "`results/laf/tables/tableA2-all.csv`",
                        "| Table A2 | min–max zoo accuracy per corrupted set | none")
    assert bare != text and any("Table A2: reproduced but names no output" in p for p in problems(bare))


def test_declared_outputs_follow_the_rule_lists():
    """The declared set is read from the rules, not typed here: known names from each source."""
    d = declared_outputs()
    assert "results/laf/tables/table3-4-all-id.csv" in d  # laf/plan.py TABLES
    assert "results/pace/tables/table11-{zoo}.csv" in d  # pace/plan.py TABLES
    assert "results/pace/tables/table1-{zoo}.csv" in d  # pace/plan.py SUBJECTS_STEM
    assert "results/pace/tables/table2-5-all-cross_dataset.csv" in d  # PACE_CROSS_STEM
    assert "results/syp/figures/fig10-{zoo}.png" in d  # syp/plan.py FIGURE_NAMES
    assert "results/alphatrim/tables/table5-{exp}.csv" in d  # alphatrim/plan.py
    assert "results/shifts/figures/extra-{dataset}-examples.png" in d  # shifts.smk
    assert "results/metamorphic/annotation/rq1_sample.csv" in d  # plain path in metamorphic.smk
    assert "results/infer/{zoo}/accuracy.csv" in d  # Snakemake wildcard in inference.smk
    assert "results/pace/tables/table12-{zoo}.csv" in d  # pace/plan.py CSS_COV_STEM (rule pace_report)
