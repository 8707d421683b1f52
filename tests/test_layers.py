"""The import structure keeps to the layers of docs/architecture.md: no import runs up, no cycle
(tools/layers.py reads the imports), and the page shows the table and picture the tool draws."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _tool():
    spec = importlib.util.spec_from_file_location("layers_tool", REPO / "tools" / "layers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_import_runs_up_and_no_cycle():
    tool = _tool()
    graph = tool.module_imports()
    assert "labelfree.device" in graph and "workflow:Snakefile" in graph
    assert tool.upward(graph) == []
    assert tool.cycles(graph) == []


def test_the_tool_finds_an_upward_import_and_a_cycle():
    tool = _tool()
    graph = {"labelfree.zoo.local": {"labelfree.inference"},
             "labelfree.inference": {"labelfree.zoo.local"}}
    assert tool.upward(graph) == ["labelfree.zoo.local -> labelfree.inference: zoo imports inference"]
    assert tool.cycles(graph) == [["labelfree.inference", "labelfree.zoo.local"]]
    assert tool.upward({"labelfree.laf.core": {"labelfree.pace.core"}})  # studies stay apart


def test_architecture_page_shows_the_current_table_and_picture():
    tool = _tool()
    page = (REPO / "docs" / "architecture.md").read_text()
    redo = "docs/architecture.md is stale: paste `python tools/layers.py --table` / `--mermaid`"
    assert tool.table() in page, redo
    assert tool.mermaid(tool.module_imports()) in page, redo
