"""`labelfree answer` gives the workflow's answer on the same arrays: the same estimator,
estimate, prediction interval and page, from one function (labelfree.answer.answer) that both
call; the workflow reads the arrays after its import jobs converted them, the command reads the
folder directly."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from labelfree import answer, cli, store
from labelfree.zoo import predictions as PZ

REPO = Path(__file__).resolve().parents[2]
K, N = 5, 150
#: Accuracy each model is built to have on `id`; shifted sets lose ``drop`` of it.
MODELS = {"m0": 0.55, "m1": 0.7, "m2": 0.8, "m3": 0.92}
#: Ten labelled shifted sets, so each has the nine others a 90 % interval needs (sets, not
#: (set, model) cases, are the interval's unit); `unl` has no labels.
SETS = {"id": 0.0, "s1": 0.1, "s2": 0.2, "s3": 0.3, "s4": 0.15, "s5": 0.05, "s6": 0.25,
        "s7": 0.12, "s8": 0.18, "s9": 0.22, "t1": 0.08, "unl": 0.25}  # set -> drop


def make_zoo(root: Path, seed: int = 0) -> None:
    """Four models, twelve test sets (`unl` without labels): logits in npz and csv (one with the
    -inf of a log-probability 0), probabilities in npy, so every conversion of the import runs."""
    gen = np.random.default_rng(seed)
    (root / "labels").mkdir(parents=True)
    truth = {t: gen.integers(0, K, N) for t in SETS}
    for t, y in truth.items():
        if t != "unl":
            np.save(root / "labels" / f"{t}.npy", y)
    for i, (m, acc) in enumerate(MODELS.items()):
        d = root / "predictions" / m
        d.mkdir(parents=True)
        for t, y in truth.items():
            right = gen.random(N) < acc - SETS[t]
            pred = np.where(right, y, (y + gen.integers(1, K, N)) % K)
            z = gen.normal(size=(N, K)) * (1 + SETS[t])
            z[np.arange(N), pred] += 2.0 + i * 0.3
            if i == 0:
                np.savez(d / f"{t}.npz", logits=z)
            elif i == 1:
                p = np.exp(z - z.max(axis=1, keepdims=True))
                np.save(d / f"{t}.npy", p / p.sum(axis=1, keepdims=True))
            elif i == 2:
                z = z - np.log(np.exp(z).sum(axis=1, keepdims=True))  # log-probabilities
                z[0, (pred[0] + 1) % K] = -np.inf
                np.savetxt(d / f"{t}.csv", z, delimiter=",", fmt="%.8f")
            else:
                np.save(d / f"{t}.npy", z.astype(np.float32))


def cli_table(root: Path, *args: str) -> pd.DataFrame:
    out = io.StringIO()
    sys_stdout, sys.stdout = sys.stdout, out
    try:
        assert cli.main(["answer", str(root), "--csv", *args]) == 0
    finally:
        sys.stdout = sys_stdout
    return pd.read_csv(io.StringIO(out.getvalue()), keep_default_na=False,
                       na_values=["", "NaN", "nan"])


def imported(root: Path, work: Path) -> tuple[list[str], dict, dict]:
    """The folder through the workflow's import (labelfree.zoo.predictions.import_model and
    import_labels, what its import jobs run), read back as its answer job reads it."""
    zoo = PZ.scan(root, "auto", None)
    for m in zoo.models:
        PZ.import_model("z", m, {t: str(zoo.prediction_file(m, t)) for t in zoo.testsets},
                        zoo.kind[m], zoo.num_classes, zoo.rows, {}, work / f"{m}.npz",
                        work / f"{m}.json")
    PZ.import_labels({t: zoo.label_files.get(t) for t in zoo.testsets}, zoo.rows,
                     zoo.num_classes, {t: work / f"{t}.npz" for t in zoo.testsets})
    logits = {t: store.stack_logits([work / f"{m}.npz" for m in zoo.models], t)
              for t in zoo.testsets}
    return zoo.models, logits, {t: store.read_labels(work / f"{t}.npz") for t in zoo.testsets}


COLUMNS = ["testset", "model", "estimator", "estimated_accuracy", "interval_low",
           "interval_high", "trusted", "true_accuracy", "laf_rank"]


def test_the_command_and_the_imported_arrays_give_the_same_answer(tmp_path):
    make_zoo(tmp_path / "zoo")
    models, logits, labels = imported(tmp_path / "zoo", tmp_path / "work")
    want = answer.answer("zoo", models, logits, labels, "id",
                         kinds=answer.prediction_zoo_kinds(list(logits)), n_boot=20)
    got = cli_table(tmp_path / "zoo", "--bootstrap", "20")
    assert list(got["testset"].unique()) == list(SETS)
    pd.testing.assert_frame_equal(got, want.table, check_dtype=False, rtol=0, atol=1e-15)
    # the evidence did choose: a trusted estimate with a finite interval on a shifted set
    s1 = got[got["testset"] == "s1"]
    assert s1["trusted"].all() and np.isfinite(s1["halfwidth"]).all(), s1.iloc[0].to_dict()
    assert (s1["basis"] != answer.NO_EVIDENCE).all()
    assert s1["evidence"].iloc[0] == " ".join(t for t in SETS if t not in ("id", "s1", "unl"))


def test_headline_puts_its_set_first_and_plans_on_it(tmp_path, capsys):
    make_zoo(tmp_path / "zoo")
    got = cli_table(tmp_path / "zoo", "--headline", "unl", "--bootstrap", "10",
                    "--budget", "7")
    assert got["testset"].iloc[0] == "unl"
    assert cli.main(["answer", str(tmp_path / "zoo"), "--headline", "unl", "--bootstrap",
                     "10", "--budget", "7", "--out", str(tmp_path / "out")]) == 0
    md = capsys.readouterr().out
    assert md == (tmp_path / "out" / "answer.md").read_text()
    assert md.splitlines()[answer.SUMMARY_LINE].startswith(
        "**In short** (zoo `zoo`, test set `unl`)")
    plan = pd.read_csv(tmp_path / "out" / "label-these.csv")
    assert (plan["testset"] == "unl").all() and len(plan) == 7
    # the other sets' rows are those of the default order, the headline's row moved up
    default = cli_table(tmp_path / "zoo", "--bootstrap", "10", "--budget", "7")
    key = ["testset", "model", "estimator", "estimated_accuracy", "interval_low",
           "interval_high"]
    a = got[key].sort_values(key[:2]).reset_index(drop=True)
    b = default[key].sort_values(key[:2]).reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b)


def test_answer_refuses_what_it_cannot_answer(tmp_path, capsys):
    make_zoo(tmp_path / "zoo")
    assert cli.main(["answer", str(tmp_path / "zoo"), "--headline", "nope"]) == 2
    assert "--headline: headline test set 'nope' is not one of" in capsys.readouterr().err
    assert cli.main(["answer", str(tmp_path / "zoo"), "--source", "nope"]) == 2
    assert "--source nope: not one of the zoo's test sets" in capsys.readouterr().err
    (tmp_path / "files").mkdir()
    np.save(tmp_path / "files" / "a.npy", np.eye(3))
    assert cli.main(["answer", str(tmp_path / "files")]) == 2
    assert "reads one prediction zoo folder" in capsys.readouterr().err


def test_defaults_are_the_workflows():
    schema = yaml.safe_load((REPO / "config" / "schema" / "answer.yaml").read_text())
    for key, value in answer.DEFAULTS.items():
        if key == "seed":
            top = yaml.safe_load((REPO / "config" / "schema.yaml").read_text())
            assert top["properties"]["seed"]["default"] == value
        else:
            assert schema["properties"][key]["default"] == value, key
    args = cli.parser().parse_args(["answer", "z"])
    assert (args.budget, args.bootstrap, args.level, args.max_mae, args.seed) == tuple(
        answer.DEFAULTS[k] for k in ("budget", "bootstrap", "level", "max_mae", "seed"))
    assert schema["properties"]["headline"]["default"] == {}  # the first set heads it


@pytest.mark.slow
def test_the_workflow_and_the_command_write_the_same_answer(tmp_path):
    """The real workflow on the folder (its import jobs, then its answer job) and `labelfree
    answer --out` on the same folder: answer.csv and label-these.csv byte for byte, answer.md
    but for the scorecard paragraph (the command runs no scorecard)."""
    from tests.workflow.runner import run_snakemake

    make_zoo(tmp_path / "zoo")
    cfg = tmp_path / "zoo.yaml"
    off = {s: {"enabled": False} for s in ("laf", "scorecard", "pace", "syp", "alphatrim",
                                           "metamorphic")}
    cfg.write_text(yaml.safe_dump({"zoos": {"zoo": {"predictions": "zoo"}},
                                   "answer": {"bootstrap": 20, "headline": {"zoo": "s2"}},
                                   **off}))
    run_snakemake(tmp_path / "run", configfile=cfg, timeout=900)
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.run([sys.executable, "-m", "labelfree.cli", "answer", str(tmp_path / "zoo"),
                           "--bootstrap", "20", "--headline", "s2", "--out",
                           str(tmp_path / "cli")], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    wf = tmp_path / "run" / "results" / "answer" / "zoo"
    for name in ("answer.csv", "label-these.csv"):
        assert (tmp_path / "cli" / name).read_bytes() == (wf / name).read_bytes(), name
    a, b = ((d / "answer.md").read_text().split("\nScorecard")[0] for d in (wf, tmp_path / "cli"))
    assert a == b
    table = pd.read_csv(wf / "answer.csv")
    assert table["testset"].iloc[0] == "s2"


def test_estimate_on_a_zoo_with_labelled_sets_points_to_answer(tmp_path, capsys):
    make_zoo(tmp_path / "zoo")
    assert cli.main(["estimate", str(tmp_path / "zoo"), "--testset", "s1", "--method", "AC",
                     "--csv"]) == 0
    err = capsys.readouterr().err
    assert f"which estimate to trust: `labelfree answer {tmp_path / 'zoo'}` chooses" in err
