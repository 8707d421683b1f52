"""config/README.md carries the parameter table generated from the schema; keep it current."""

from __future__ import annotations

from labelfree.config import render_schema_markdown, schema_rows

MARKER = "<!-- generated: python -m labelfree.config -->"


def test_config_readme_table_is_current(repo_root):
    text = (repo_root / "config" / "README.md").read_text()
    assert MARKER in text, "config/README.md lost its generated-table marker"
    table = text.split(MARKER, 1)[1].lstrip("\n")
    expected = render_schema_markdown(repo_root / "config" / "schema.yaml")
    assert table == expected, (
        "config/README.md is stale: regenerate the table with "
        "`python -m labelfree.config` (see config/README.md)"
    )


def test_every_schema_key_is_documented(repo_root):
    undocumented = [
        key for key, _t, _d, desc in schema_rows(repo_root / "config" / "schema.yaml")
        if not desc and not key.endswith("<name>")
    ]
    assert not undocumented, f"schema keys without a description: {undocumented}"
