"""Experiment blocks and workflow steps of the alphatrim study (spec sections 3-5)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from labelfree.alphatrim import report, run
from labelfree.alphatrim.plan import FIGURES, TABLES, experiment_outputs
from labelfree.alphatrim.report import write_report
from labelfree.alphatrim.run import analyse_experiment, train_experiment
from labelfree.outputs import output_name

STUDY = {
    "seed": 7, "eps_a": 0.01, "bootstrap_B": 5, "alpha_grid": [0.0, 0.05, 0.1, 0.2, 0.4],
    "alpha_censor": 0.5, "clip": 15.0, "clip_mode": "clip", "reference_mode": "pooled_resample",
    "reference_fraction": 0.5, "ece_bins": 10, "representative_cut": 0.05,
    "fig5_delta_n": "half", "top_band": 1.0, "threads": 1,
}
DATA = {"source": "make_classification", "n_samples": 900, "n_train": 300, "n_features": 8,
        "n_informative": 4, "n_redundant": 2, "class_sep": 0.8, "flip_y": 0.03,
        "positive": [], "negative": [], "binary": "none"}
MODEL = {"arch": "mlp", "hidden": [8], "epochs": 2, "batch_size": 32, "lr": 0.05,
         "momentum": 0.9, "conv": [4], "device": "cpu"}
SOURCES = {"kind": "sources", "data": DATA, "model": MODEL, "curves": True,
           "regimes": {"S_init": 4, "S_batch": 4, "S_all": 6},
           "ensembles": {"models": 8, "sizes": [1, 2, 3], "reps": 3}}


def test_regime_seeds_follow_spec_3_1():
    init, batch = run.regime_seeds("S_init", 5, 1, "e")
    assert len(set(init)) == 5 and len(set(batch)) == 1
    init, batch = run.regime_seeds("S_batch", 5, 1, "e")
    assert len(set(init)) == 1 and len(set(batch)) == 5
    init, batch = run.regime_seeds("S_all", 5, 1, "e")
    assert len(set(init)) == 5 and len(set(batch)) == 5 and not set(init) & set(batch)
    assert run.regime_seeds("S_all", 5, 1, "e") == (init, batch)
    with pytest.raises(ValueError, match="regime"):
        run.regime_seeds("S_none", 3, 1, "e")


def test_outputs_and_validation():
    out = experiment_outputs(SOURCES)
    assert set(out["tables"]) == set(TABLES) - {"table5"}
    assert set(out["figures"]) == {k for k in FIGURES if int(k[3:]) <= 12}
    bad = copy.deepcopy(SOURCES)
    bad["regimes"]["S_init"] = 2
    with pytest.raises(ValueError, match="at least 3"):
        experiment_outputs(bad)
    transfer = {**copy.deepcopy(SOURCES), "kind": "transfer"}
    with pytest.raises(ValueError, match="S_all > 0 only"):
        experiment_outputs(transfer)


def test_tables_known_answers():
    """Table I/II/III/IV columns from a hand-made per-model / ensembles frame (spec 4)."""
    pm = pd.DataFrame({
        "regime": ["S_all"] * 4, "model": ["a", "b", "c", "d"],
        "alpha_hat": [0.0, 0.04, 0.2, 0.01], "accuracy": [90.0, 91.0, 91.0, 89.0],
        "ece": [0.01, 0.02, 0.03, 0.04], "churn_vs_ensemble": [5, 6, 7, 8],
        "avg_pairwise_churn": [1.0, 2.0, 3.0, 4.0], "ks_reject_rate_at_0": [0.0, 0.5, 1.0, 0.5],
    })
    t2 = report.table2(pm, {"S_all": 92.0}, 0.05).iloc[0]
    assert t2["accuracy range"] == "[89.000, 91.000]"
    assert t2["accuracy range of runs with alpha_hat <= 0.05"] == "[89.000, 91.000]"
    assert t2["share alpha_hat <= 0.05"] == 0.75
    churn = np.array([[0, 3, 9, 4], [3, 0, 8, 5], [9, 8, 0, 6], [4, 5, 6, 0]])
    pairs = report.pair_table(pm, churn)
    t3 = report.table3({"S_all": pairs}, 0.05).iloc[0]
    assert t3["range of pairwise churn"] == "[3, 9]"
    assert t3["range among pairs with both alpha_hat <= 0.05"] == "[3, 5]"
    assert bool(t3["strict sub-range"])
    t4 = report.table_top_band(pm, 1.0)
    assert t4["model"].tolist() == ["a", "b", "c"]  # within 1 point of 91, sorted by alpha-hat
    ens = pd.DataFrame({"M_ens": [1, 1, 3, 3], "rep": [0, 1, 0, 1],
                        "alpha_hat": [0.1, 0.0, 0.0, 0.01], "accuracy": [90, 91, 92, 92],
                        "churn_vs_full_ensemble": [10, 12, 2, 4], "ece": [0.1, 0.2, 0.1, 0.1],
                        "linf_to_reference": [0.2, 0.05, 0.02, 0.03]})
    t1 = report.table1(ens, 0.05, 0.1)
    assert t1["% alpha_hat <= 0.05"].tolist() == [50.0, 100.0]
    assert t1["% L_inf <= delta_a"].tolist() == [50.0, 100.0]
    assert t1["churn w.r.t. ensemble mean ± std"].tolist()[0] == "11.00 ± 1.41"


@pytest.mark.parametrize("kind", ["sources", "transfer"])
def test_pipeline_writes_every_declared_output(tmp_path, kind):
    cfg = copy.deepcopy(SOURCES)
    if kind == "transfer":
        cfg.update(kind="transfer", regimes={"S_init": 0, "S_batch": 0, "S_all": 8},
                   ensembles={"models": 0, "sizes": [2, 3], "reps": 3})
    raw = {k: tmp_path / k for k in ("zoo.npz", "runs.csv", "pm.csv", "ens.csv", "raw.npz",
                                      "sum.json")}
    train_experiment("t", cfg, 3, {}, raw["zoo.npz"], raw["runs.csv"])
    runs = pd.read_csv(raw["runs.csv"])
    if kind == "sources":  # spec 7.16 through the workflow step
        assert runs[runs.zoo == "S_batch"]["init_hash"].nunique() == 1
        assert runs[runs.zoo == "S_init"]["order_hash"].nunique() == 1
    analyse_experiment("t", cfg, STUDY, raw["zoo.npz"], raw["pm.csv"], raw["ens.csv"],
                       raw["raw.npz"], raw["sum.json"])
    write_report("t", cfg, STUDY, raw["zoo.npz"], raw["pm.csv"], raw["ens.csv"], raw["raw.npz"],
                 raw["sum.json"], tmp_path / "tables", tmp_path / "figures")
    want = experiment_outputs(cfg)
    for key in want["tables"]:  # <id>-<experiment>[-<detail>] (docs/outputs.md)
        assert (tmp_path / "tables" / f"{output_name(key, 't')}.csv").exists()
        assert (tmp_path / "tables" / f"{output_name(key, 't')}.md").exists()
    for key in want["figures"]:
        assert (tmp_path / "figures" / f"{output_name(key, 't')}.png").exists()
        assert (tmp_path / "figures" / f"{output_name(key, 't')}.pdf").exists()
    # same seeds, same tables (ARCHITECTURE.md: reruns give identical tables)
    again = tmp_path / "again.csv"
    analyse_experiment("t", cfg, STUDY, raw["zoo.npz"], again, raw["ens.csv"], raw["raw.npz"],
                       raw["sum.json"])
    assert again.read_bytes() == raw["pm.csv"].read_bytes()


def test_collect_spine_zoos_reads_two_class_logits(tmp_path):
    """Source `zoos`: spine-trained runs enter the study through their inference artefacts."""
    from labelfree.alphatrim.run import collect_spine_zoos
    from labelfree.store import load_npz, write_image_set, write_inference

    gen = np.random.default_rng(0)
    y = gen.integers(0, 2, size=40)
    write_image_set(tmp_path / "id.npz", np.zeros((40, 4, 4, 1), np.uint8), y)
    paths = []
    for i in range(3):
        paths.append(tmp_path / f"m{i}.npz")
        write_inference(paths[-1], {"id": {"logits": gen.normal(size=(40, 2))}})
    cfg = {**copy.deepcopy(SOURCES), "data": {**DATA, "source": "zoos", "testset": "id",
                                              "zoos": {"S_all": "spine_zoo"}}}
    assert experiment_outputs(cfg)["tables"] == ["table2", "table3", "table4", "extra-checks"]
    sheets = {"S_all": [{"model": f"m{i}", "seed": i, "batch_seed": 0} for i in range(3)]}
    collect_spine_zoos("s", cfg, {"labels": str(tmp_path / "id.npz"),
                                  "logits_S_all": [str(p) for p in paths]},
                       sheets, tmp_path / "zoo.npz", tmp_path / "runs.csv")
    z = load_npz(tmp_path / "zoo.npz")
    assert z["logits_S_all"].shape == (3, 40, 2)
    np.testing.assert_array_equal(z["y_test"], y)
    assert pd.read_csv(tmp_path / "runs.csv")["model"].tolist() == ["m0", "m1", "m2"]
    # issue 16: own zoos must be binary - the message names the zoo and the number of classes
    write_inference(paths[0], {"id": {"logits": gen.normal(size=(40, 3))}})
    with pytest.raises(ValueError, match=r"zoo 'spine_zoo' \(data.zoos.S_all\) has 3-class"):
        collect_spine_zoos("s", cfg, {"labels": str(tmp_path / "id.npz"),
                                      "logits_S_all": [str(p) for p in paths]},
                           sheets, tmp_path / "zoo.npz", tmp_path / "runs.csv")
    write_image_set(tmp_path / "id10.npz", np.zeros((40, 4, 4, 1), np.uint8), np.arange(40) % 10)
    with pytest.raises(ValueError, match=r"has 10 classes.*\['spine_zoo'\].*binary: even_odd"):
        collect_spine_zoos("s", cfg, {"labels": str(tmp_path / "id10.npz"),
                                      "logits_S_all": [str(p) for p in paths]},
                           sheets, tmp_path / "zoo.npz", tmp_path / "runs.csv")


def test_checks_table_hand_case():
    """Spec 6 conclusions (i)-(iii) on hand-made per-model and ensemble rows."""
    from labelfree.alphatrim.report import checks_table

    pm = pd.DataFrame({"regime": "S_all", "alpha_hat": [0.0, 0.01, 0.02, 0.3],
                       "accuracy": [92.0, 91.0, 93.0, 90.0]})
    ens = pd.DataFrame({"M_ens": [1, 1, 3, 3, 10, 10],
                        "alpha_hat": [0.04, 0.06, 0.02, 0.02, 0.0, 0.03],
                        "accuracy": [90.0, 92.0, 91.0, 91.5, 91.4, 91.4],
                        "churn_vs_full_ensemble": [20, 18, 10, 9, 2, 1],
                        "linf_to_reference": [0.06, 0.07, 0.05, 0.04, 0.03, 0.03]})
    ck = checks_table(pm, ens, 0.05).set_index("check")
    assert ck.loc["(i) median alpha-hat of the candidates", "value"] == pytest.approx(0.015)
    # accuracies 90..93: 75th percentile 92.25; best low-alpha run 93 -> +0.75
    assert ck.loc["(ii) best accuracy among alpha-hat <= cut minus the zoo's 75th percentile",
                  "value"] == pytest.approx(0.75)
    assert ck.loc["(ii) worst run has alpha-hat > cut (1 = yes)", "value"] == 1.0
    # mean alpha-hat per size 0.05, 0.02, 0.015 -> never rises; accuracy std rises 0.354 -> 0
    # no: std 1.414, 0.354, 0 -> falls; L_inf 0.065, 0.045, 0.03 falls
    rise = ck.loc["(iii) largest increase of the mean alpha-hat between consecutive M_ens"]
    assert rise["value"] == pytest.approx(-0.005) and rise["holds"]
    bad = ens.assign(linf_to_reference=[0.01, 0.01, 0.05, 0.05, 0.03, 0.03])
    row = checks_table(pm, bad, 0.05).set_index("check").loc[
        "(iii) largest increase of the mean L_inf to the reference between consecutive M_ens"]
    assert row["value"] == pytest.approx(0.04) and not row["holds"]
