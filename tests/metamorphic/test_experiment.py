"""The study's pipeline on synthetic oracle models (no training): test sets -> verdicts -> tables.

An *object model* predicts the label when the glyph is visible and is unsure otherwise; a
*background model* predicts the background family. Their verdicts are known in advance
(metamorphic.md 2.4-2.5), so the pipeline and checks A, B, D, F of spec 7.4 can be asserted.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest

from labelfree.config import validate_config
from labelfree.metamorphic import plan
from labelfree.metamorphic import report as tb
from labelfree.metamorphic import run as ex
from labelfree.store import read_image_set, write_inference


def _study(repo_root):
    cfg = {
        "metamorphic": {
            "testsets": {
                "rho09": {"options": {"n": 60, "rho": 0.9, "defects": True, "counterfactuals": 3}},
                "rq2": {"group": "metamorphic_c15", "coloursets": ["c15"],
                        "options": {"n": 40, "rho": 0.9, "defects": True}},
            },
            "zoos": {"z_unb": {"role": "unbiased", "main": "rho09"},
                     "z_bia": {"role": "biased", "main": "rho09"}},
            "reference": {"width": 16, "seed": 0},
            "epochs": {"width": 16, "seed": 0},
            "rq1": {"base": "rho09"}, "rq2": {"base": "rq2", "colourset": "c15"},
            "rq4": {"base": "rho09"},
        }
    }
    full = validate_config(cfg, repo_root / "config" / "schema.yaml")
    return full["metamorphic"]


def _logits(kind: str, x_set, base_set, n_col: int | None, cf: bool) -> np.ndarray:
    """Outputs of a synthetic model on a follow-up or counterfactual set."""
    n = len(base_set.y)
    y = base_set.y
    fam = base_set.extras["bg_family"]
    src = x_set.extras["metamorphic_src"]
    out = np.zeros((len(src), 10))
    if cf:
        cf_family = x_set.extras["cf_family"]
        lab = y[src] if kind == "object" else cf_family
        out[np.arange(len(src)), lab] = 5.0
        return out
    variant = x_set.extras["metamorphic_variant"]
    obj_filled = (variant >= 1) & (variant <= n_col)
    bg_filled = variant > n_col
    if kind == "object":
        lab = y[src]
        conf = np.where(obj_filled, 0.5, 5.0)  # unsure (lower certainty) without the object
    else:
        colour = (variant - 1) % n_col
        lab = np.where(bg_filled, (y[src] + 1 + colour) % 10, fam[src])  # label moves off y
        conf = np.full(len(src), 5.0)
        conf[obj_filled] = 6.0  # more certain without the object: MR-1 violated
    out[np.arange(len(src)), lab] = conf
    assert len(out) % n == 0
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory, repo_root):
    study = _study(repo_root)
    tmp = tmp_path_factory.mktemp("study")
    written = ex.write_testsets("d", study["testsets"], study, 0, tmp / "testsets")
    assert len(written) == 5  # 2 bases, rho09 c3 + cf, rq2 c15
    summaries, images = [], []
    for zoo, kind in (("z_unb", "object"), ("z_bia", "background")):
        sheet = pd.DataFrame([{"model": f"{zoo}_m", "width": 16, "epochs": 3, "seed": 0}])
        infer = {}
        for base, bcfg in study["testsets"].items():
            base_set = read_image_set(tmp / "testsets" / f"metamorphic-{base}.npz")
            for t in plan.base_testsets(base, bcfg):
                xs = read_image_set(tmp / "testsets" / f"{t}.npz")
                n_col = None if t.endswith("-cf") else (15 if t.endswith("c15") else 3)
                logits = _logits(kind, xs, base_set, n_col, t.endswith("-cf"))
                p = tmp / "infer" / zoo / t / f"{zoo}_m.npz"
                write_inference(p, {t: {"logits": logits.astype(np.float32)}})
                infer[(t, f"{zoo}_m")] = str(p)
        paths = {b: str(tmp / "testsets" / f"metamorphic-{b}.npz") for b in study["testsets"]}
        s, im = ex.zoo_verdicts(zoo, study["zoos"][zoo]["role"], sheet, study["testsets"], paths, infer, study)
        summaries.append(s)
        images.append(im)
    summary = pd.concat(summaries, ignore_index=True)
    images = pd.concat(images, ignore_index=True)
    gallery = {"base": str(tmp / "testsets" / "metamorphic-rho09.npz"),
               "followups": str(tmp / "testsets" / "metamorphic-rho09-c3.npz")}
    res = tb.write_report(summary, images, study, tmp / "out", gallery)
    return study, tmp, summary, images, res


def test_known_verdicts(run):
    _, _, summary, _, _ = run
    obj = summary[(summary["zoo"] == "z_unb") & (summary["colourset"] == "c3")].iloc[0]
    bg = summary[(summary["zoo"] == "z_bia") & (summary["colourset"] == "c3")].iloc[0]
    assert obj["acc"] == 1.0 and obj["MR1_ratio"] == 0.0 and obj["MR2_ratio"] == 0.0
    assert bg["MR2_ratio"] == 1.0 and bg["MR1_ratio"] == 1.0
    # background model: correct only where the family matches the label (rho 0.9)
    assert 0.8 < bg["acc"] < 1.0
    # counterfactual ground truth: the background model is background-driven everywhere
    assert bg["cf_recall"] == 1.0 and obj["cf_n_bg_driven"] == 0


def test_oracle_precision_sees_the_defects(run):
    _, _, summary, images, _ = run
    bg = summary[(summary["zoo"] == "z_bia") & (summary["colourset"] == "c3")].iloc[0]
    im = images[(images["zoo"] == "z_bia") & (images["colourset"] == "c3")]
    flagged = im[im["mr1"] & im["correct"]]
    # every invalid MR-1 flag is a defect scene; clean scenes give valid follow-ups
    assert (flagged.loc[~flagged["mr1_valid"], "defect"] > 0).all()
    assert (flagged.loc[flagged["defect"] == 0, "mr1_valid"]).all()
    assert bg["MR2_precision"] > bg["MR1_precision"]


def test_report_outputs_and_checks(run):
    study, tmp, _, _, res = run
    out = tmp / "out"
    for t in map(tb.out_name, plan.TABLES):
        assert (out / "tables" / f"{t}.csv").exists() and (out / "tables" / f"{t}.md").exists(), t
    for f in map(tb.out_name, plan.FIGURES):
        assert (out / "figures" / f"{f}.png").exists() and (out / "figures" / f"{f}.pdf").exists(), f
    checks = pd.read_csv(out / "tables" / "extra-all-checks.csv")
    hard = checks[checks["hard"]]
    assert set(hard["check"]) == set("ABCDEF")
    by = {c: bool(g["holds"].all()) for c, g in hard.groupby("check")}
    assert by["A"]
    assert not by["B"]  # the background model has MR-1 = MR-2 = 1: B must fail
    assert by["F"]
    t4 = pd.read_csv(out / "tables" / "table4-all.csv")
    assert set(t4["MR"]) == {"MR-1", "MR-2"} and "pooled" in set(t4["model"])


def test_config_errors_name_the_key(repo_root):
    study = _study(repo_root)
    bad = copy.deepcopy(study)
    bad["zoos"]["z_unb"]["main"] = "nope"
    zoos = {"z_unb": {"dataset": "d"}, "z_bia": {"dataset": "d"}}
    with pytest.raises(plan.ExperimentError, match="main"):
        plan.check_config(bad, zoos, {"d": {"source": "digitscenes"}})
    with pytest.raises(plan.ExperimentError, match="digitscenes"):
        plan.check_config(study, zoos, {"d": {"source": "digits"}})


def test_epoch_rows_are_checkpoints_of_one_run():
    """RQ6 (Fig. 9) reads rows that differ only in `epochs` as per-epoch checkpoints of one run:
    training for e epochs equals the first e epochs of a longer run (same init seed, same
    per-epoch batch order, constant-LR Adam), bit for bit on the CPU."""
    import torch

    from labelfree.data import digitscenes as ds
    from labelfree.zoo.io import state_dict_hash
    from labelfree.zoo.train import TrainSpec, train_model

    a = ds.generate(64, 0, ds.check_options({}), training=True)
    seen = {}

    def keep(epoch, model, stats):
        seen[epoch + 1] = state_dict_hash({k: v.clone() for k, v in model.state_dict().items()})

    spec = TrainSpec(arch="cnn_tiny", width=2, epochs=3, batch_size=16, seed=0)
    train_model(spec, a["x"], a["y"], on_epoch_end=keep)
    short = train_model(TrainSpec(arch="cnn_tiny", width=2, epochs=2, batch_size=16, seed=0),
                        a["x"], a["y"])
    assert state_dict_hash(short.model.state_dict()) == seen[2]
    assert seen[2] != seen[3]
    assert torch.get_num_threads() >= 1
    rows = pd.DataFrame({"model": list("abcd"), "width": [2, 2, 4, 2], "seed": [0, 0, 0, 1],
                         "epochs": [3, 1, 3, 2]})
    assert tb.epoch_rows(rows, {"width": 2, "seed": 0})["model"].tolist() == ["b", "a"]
