"""Issue 14 item 3: the answer comes first in the HTML report. Snakemake's report menu lists
categories sorted by name (snakemake/report/html_reporter/template/components/menu.js,
`Object.keys(categories).sort(...)`), so the answer's category must sort before every other."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def categories() -> dict[str, set[str]]:
    """Every literal `category="..."` of the rule files, by file."""
    out: dict[str, set[str]] = {}
    for f in sorted((REPO / "workflow" / "rules").rglob("*.smk")):
        for c in re.findall(r'category="([^"{}]+)"', f.read_text()):
            out.setdefault(c, set()).add(f.name)
    return out


def test_the_answer_category_sorts_first():
    cats = categories()
    answer = [c for c, files in cats.items() if "answer.smk" in files]
    assert answer == ["0 answers"], answer
    assert sorted(cats)[0] == "0 answers", sorted(cats)[:3]
    text = (REPO / "workflow" / "report" / "workflow.rst").read_text()
    assert "``0 answers`` comes first" in text
