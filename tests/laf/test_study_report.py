"""The per-zoo study and every table/figure on small synthetic inference artefacts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from labelfree import store
from labelfree.laf.experiment import StudyParams
from labelfree.laf.report import write_all
from labelfree.laf.study import SetInputs, pick_clone, run_study

TESTSETS = {"id": 0.0, "gaussian_noise-1": 0.1, "gaussian_noise-5": 0.45, "natural-thick": 0.2}


def make_artefacts(root, zoo, accs, seed):
    """Synthetic inference files for a zoo: model j right with prob. acc_j - drop(test set)."""
    r = np.random.default_rng(0)
    m, K = 400, 10
    sets = []
    for t_i, (name, drop) in enumerate(TESTSETS.items()):
        y = np.random.default_rng(t_i).integers(0, K, m)
        lab = root / "testsets" / f"{name}.npz"
        if not lab.exists():
            store.write_image_set(lab, np.zeros((m, 2, 2, 1), np.uint8), y)
        paths = []
        for j, acc in enumerate(accs):
            rj = np.random.default_rng([seed, t_i, j])
            right = rj.random(m) < max(0.05, acc - drop)
            pred = np.where(right, y, (y + rj.integers(1, K, m)) % K)
            logits = r.normal(size=(m, K)).astype(np.float32)
            logits[np.arange(m), pred] += 2.5
            path = root / "infer" / zoo / name / f"m{j}.npz"
            store.write_inference(path, {name: {"logits": logits}})
            paths.append(str(path))
        sets.append(SetInputs(name, tuple(paths), str(lab)))
    return sets


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    root = tmp_path_factory.mktemp("laf")
    params = StudyParams(
        budget_max=60,
        budget_step=20,
        large_budgets=(150,),
        repetitions=4,
        ces_repetitions=1,
        rq4_ratios=(0.5, 1.0),
        rq4_draws=2,
    )
    tight = make_artefacts(root, "tight", np.linspace(0.8, 0.95, 8), 1)
    spread = make_artefacts(root, "spread", np.linspace(0.3, 0.95, 8), 2)
    models = [f"m{j}" for j in range(8)]
    run_study("tight", "d", models, tight, params, 0, root / "raw" / "tight")
    run_study("spread", "d", models, spread, params, 0, root / "raw" / "spread")
    j, acc = pick_clone(spread[0], 0.6)
    clone = {"source": spread, "index": j, "copies": 5, "base_models": 4, "name": f"m{j}"}
    run_study("clone", "d", models, tight, params, 0, root / "raw" / "clone", clone=clone)
    zoos = ["tight", "spread", "clone"]
    write_all(zoos, root / "raw", root / "tables", root / "figures")
    return root, acc


def test_pick_clone_nearest_accuracy(study):
    _, acc = study
    assert abs(acc - 0.6) < 0.1


def test_every_table_and_figure_written(study):
    root, _ = study
    for name in [
        "rq1_id",
        "rq1_id_jaccard",
        "rq2_corruptions_spearman",
        "rq2_corruptions_kendall",
        "rq2_corruptions_by_severity",
        "rq2_natural",
        "rq2_natural_jaccard",
        "rq3_ablation",
        "rq4_subsets",
        "rq4_quality_diversity",
        "appendix_a1_budgets",
        "appendix_a2_accuracy_range",
        "efficiency",
        "conclusions",
    ]:
        assert (root / "tables" / f"{name}.csv").stat().st_size > 0
        md = (root / "tables" / f"{name}.md").read_text()
        assert md.startswith("**")  # titled with the paper table it reproduces
    for name in ["rq1_spearman_budget", "rq2_natural_budget", "rq4_quality_diversity"]:
        assert (root / "figures" / f"{name}.png").exists()
        assert (root / "figures" / f"{name}.pdf").exists()


def test_tables_content(study):
    root, _ = study
    rq1 = pd.read_csv(root / "tables" / "rq1_id.csv")
    ours = rq1[rq1.source == "ours"].set_index("zoo")
    assert set(ours.index) == {"tight", "spread", "clone"}
    assert ours.loc["spread", "spearman LaF"] > 0.8  # spread zoo: easy to rank
    assert (rq1.source == "paper").sum() == 7
    clone_models = pd.read_csv(root / "raw" / "clone" / "models.csv")
    assert clone_models.model.str.contains("-copy").sum() == 5 * len(TESTSETS)
    t6 = pd.read_csv(root / "tables" / "rq2_corruptions_spearman.csv")
    assert {"gaussian_noise", "average"} <= set(t6.corruption)
    concl = pd.read_csv(root / "tables" / "conclusions.csv")
    assert {"1", "2", "3", "4", "5"} <= set(concl.conclusion.astype(str))
    assert set(concl.holds) <= {"yes", "no"}


def test_missing_raw_file_is_named(tmp_path):
    with pytest.raises(store.ArtefactError, match="metrics.csv.gz"):
        write_all(["nope"], tmp_path / "raw", tmp_path / "t", tmp_path / "f")
