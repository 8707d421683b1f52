"""Issue 15 (LaF): the paper's four datasets that cannot be trained here, iWildCam, Amazon, Java250
and C++1000, run as prediction zoos (config/paper/laf-{iwildcam,amazon,java250,cpp1000}.yaml).

Each config, pointed at a tiny generated folder of the paper's shape (20 models, the dataset's K,
its test sets; spec 5.1 Table 1 and 5.3 Table 2; few rows), validates and dry-runs to the LaF
tables with one analysis job per test set; one of them runs, and its OOD set fills the
natural-shift rows (paper Tables 3, 4 and 8, Fig. 7) of table3-4-all-natural.csv.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from tests.workflow.runner import REPO, run_snakemake

pytestmark = pytest.mark.slow

#: dataset -> (classes K, test sets): spec 5.1 Table 1 (C++1000 has no OOD set) and 5.3 Table 2
#: (20 models each).
PAPER = {
    "iwildcam": (182, ["id", "natural-ood"]),
    "amazon": (5, ["id", "natural-ood"]),
    "java250": (250, ["id", "natural-ood"]),
    "cpp1000": (1000, ["id"]),
}
MODELS, ROWS = 20, 60


def make_folder(root: Path, K: int, sets: list[str]) -> None:
    """20 models x ROWS inputs x K logits per test set, labelled; model j right with probability
    0.35 + 0.03 j on `id`, 0.1 less on the OOD set (accuracies spread, so that rankings exist)."""
    gen = np.random.default_rng(K)
    for t_i, t in enumerate(sets):
        y = gen.integers(0, K, ROWS)
        (root / "labels").mkdir(parents=True, exist_ok=True)
        np.save(root / "labels" / f"{t}.npy", y)
        for j in range(MODELS):
            right = gen.random(ROWS) < 0.35 + 0.03 * j - 0.1 * t_i
            pred = np.where(right, y, (y + gen.integers(1, K, ROWS)) % K)
            z = gen.normal(size=(ROWS, K)).astype(np.float32)
            z[np.arange(ROWS), pred] += 4.0
            d = root / "predictions" / f"model{j:02d}"
            d.mkdir(parents=True, exist_ok=True)
            np.save(d / f"{t}.npy", z)


def pointed_config(name: str, folder: Path, out: Path, **laf) -> Path:
    """The paper config with its zoo's folder replaced by ``folder`` (and ``laf`` keys updated)."""
    cfg = yaml.safe_load((REPO / "config" / "paper" / f"laf-{name}.yaml").read_text())
    (zoo,) = cfg["zoos"]
    cfg["zoos"][zoo]["predictions"] = str(folder)
    cfg["laf"].update(laf)
    out.write_text(yaml.safe_dump(cfg))
    return out


@pytest.mark.parametrize("name", list(PAPER))
def test_paper_prediction_config_dry_runs(name, tmp_path):
    K, sets = PAPER[name]
    cfg = yaml.safe_load((REPO / "config" / "paper" / f"laf-{name}.yaml").read_text())
    zoo = f"laf_{name}"
    assert cfg["zoos"][zoo]["testsets"] == sets
    assert cfg["laf"]["zoos"] == [zoo] and cfg["laf"]["jobs"] == "testset"
    make_folder(tmp_path / "preds", K, sets)
    config = pointed_config(name, tmp_path / "preds", tmp_path / "cfg.yaml")
    proc = run_snakemake(tmp_path / "run", "-n", "laf_tables", configfile=config, timeout=600)
    counts = dict(re.findall(r"^(\w+)\s+(\d+)$", proc.stdout, re.M))
    assert counts.get("laf_part") == str(len(sets)), proc.stdout[-2000:]
    assert counts.get("laf_tables") == "1"  # merges the parts and writes the tables
    for t in sets:
        assert f"results/laf/parts/{zoo}/{t}.json.gz" in proc.stdout


def test_wrong_folder_shape_is_refused(tmp_path):
    """A folder without the config's OOD set stops the run at parse time, naming it."""
    make_folder(tmp_path / "preds", 5, ["id"])
    config = pointed_config("amazon", tmp_path / "preds", tmp_path / "cfg.yaml")
    proc = run_snakemake(tmp_path / "run", "-n", "laf_tables", configfile=config, check=False)
    assert proc.returncode != 0
    assert "natural-ood" in proc.stdout + proc.stderr


def test_ood_set_fills_the_natural_shift_rows(tmp_path):
    """The Amazon config (K = 5: the cheapest) run to the tables at a tiny protocol: its OOD set
    is a natural-shift row of table3-4-all-natural.csv and table8-all.csv, its `id` set an ID row."""
    K, sets = PAPER["amazon"]
    make_folder(tmp_path / "preds", K, sets)
    config = pointed_config(
        "amazon", tmp_path / "preds", tmp_path / "cfg.yaml",
        budgets={"step": 20}, repetitions=2, large_budgets=[], ces={"repetitions": 1},
        rq4={"ratios": [1.0], "draws": 1},
    )
    work = tmp_path / "run"
    run_snakemake(work, "laf_tables", configfile=config, timeout=900)
    tables = work / "results" / "laf" / "tables"
    natural = pd.read_csv(tables / "table3-4-all-natural.csv")
    row = natural[(natural["zoo"] == "laf_amazon") & (natural["testset"] == "natural-ood")]
    assert len(row) == 1, natural
    assert np.isfinite(row.filter(like="LaF").to_numpy(dtype=float)).any()
    assert "natural-ood" in set(pd.read_csv(tables / "table8-all.csv")["testset"])
    rq1 = pd.read_csv(tables / "table3-4-all-id.csv")
    assert list(rq1.loc[rq1["source"] == "ours", "zoo"]) == ["laf_amazon"]
