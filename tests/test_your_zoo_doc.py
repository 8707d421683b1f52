"""docs/your-zoo.md works as written (issue 14 item 7): every ```bash block, in order, in an
empty folder, with the checkout as $LABELFREE and the venv's commands on PATH; and it says what it
uses before it uses it (issue 33 item 8)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "your-zoo.md"


def blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", PAGE.read_text(), re.S)


def test_the_page_has_every_route():
    text = "\n".join(blocks())
    assert "labelfree rank" in text and "labelfree select" in text and "snakemake" in text
    assert "predictions: mypreds" in text and "sheet: myzoo.tsv" in text
    assert "labelfree answer mypreds" in text


def test_labelfree_is_defined_before_its_first_use():
    text = PAGE.read_text()
    first = text.index("$LABELFREE")
    assert "export LABELFREE=" in text[first:first + 200], text[first - 100:first + 200]
    assert text.index("export LABELFREE=") < text.index("```bash")


def test_relative_paths_are_explained_once():
    """Once, before the first config file; the sections point back to it."""
    text = PAGE.read_text()
    said = re.findall(r"relative (?:to|path)[^.]*(?:config file|sheet)", text)
    assert len(said) == 1, said
    assert text.index(said[0]) < text.index("cat > mypreds.yaml")


def test_the_headline_key_the_page_names_is_in_the_schema():
    """The page's `answer: {headline: {<zoo>: <set>}}` is a key of config answer:, whose
    default keeps the first test set at the head."""
    text = PAGE.read_text()
    m = re.search(r"`(answer: \{headline: \{[^`]*\}\})`", text)
    assert m, "the page names no headline key"
    cfg = yaml.safe_load(m.group(1))
    schema = yaml.safe_load((REPO / "config" / "schema" / "answer.yaml").read_text())
    prop = schema["properties"]["headline"]
    assert prop["default"] == {} and prop["additionalProperties"] == {"type": "string"}
    assert all(isinstance(v, str) for v in cfg["answer"]["headline"].values())
    assert "--headline" in text


@pytest.mark.slow

def test_commands_run_as_written(tmp_path):
    env = {**os.environ, "LABELFREE": str(REPO),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    outputs, errors = [], []
    for i, block in enumerate(blocks()):
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"block {i + 1} failed:\n{block}\n{proc.stderr[-3000:]}"
        outputs.append(proc.stdout)
        errors.append(proc.stderr)
    ranked = outputs[1]
    # LaF puts the most accurate of the made-up models (large, 90 %) first
    first_model_line = next(line for line in ranked.splitlines() if "large" in line
                            or "medium" in line or "small" in line)
    assert "large" in first_model_line, ranked
    assert len((tmp_path / "picks.csv").read_text().splitlines()) == 41  # header + 40 picks
    assert "PACE picked 40 of 500 inputs on the zoo's mean probabilities" in errors[1], errors[1]
    # the prediction zoo: the same three models through the workflow, labelled `id`
    preds = next(out for out in outputs if out.startswith("# Answer for zoo `mypreds`"))
    assert all(f"`{m}`" in preds for m in ("small", "medium", "large"))
    table = (tmp_path / "results/answer/mypreds/answer.csv").read_text().splitlines()
    true_large = float(next(r for r in table if ",large," in r).split(",")[-2])
    # by hand: the arrays the first block wrote, argmax against its labels
    want = (np.load(tmp_path / "preds/large.npy").argmax(1) == np.load(tmp_path / "labels.npy"))
    assert true_large == pytest.approx(want.mean(), abs=1e-4)
    assert (tmp_path / "results/laf/tables/table3-4-all-id.csv").is_file()  # LaF ran on it
    # `labelfree answer` on the folder: the workflow's table, byte for byte (the block's cmp)
    assert "same answer" in outputs[4], outputs[4]
    answer = (tmp_path / "results/answer/myzoo/answer.md").read_text()
    assert "`mlp16`" in answer and "`mlp64`" in answer and "label these 30 inputs" in answer
    assert outputs[-1].startswith("# Answer for zoo `myzoo`")
