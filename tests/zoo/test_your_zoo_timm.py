"""docs/your-zoo.md section 4 works as written: its ```sh blocks, in order, in an empty folder,
with the checkout as $LABELFREE and the venv's commands on PATH (three timm models with random
weights saved and loaded from local files, an imagefolder set of generated JPEGs, through to
results/answer/<zoo>/answer.md). Sections 1-3 use ```bash blocks, which
tests/test_your_zoo_doc.py runs without timm."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("timm")
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", (REPO / "docs" / "your-zoo.md").read_text(), re.S)


def test_timm_route_runs_as_written(tmp_path):
    assert len(blocks()) == 2 and "source: imagefolder" in blocks()[1]
    env = {**os.environ, "LABELFREE": str(REPO),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    outputs = []
    for i, block in enumerate(blocks()):
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"block {i + 1} failed:\n{block}\n{proc.stderr[-3000:]}"
        outputs.append(proc.stdout)
    answer = outputs[-1]
    assert answer.startswith("# Answer for zoo `timmzoo`")
    assert all(f"`{m}`" in answer for m in ("resnet", "vit", "effnet"))
    assert "test set `id` (12 inputs)" in answer and "label these 4 inputs" in answer
    # the models ran with their own preprocessing, on the 12 photos with their mapped labels
    meta = json.loads((tmp_path / "results/zoo/timmzoo/vit/meta.json").read_text())
    assert meta["preprocessing"] == ("pil:mode=center,interp=bicubic,resize=168,crop=160,"
                                     "mean=0.5/0.5/0.5,std=0.5/0.5/0.5")
    with np.load(tmp_path / "results/testsets/photos/id.npz") as z:
        assert z["x"].shape == (12, 168, 168, 3) and sorted(z["y"].tolist()) == [0] * 6 + [1] * 6
    acc = (tmp_path / "results/infer/timmzoo/accuracy.csv").read_text().splitlines()
    assert len(acc) == 4 and acc[0].startswith("model,")
