"""Issue 14 item 3: the answer comes first in the HTML report. Snakemake's report menu lists
categories sorted by name (snakemake/report/html_reporter/template/components/menu.js,
`Object.keys(categories).sort(...)`), so the answer's category must sort before every other."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from labelfree.answer import SUMMARY_LINE, build, render

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
    assert "``0 answers``, which comes first" in text


def test_the_report_opens_on_each_zoos_answer_line():
    """The workflow description (the report's landing page) starts with an include of each
    answer.md's summary line, the line :func:`labelfree.answer.render` writes it on."""
    text = (REPO / "workflow" / "report" / "workflow.rst").read_text()
    assert text.startswith("Answers\n=======\n")
    lines = [ln.strip() for ln in text[: text.index("About this run")].splitlines()]
    assert ".. include:: {{ res.path }}" in lines
    assert f":start-line: {SUMMARY_LINE}" in lines and f":end-line: {SUMMARY_LINE + 1}" in lines
    assert '{% if cat.name == "0 answers" %}' in lines and '{% if res.path.name == "answer.md" %}' in lines
    lg = np.random.default_rng(0).normal(size=(2, 60, 3))
    y = lg[1].argmax(axis=1)
    table, plan, first, top = build("z", ["a", "b"], {"id": lg}, {"id": y}, "id", 5, 0, n_boot=10)
    line = render("z", table, plan, first, top).splitlines()[SUMMARY_LINE]
    assert line.startswith("**In short** (zoo `z`, test set `id`): LaF ranks `b` first of 2")
