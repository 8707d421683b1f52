"""Progress bars of long study loops (issue 14 item 6): each loop reports ``done/total`` on stderr
through the one helper, :func:`labelfree.joblog.progress`, and a bar never changes a result.

Each test runs a small study call and looks for the bar's final count in the captured stderr, so
a loop that stops reporting progress fails here.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from labelfree import joblog, store


def test_helper_writes_the_current_stderr_and_the_final_count(capsys):
    got = [i * 2 for i in joblog.progress(range(5), desc="demo", unit="step")]
    assert got == [0, 2, 4, 6, 8]
    err = capsys.readouterr().err
    assert "demo" in err and "5/5" in err and "step" in err


def test_update_zero_shows_a_postfix_once_the_interval_passed(capsys):
    """LaF's inner steps (CES guide g/n) reach the bar through set_postfix_str + update(0)."""
    bar = joblog.progress(total=2, desc="demo", mininterval=0)
    bar.set_postfix_str("CES guide 3/7", refresh=False)
    bar.update(0)
    bar.close()
    assert "CES guide 3/7" in capsys.readouterr().err


def test_laf_reports_every_test_set_and_bars_change_nothing(tmp_path, capsys):
    from labelfree.laf.run import analyse_sets, analyse_testset, load_testset
    from tests.laf.test_split_jobs import MODELS, PARAMS
    from tests.laf.test_study_report import make_artefacts

    sets = make_artefacts(tmp_path, "z", np.linspace(0.4, 0.9, 6), 3,
                          {"id": 0.0, "fog-3": 0.3, "natural-thick": 0.2})
    res = analyse_sets("z", "d", MODELS, sets, PARAMS, 0)
    err = capsys.readouterr().err
    assert "laf z" in err and "3/3" in err
    # the same set without a bar: the same rows
    preds, y, probs = load_testset(sets[1])
    plain = analyse_testset(preds, y, probs, probs.K, MODELS, PARAMS, 0, "z", "d", sets[1].name,
                            origin=sets[1].origin)
    strip = lambda rows: [{k: v for k, v in r.items() if not k.startswith("time")} for r in rows]  # noqa: E731
    pd.testing.assert_frame_equal(pd.DataFrame(strip(plain.rows)), pd.DataFrame(strip(res[1].rows)))


def test_scorecard_reports_every_set(capsys):
    from labelfree.numerics import softmax
    from labelfree.scorecard.core import score_zoo

    r = np.random.default_rng(0)
    y = {s: r.integers(0, 3, 40) for s in ("clean", "n1")}
    probs = {s: softmax(r.normal(size=(3, 40, 3))) for s in y}
    score_zoo(probs, y, {"clean": "clean", "n1": "noise"},
              include={"estimate": ["AC"], "rank": ["AC"], "fewlabel": []}, budgets=(10,), n_runs=1)
    err = capsys.readouterr().err
    assert "scorecard" in err and "2/2" in err


def test_syp_indicators_report_every_set(tmp_path, capsys):
    from labelfree.syp.plan import REF
    from labelfree.syp.run import model_indicators

    r = np.random.default_rng(1)
    names = ["id", "meta-000", "meta-001", "meta-002", "val-000"]
    infer, testsets = {}, {}
    for name in [REF, *names]:
        n = 30
        y = r.integers(0, 3, n)
        logits = r.normal(size=(n, 3)).astype(np.float32)
        logits[np.arange(n), y] += 1.0 + r.random()
        infer[name] = str(tmp_path / f"{name}-infer.npz")
        store.write_inference(infer[name], {name: {"logits": logits,
                                                   "penultimate": r.normal(size=(n, 8))}})
        testsets[name] = str(tmp_path / f"{name}.npz")
        store.write_image_set(testsets[name], r.integers(0, 256, (n, 8, 8, 3), dtype=np.uint8), y)
    kinds = {n: ("val" if n.startswith("val") else "meta") for n in names[1:]}
    cfg = {"rotation": False, "blur_form": "clean", "image_form": "paper", "atc_form": "difference",
           "splits": {"holdout_share": None}}
    model_indicators(infer, {k: testsets[k] for k in kinds}, infer["id"], testsets["id"],
                     kinds, cfg, 0, str(tmp_path / "ind.npz"), str(tmp_path / "base.csv"))
    err = capsys.readouterr().err
    assert "syp indicators" in err and "4/4" in err


def test_alphatrim_reports_models_and_regimes(tmp_path, capsys):
    from labelfree.alphatrim.run import analyse_experiment, train_block, train_experiment
    from tests.alphatrim.test_pipeline import SOURCES, STUDY

    cfg = copy.deepcopy(SOURCES)
    part = {k: cfg[k] for k in ("kind", "data", "model", "curves")}
    train_block("t", part, 3, {}, "S_init", 0, 2, tmp_path / "block.npz")
    err = capsys.readouterr().err
    assert "alphatrim t/S_init" in err and "2/2" in err
    raw = {k: tmp_path / k for k in ("zoo.npz", "runs.csv", "pm.csv", "ens.csv", "raw.npz",
                                      "sum.json")}
    train_experiment("t", cfg, 3, {}, raw["zoo.npz"], raw["runs.csv"])
    capsys.readouterr()
    analyse_experiment("t", cfg, STUDY, raw["zoo.npz"], raw["pm.csv"], raw["ens.csv"],
                       raw["raw.npz"], raw["sum.json"])
    err = capsys.readouterr().err
    n = sum(1 for k in store.load_npz(raw["zoo.npz"]) if k.startswith("logits_")
            and k.removeprefix("logits_") in ("S_init", "S_batch", "S_all"))
    assert "alphatrim t" in err and f"{n}/{n}" in err and n >= 2


def test_metamorphic_reports_every_model(tmp_path, capsys, repo_root):
    """zoo_verdicts: one bar per base over the zoo's models (tests/metamorphic's synthetic zoo)."""
    from labelfree.metamorphic import plan
    from labelfree.metamorphic import run as ex
    from labelfree.store import read_image_set, write_inference
    from tests.metamorphic.test_experiment import _logits, _study

    study = _study(repo_root)
    study["testsets"] = {"rho09": study["testsets"]["rho09"]}
    ex.write_testsets("d", study["testsets"], study, 0, tmp_path / "testsets")
    base_set = read_image_set(tmp_path / "testsets" / "metamorphic-rho09.npz")
    models = ["m0", "m1"]
    sheet = pd.DataFrame([{"model": m, "width": 16, "epochs": 3, "seed": 0} for m in models])
    infer = {}
    for t in plan.base_testsets("rho09", study["testsets"]["rho09"]):
        xs = read_image_set(tmp_path / "testsets" / f"{t}.npz")
        logits = _logits("object", xs, base_set, None if t.endswith("-cf") else 3, t.endswith("-cf"))
        for m in models:
            p = tmp_path / "infer" / t / f"{m}.npz"
            write_inference(p, {t: {"logits": logits.astype(np.float32)}})
            infer[(t, m)] = str(p)
    capsys.readouterr()
    ex.zoo_verdicts("z", "unbiased", sheet, study["testsets"],
                    {"rho09": str(tmp_path / "testsets" / "metamorphic-rho09.npz")}, infer, study)
    err = capsys.readouterr().err
    assert "metamorphic z/rho09" in err and "2/2" in err
