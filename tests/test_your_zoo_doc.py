"""docs/your-zoo.md works as written (issue 14 item 7): every ```bash block, in order, in an
empty folder, with the checkout as $LABELFREE and the venv's commands on PATH."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]


def blocks() -> list[str]:
    return re.findall(r"```bash\n(.*?)```", (REPO / "docs" / "your-zoo.md").read_text(), re.S)


def test_the_page_has_every_route():
    text = "\n".join(blocks())
    assert "labelfree rank" in text and "labelfree select" in text and "snakemake" in text
    assert "predictions: mypreds" in text and "sheet: myzoo.tsv" in text


def test_commands_run_as_written(tmp_path):
    env = {**os.environ, "LABELFREE": str(REPO),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    outputs = []
    for i, block in enumerate(blocks()):
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"block {i + 1} failed:\n{block}\n{proc.stderr[-3000:]}"
        outputs.append(proc.stdout)
    ranked = outputs[1]
    # LaF puts the most accurate of the made-up models (large, 90 %) first
    first_model_line = next(line for line in ranked.splitlines() if "large" in line
                            or "medium" in line or "small" in line)
    assert "large" in first_model_line, ranked
    assert len((tmp_path / "picks.csv").read_text().splitlines()) == 41  # header + 40 picks
    # the prediction zoo: the same three models through the workflow, labelled `id`
    preds = next(out for out in outputs if out.startswith("# Answer for zoo `mypreds`"))
    assert all(f"`{m}`" in preds for m in ("small", "medium", "large"))
    table = (tmp_path / "results/answer/mypreds/answer.csv").read_text().splitlines()
    true_large = float(next(r for r in table if ",large," in r).split(",")[-2])
    # by hand: the arrays the first block wrote, argmax against its labels
    want = (np.load(tmp_path / "preds/large.npy").argmax(1) == np.load(tmp_path / "labels.npy"))
    assert true_large == pytest.approx(want.mean(), abs=1e-4)
    assert (tmp_path / "results/laf/tables/table3-4-all-id.csv").is_file()  # LaF ran on it
    answer = (tmp_path / "results/answer/myzoo/answer.md").read_text()
    assert "`mlp16`" in answer and "`mlp64`" in answer and "label these 30 inputs" in answer
    assert outputs[-1].startswith("# Answer for zoo `myzoo`")
