"""PACE spec section 8, check C15 (every result row records the full configuration) and an
end-to-end pass of the experiment and report code on synthetic subjects."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from labelfree.pace.inputs import light_images, patch_images, rotate_images, shifted_pool
from labelfree.pace.plan import EXPERIMENTS
from labelfree.pace.report import write_all
from labelfree.pace.run import (
    StudyParams,
    Subject,
    errors,
    load_subjects,
    run_subject,
    save_subjects,
)

C15 = ["subject", "approach", "feature", "alpha", "reducer", "dim", "min_cluster_size",
       "min_samples", "rounding", "art_mode", "seed", "rep", "budget", "size", "estimate",
       "truth", "error", "seconds"]


def _subject(name: str, task: str, acc: float, seed: int, n: int = 250) -> Subject:
    rng = np.random.default_rng(seed)
    lab = rng.integers(0, 4, n)
    lhl = np.maximum(rng.normal(0, 2, (4, 12))[lab] + rng.normal(0, 0.4, (n, 12)), 0)
    scores = (rng.random(n) < acc).astype(float)
    feats = {"LHL": lhl, "ORI": rng.random((n, 16)), "FL": lhl[:, :6]}
    conf = None
    if task == "cls":
        feats["CON"] = rng.dirichlet(np.ones(4), n)
        conf = feats["CON"].max(axis=1)
    return Subject(name, task, "original", False, "m", "id", scores, feats, conf)


@pytest.fixture(scope="module")
def subjects():
    return [_subject("a", "cls", 0.9, 0), _subject("r", "reg", 0.95, 2)]


def test_c15_rows_record_configuration(subjects):
    params = StudyParams(budgets=(30, 40), reps=2, pace={"rounding": "reference"})
    rows, _ = run_subject("main", subjects[0], params)
    df = pd.DataFrame(rows)
    assert set(C15) <= set(df.columns)
    assert set(df.approach) == {"PACE", "SRS", "CES", "CSS"}
    pace = df[df.approach == "PACE"]
    assert (pace.rounding == "reference").all() and (pace.art_mode == "maximin").all()
    assert (pace.min_cluster_size == 5).all()  # max(5, round(0.008 * 250))
    assert len(df[df.approach == "SRS"]) == 2 * 2  # reps x budgets
    np.testing.assert_allclose(df.error, 100 * (df.estimate - df.truth).abs())


def test_subjects_roundtrip(tmp_path, subjects):
    save_subjects(tmp_path / "s.npz", subjects)
    back = load_subjects(tmp_path / "s.npz")
    assert [s.name for s in back] == ["a", "r"]
    assert back[1].confidence is None and "CON" not in back[1].features
    np.testing.assert_array_equal(back[0].scores, subjects[0].scores)
    np.testing.assert_array_equal(back[0].features["LHL"], subjects[0].features["LHL"].astype(np.float32))


def test_all_experiments_and_report(tmp_path, subjects):
    params = StudyParams(budgets=(30, 40), reps=2, dims=(2, 4), alphas=(0.5, 0.7, 0.8))
    rows, timings = [], []
    for kind in EXPERIMENTS:
        for s in subjects:
            r, t = run_subject(kind, s, params)
            rows += [{"experiment": kind, **x} for x in r]
            timings += t
    err = errors(pd.DataFrame(rows))
    assert (err.mse >= 0).all()
    meta = pd.DataFrame([s.meta() for s in subjects])
    keys = ["table2_3", "best", "table4", "table5", "table6", "table7", "table8", "conclusions"]
    out = {k: str(tmp_path / f"{k}.csv") for k in keys}
    for i in range(4, 9):
        out[f"fig{i}"] = str(tmp_path / f"fig{i}.png")
        out[f"fig{i}_table"] = str(tmp_path / f"fig{i}.csv")
    out["fig_main"] = str(tmp_path / "main.png")
    write_all(err, meta, pd.DataFrame(timings), out)
    t23 = pd.read_csv(out["table2_3"])
    assert set(t23.subject) == {"a", "r", "Avg"}
    assert "CSS" not in set(t23[t23.subject == "r"].approach)  # no CSS for regression
    concl = pd.read_csv(out["conclusions"])
    assert len(concl) == 7 and concl.holds.isin([True, False]).all()


def test_pool_transforms():
    rng = np.random.default_rng(0)
    x = rng.integers(1, 255, size=(20, 8, 8, 1), dtype=np.uint8)
    p = patch_images(x, rng, size=3, count=(1, 1))
    changed = (p != x).reshape(20, -1).sum(axis=1)
    assert (changed == 9).all()  # one 3x3 zero patch, all pixels were non-zero
    light = light_images(x, rng, offset=(50, 50), contrast=(1.0, 1.0))
    np.testing.assert_array_equal(light, np.clip(x.astype(int) + 50, 0, 255))
    big, y = shifted_pool(x, np.arange(20))
    assert big.shape == (100, 8, 8, 1) and (y[20:40] == np.arange(20)).all()
    np.testing.assert_array_equal(big[20:40, :-1], x[:, 1:])  # shifted up by one row
    np.testing.assert_array_equal(rotate_images(x, np.zeros(20)), x)
    r180 = rotate_images(x, np.full(20, np.pi))
    np.testing.assert_array_equal(r180, x[:, ::-1, ::-1])


def test_config_switches_reach_the_methods():
    """Issue 15 switches: per-subject reduction override (spec 2.4), CES allow_repeats (3.2),
    CSS weights (3.3), min_one_per_group (2.6)."""
    cfg = {"method": {"min_one_per_group": True, "rounding": "exact"},
           "reduce_overrides": {"a": "none", "b": {"reducer": "pca", "dim": 3}},
           "ces": {"allow_repeats": True}, "css": {"weights": [0.1, 0.1, 0.8]}}
    p = StudyParams.from_config(cfg)
    assert p.pace_config(250, "a").reduce == "none"
    b = p.pace_config(250, "b")
    assert (b.reduce, b.reducer, b.dim) == ("always", "pca", 3)
    assert p.pace_config(250, "c").reduce == "auto" and p.pace_config(250, "c").min_one_per_group
    assert p.ces["allow_repeats"] is True and p.css["weights"] == (0.1, 0.1, 0.8)
    assert p.css["cuts"] == (0.8, 0.9)  # unspecified keys keep their defaults
    d = StudyParams.from_config({})
    assert d.ces["allow_repeats"] is False and d.css["weights"] is None


def test_top5_rows_table9_table11_and_checks(tmp_path, subjects):
    a = subjects[0]
    top5 = np.ones(a.n)
    top5[:10] = 0
    s = Subject(a.name, a.task, "generated", False, a.model, "pace_fgsm", a.scores, a.features,
                a.confidence, top5)
    params = StudyParams(budgets=(30, 40), reps=3)
    rows, timings = run_subject("main", s, params)
    df = pd.DataFrame(rows)
    t5 = df[df.get("experiment") == "top5"]
    assert set(t5.approach) == {"PACE", "SRS", "CES", "CSS"}
    np.testing.assert_allclose(t5.truth, top5.mean())
    # PACE's top-5 rows score the same selection as its top-1 rows
    top1 = df[(df.experiment != "top5") & (df.approach == "PACE")]
    assert t5[t5.approach == "PACE"]["size"].tolist() == top1["size"].tolist()
    frame = pd.DataFrame(rows)
    frame["experiment"] = frame["experiment"].fillna("main")
    err = errors(frame)
    meta = pd.DataFrame([s.meta()])
    out = {k: str(tmp_path / f"{k}.csv") for k in
           ["table2_3", "best", "table4", "table5", "table6", "table7", "table8", "conclusions",
            "table9", "table11", "checks"]}
    for i in range(4, 9):
        out[f"fig{i}"] = str(tmp_path / f"fig{i}.png")
        out[f"fig{i}_table"] = str(tmp_path / f"fig{i}.csv")
    out["fig_main"] = str(tmp_path / "main.png")
    write_all(err, meta, pd.DataFrame(timings), out)
    t9 = pd.read_csv(out["table9"])
    assert set(t9.subject) == {a.name, "Avg"}
    t11 = pd.read_csv(out["table11"])
    assert set(t11.approach) == {"PACE", "SRS", "CES", "CSS"}  # the generated subject's rows


def test_checks_known_answers():
    """Checks table on a hand-built error frame: PACE 1, SRS 2, CES 4, CSS 8 (points) on every
    cell -> 1a = 0.5 holds, 1b = 0.25 holds, 2a = 4 fails, 2b = 8 - 4 = 4 holds."""
    from labelfree.pace.report import checks

    rows = []
    for subj in ("x", "y"):
        for a, v in (("PACE", 1.0), ("SRS", 2.0), ("CES", 4.0), ("CSS", 8.0)):
            for b in (50, 60):
                rows.append({"experiment": "main", "subject": subj, "approach": a, "budget": b,
                             "mse": v, "reps": 1, "size": b, "truth": 0.9})
    meta = pd.DataFrame([
        {"name": "x", "task": "cls", "input_type": "original", "mutant": False, "accuracy": 0.9, "n": 1000},
        {"name": "y", "task": "cls", "input_type": "generated", "mutant": False, "accuracy": 0.5, "n": 1000},
    ])
    c = checks(pd.DataFrame(rows), meta, pd.DataFrame()).set_index("check")
    val = {k.split()[0]: (v, h) for k, v, h in zip(c.index, c.value, c.holds, strict=True)}
    assert val["1a"] == (0.5, True) and val["1b"] == (0.25, True)
    assert val["2a"] == (4.0, False) and val["2b"] == (4.0, True)
    # SRS calibration: theory at acc 0.9, n 50 / 60, N 1000 (by hand 4.13 / 3.76) vs 2.0
    n, big = np.array([50, 60]), 1000
    th = 100 * np.sqrt(0.9 * 0.1 / n * (big - n) / (big - 1))
    srs_row = c[c.index.str.startswith("SRS MSE")]
    assert srs_row.value.iloc[0] == pytest.approx(np.mean(2.0 / th)) and not srs_row.holds.iloc[0]


def test_carlini_wagner_l2_is_near_minimal_on_a_linear_model():
    """Table 11's C&W pool (Carlini & Wagner 2017, L2): for a linear two-class model the
    smallest L2 change (on the [0, 1] scale) that flips the class is the margin over the norm of
    the weight difference (by hand: z1 - z0 = 4 v.x + b with |v| = 1 gives margin / 4). Every
    attacked image must be misclassified after uint8 rounding, no nearer than that bound (no
    misclassified image is), and within 15 % of it; an attack that cannot run returns the input."""
    import torch

    from labelfree.pace.inputs import adversarial_pool, carlini_wagner_l2

    rng = np.random.default_rng(0)
    d, n = 64, 8
    v = rng.normal(size=d)
    v /= np.linalg.norm(v)
    lin = torch.nn.Linear(d, 2)
    with torch.no_grad():
        lin.weight[:] = torch.tensor(np.stack([np.zeros(d), 4.0 * v]), dtype=torch.float32)
        lin.bias[:] = torch.tensor([0.0, float(-4.0 * v @ np.full(d, 0.5))])
    model = torch.nn.Sequential(torch.nn.Flatten(), lin)
    x01 = 0.5 - rng.uniform(0.2, 0.6, n)[:, None] * v[None]  # class 0, 0.2-0.6 from the boundary
    x = np.clip(np.rint(x01 * 255), 0, 255).astype(np.uint8).reshape(n, 8, 8, 1)
    xs = x.reshape(n, -1) / 255.0
    bound = -(4.0 * xs @ v + lin.bias[1].item()) / 4.0  # margin / |w1 - w0|
    assert np.all(bound > 0.15)
    y = np.zeros(n, dtype=np.int64)
    adv = carlini_wagner_l2(model, x, y, steps=150, binary_steps=5, confidence=0.2)
    with torch.no_grad():
        pred = model(torch.from_numpy(adv.reshape(n, -1).astype(np.float32) / 255.0)).argmax(1).numpy()
    l2 = np.linalg.norm(adv.reshape(n, -1) / 255.0 - xs, axis=1)
    assert np.all(pred == 1)
    assert np.all(l2 >= bound - 1e-6)
    assert np.all(l2 <= 1.15 * bound), l2 / bound
    same = carlini_wagner_l2(model, x, y, steps=1, binary_steps=1, initial_const=1e-6)
    assert np.array_equal(same, x)  # one tiny step flips nothing: inputs come back unchanged
    # the pool recipe: half attacked (the C&W images), half clean
    out, yy, flag = adversarial_pool(model, x, y, np.random.default_rng(1), method="cw",
                                     cw={"steps": 150, "binary_steps": 5, "confidence": 0.2})
    assert flag.sum() == n // 2 and np.array_equal(out[~flag], x[~flag]) and np.array_equal(yy, y)
    assert np.array_equal(out[flag], adv[flag])  # per-image attack: the same images


def test_shared_fits_give_the_same_rows(subjects, monkeypatch):
    """One FitCache over every experiment (rule pace_experiments) gives the rows of separate
    runs, seconds aside: a key without the configuration would give dims' and reducers' rows
    the base fit's selections. Each (subject, feature, configuration) is fitted once."""
    from labelfree.pace import run as pace_run

    params = StudyParams(budgets=(30, 40), reps=2, dims=(2, 4), alphas=(0.5, 0.8))
    calls = []
    real_fit = pace_run.fit
    monkeypatch.setattr(pace_run, "fit", lambda x, cfg: calls.append(cfg) or real_fit(x, cfg))
    want = [pace_run.run_experiment(k, subjects, params)[0] for k in EXPERIMENTS]
    separate = len(calls)
    calls.clear()
    fits = pace_run.FitCache()
    got = [pace_run.run_experiment(k, subjects, params, fits)[0] for k in EXPERIMENTS]
    for w, g in zip(want, got, strict=True):
        pd.testing.assert_frame_equal(w.drop(columns="seconds"), g.drop(columns="seconds"))
    # every row fit once (main's extra n_max fit, for Table 8's timing, once per subject too);
    # the base fit of main, features, alpha and variants and dims' and reducers' FastICA-2 shared
    assert len(calls) == len(fits._fits) + len(subjects)
    assert separate - len(calls) == len(subjects) * 4
