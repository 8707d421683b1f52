"""Inputs the ``labelfree`` command must read right or refuse, and how it talks (docs/cli.md):
pandas csv files, percentages, log-probabilities, one model, closed pipes, negative labels,
help, method names, directions, progress, and the (models, inputs, classes) tensor layout."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from labelfree import cli

REPO = Path(__file__).resolve().parents[2]


def _softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


@pytest.fixture(scope="module")
def probs(tmp_path_factory):
    """Three models' probabilities (accuracy growing with the index) on 120 inputs, K = 4,
    saved as .npy in preds/; labels in labels.npy."""
    d = tmp_path_factory.mktemp("inputs")
    r = np.random.default_rng(7)
    N, K = 120, 4
    y = r.integers(0, K, N)
    P = []
    for m in range(3):
        z = r.normal(size=(N, K)) * 2
        z[np.arange(N), y] += 0.5 + m
        P.append(_softmax(z))
    (d / "preds").mkdir()
    for m, p in enumerate(P):
        np.save(d / "preds" / f"m{m}.npy", p)
    np.save(d / "labels.npy", y)
    return d, np.stack(P), y


def call(capsys, *args: str) -> tuple[int, str, str]:
    """The command in this process: (exit status, stdout, stderr)."""
    rc = cli.main(list(args))
    out = capsys.readouterr()
    return rc, out.out, out.err


def frame(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


def _reference(capsys, d: Path, command: str = "rank") -> pd.DataFrame:
    rc, out, err = call(capsys, command, str(d / "preds"), "--csv")
    assert rc == 0, err
    return frame(out)


# ------------------------------------------------------------------------ files read right


def test_pandas_csv_with_header_and_index_column_reads_as_the_arrays(probs, capsys, tmp_path):
    d, P, _ = probs
    for m, p in enumerate(P):  # pandas' default: a header row and an index column
        pd.DataFrame(p, columns=[f"class_{k}" for k in range(4)]).to_csv(tmp_path / f"m{m}.csv")
    rc, out, err = call(capsys, "rank", str(tmp_path), "--csv")
    assert rc == 0, err
    pd.testing.assert_frame_equal(frame(out), _reference(capsys, d), atol=1e-9)
    for m, p in enumerate(P):  # integer column names: the header is 0,1,2,3
        pd.DataFrame(p).to_csv(tmp_path / f"m{m}.csv", index=False)
    rc, out, err = call(capsys, "rank", str(tmp_path), "--csv")
    assert rc == 0, err
    pd.testing.assert_frame_equal(frame(out), _reference(capsys, d), atol=1e-9)


def test_csv_with_an_unheaded_index_column_is_refused_naming_the_file(probs, capsys, tmp_path):
    _, P, _ = probs
    for m, p in enumerate(P):
        pd.DataFrame(p).to_csv(tmp_path / f"m{m}.csv", header=False)
    rc, out, err = call(capsys, "rank", str(tmp_path))
    assert rc == 2 and out == ""
    assert f"{tmp_path / 'm0.csv'}: model 'm0': the first column counts 0, 1, ..., 119" in err
    assert "index=False" in err


def test_probabilities_in_percent_are_refused_saying_so(probs, capsys, tmp_path):
    _, P, _ = probs
    for m, p in enumerate(P):
        np.save(tmp_path / f"m{m}.npy", 100 * p)
    rc, out, err = call(capsys, "estimate", str(tmp_path))
    assert rc == 2 and out == ""
    assert f"{tmp_path / 'm0.npy'}: model 'm0': every row is non-negative and sums to 100" in err
    assert "percent" in err and "Divide them by 100" in err


def test_log_probabilities_with_minus_inf_read_as_the_probabilities(probs, capsys, tmp_path):
    d, P, _ = probs
    for m, p in enumerate(P):
        q = p.copy()
        q[:5, 0] = 0.0  # predict_log_proba of a model sure a class is impossible: log 0 = -inf
        q /= q.sum(axis=1, keepdims=True)
        np.save(_mk(tmp_path / "probs") / f"m{m}.npy", q)
        with np.errstate(divide="ignore"):
            np.save(_mk(tmp_path / "logp") / f"m{m}.npy", np.log(q))
    assert np.isneginf(np.load(tmp_path / "logp" / "m0.npy")).sum() == 5
    for command in ("rank", "estimate"):
        rc, out, err = call(capsys, command, str(tmp_path / "logp"), "--csv")
        assert rc == 0, err
        rc, ref, err = call(capsys, command, str(tmp_path / "probs"), "--csv")
        assert rc == 0, err
        # MaNo reads the logits when all models give logits: not compared here
        a, b = frame(out), frame(ref)
        cols = [c for c in b.columns if c not in ("MaNo",)]
        pd.testing.assert_frame_equal(a[cols], b[cols], atol=1e-6)


def _mk(p: Path) -> Path:
    p.mkdir(parents=True, exist_ok=True)
    return p


def test_two_files_for_one_model_name_are_refused(probs, capsys, tmp_path):
    _, P, _ = probs
    np.save(tmp_path / "knn.npy", P[0])
    np.savetxt(tmp_path / "knn.csv", P[1], delimiter=",")
    np.save(tmp_path / "svm.npy", P[2])
    rc, out, err = call(capsys, "rank", str(tmp_path))
    assert rc == 2 and out == ""
    assert "model 'knn' comes from" in err and "knn.csv" in err and "knn.npy" in err
    assert "two files for one model name" in err


# ------------------------------------------------------------------------------ one model


def test_rank_of_one_model_says_there_is_nothing_to_rank(probs, capsys):
    d, _, _ = probs
    rc, out, err = call(capsys, "rank", str(d / "preds" / "m1.npy"))
    assert rc == 2 and out == "" and "Traceback" not in err
    assert "one model ('m1'): nothing to rank" in err and "labelfree estimate" in err


def test_estimate_of_one_model_runs_what_works_and_names_what_it_skips(probs, capsys):
    d, P, _ = probs
    rc, out, err = call(capsys, "estimate", str(d / "preds" / "m1.npy"), "--csv")
    assert rc == 0, err
    df = frame(out)
    assert df["model"].tolist() == ["m1"]
    assert df.loc[0, "AC"] == pytest.approx(P[1].max(axis=1).mean())
    assert "GDE (needs two or more models" in err
    assert "ATC-MC (needs --source and --source-labels)" in err
    rc, out, err = call(capsys, "estimate", str(d / "preds" / "m1.npy"), "--source",
                        str(d / "preds" / "m1.npy"), "--source-labels", str(d / "labels.npy"),
                        "--csv")
    assert rc == 0, err
    assert {"AC", "ATC-MC", "DoC"} <= set(frame(out).columns)
    assert "ALine-S (needs two or more models" in err


def test_skipped_methods_of_a_prediction_zoo_name_its_options(probs, capsys, tmp_path):
    d, P, y = probs
    for m, p in enumerate(P):
        np.save(_mk(tmp_path / "z" / "predictions" / f"m{m}") / "id.npy", p)
    rc, out, err = call(capsys, "estimate", str(tmp_path / "z"))
    assert rc == 0, err
    assert "ATC-MC (needs --source NAME of a labelled test set)" in err


def test_source_models_are_paired_by_name_not_by_order(probs, capsys, tmp_path):
    d, P, y = probs
    rc, ref, err = call(capsys, "estimate", str(d / "preds"), "--source", str(d / "preds"),
                        "--source-labels", str(d / "labels.npy"), "--method", "DoC", "--csv")
    assert rc == 0, err
    src = _mk(tmp_path / "src")
    for m, p in enumerate(P):  # the same files under names sorting in the other order
        np.save(src / f"{'cba'[m]}.npy", p)
    rc, out, err = call(capsys, "estimate", str(d / "preds"), "--source", str(src),
                        "--source-labels", str(d / "labels.npy"), "--method", "DoC")
    assert rc == 2 and "--source has models ['a', 'b', 'c'] but the zoo has ['m0', 'm1', 'm2']" \
        in err
    files = [str(d / "preds" / f"m{m}.npy") for m in (2, 0, 1)]  # given out of order
    rc, out, err = call(capsys, "estimate", str(d / "preds"), "--source", *files,
                        "--source-labels", str(d / "labels.npy"), "--method", "DoC", "--csv")
    assert rc == 0, err
    pd.testing.assert_frame_equal(frame(out), frame(ref))


# --------------------------------------------------------------------------- output, pipes


def test_a_closed_pipe_ends_quietly(probs):
    d, _, _ = probs
    env = dict(os.environ, PYTHONPATH=str(REPO / "src"))
    proc = subprocess.Popen([sys.executable, "-m", "labelfree.cli", "rank", str(d / "preds"),
                             "--csv", "--method", "CRC-mean"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # the reader went away before any output: `| head -0`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=300) == cli.EXIT_PIPE, err
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_methods_listing_fits_100_columns(capsys):
    rc, out, _ = call(capsys, "methods")
    assert rc == 0
    lines = out.splitlines()
    assert max(map(len, lines)) <= 100, max(lines, key=len)
    names = {m.name for m in cli.methods()}
    assert all(any(line.split()[1:2] == [n] for line in lines) for n in names)


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"labelfree {cli.version()}"
    assert cli.version()[0].isdigit()


def _options(p) -> list:
    import argparse

    out = []
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for sp in a.choices.values():
                out += _options(sp)
        elif not isinstance(a, argparse._HelpAction):
            out.append(a)
    return out


def test_every_option_has_help():
    bare = [a.option_strings or a.dest for a in _options(cli.parser()) if not a.help]
    assert bare == []


def test_help_and_output_say_which_direction_is_better(probs, capsys):
    d, _, _ = probs
    with pytest.raises(SystemExit):
        cli.main(["rank", "--help"])
    text = capsys.readouterr().out
    assert "higher score = predicted more accurate" in text and "rank 1 = predicted best" in text
    rc, _, err = call(capsys, "rank", str(d / "preds"), "--method", "CRC-mean")
    assert rc == 0 and "higher score = predicted more accurate" in err
    rc, _, err = call(capsys, "estimate", str(d / "preds"), "--method", "AC")
    assert rc == 0 and "higher = better" in err
    rc, _, err = call(capsys, "select", str(d / "preds"), "--budget", "4")
    assert rc == 0 and "PACE picked 4 of 120 inputs on the zoo's mean probabilities" in err


def test_method_names_in_any_case(probs, capsys):
    d, _, _ = probs
    rc, a, err = call(capsys, "rank", str(d / "preds"), "--method", "laf", "--method", "MANO",
                      "--csv")
    assert rc == 0, err
    rc, b, err = call(capsys, "rank", str(d / "preds"), "--method", "LaF", "--method", "MaNo",
                      "--csv")
    assert rc == 0 and a == b and "rank_LaF" in a
    rc, a, err = call(capsys, "select", str(d / "preds"), "--budget", "5", "--method", "srs",
                      "--csv")
    rc2, b, _ = call(capsys, "select", str(d / "preds"), "--budget", "5", "--method", "SRS",
                     "--csv")
    assert rc == rc2 == 0 and a == b, err


# ------------------------------------------------------------------------------- labels


def test_negative_labels_are_refused_and_minus_one_means_unlabelled(probs, capsys, tmp_path):
    d, P, y = probs
    lab = np.full(len(y), cli.UNLABELLED)
    lab[:30] = y[:30]
    np.save(tmp_path / "ok.npy", lab)
    rc, out, err = call(capsys, "estimate", str(d / "preds"), "--labels",
                        str(tmp_path / "ok.npy"), "--csv")
    assert rc == 0, err
    df = frame(out)
    assert (df["labels"] == 30).all()
    assert df.loc[2, "accuracy"] == pytest.approx(np.mean(P[2][:30].argmax(1) == y[:30]))
    lab[40] = -2
    np.save(tmp_path / "bad.npy", lab)
    rc, out, err = call(capsys, "estimate", str(d / "preds"), "--labels",
                        str(tmp_path / "bad.npy"))
    assert rc == 2 and out == ""
    assert "label -2 at input 40" in err and "-1 (or an empty csv cell) marks" in err
    pd.DataFrame({"index": [3, 4], "label": [1, -5]}).to_csv(tmp_path / "p.csv", index=False)
    rc, _, err = call(capsys, "estimate", str(d / "preds"), "--labels", str(tmp_path / "p.csv"))
    assert rc == 2 and "label -5 at input 4" in err


# ------------------------------------------------------------------------------ progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_on_stderr_only_when_it_is_a_terminal(probs, capsys, monkeypatch):
    d, _, _ = probs
    args = ["rank", str(d / "preds"), "--method", "CRC-mean", "--method", "Entropy", "--csv"]
    rc, out, err = call(capsys, *args)
    assert rc == 0 and "method" not in err and "reading" not in err  # not a terminal
    term = _Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    assert cli.main(args) == 0
    assert capsys.readouterr().out == out  # stdout unchanged by the bars
    shown = term.getvalue()
    assert "reading" in shown and "3/3" in shown and "rank" in shown and "2/2" in shown
    term.seek(0)
    term.truncate()
    assert cli.main(["select", str(d / "preds"), "--budget", "5", "--method", "SRS"]) == 0
    assert "select SRS: 00:0" in term.getvalue()


# ----------------------------------------------------------------------- tensor layout


@pytest.mark.parametrize("suffix", [".npy", ".npz", ".pt"])
def test_export_writes_a_tensor_that_reads_back_as_the_same_zoo(probs, capsys, tmp_path,
                                                                 suffix):
    d, P, _ = probs
    path = tmp_path / f"zoo{suffix}"
    rc, out, err = call(capsys, "estimate", str(d / "preds"), "--export", str(path), "--csv")
    assert rc == 0, err
    assert (tmp_path / "zoo.models.txt").read_text().split() == ["m0", "m1", "m2"]
    assert "wrote probs (3, 120, 4)" in err
    rc, back, err = call(capsys, "estimate", str(path), "--csv")
    assert rc == 0, err
    pd.testing.assert_frame_equal(frame(back), frame(out))
    rank = _reference(capsys, d)
    rc, back, err = call(capsys, "rank", str(path), "--csv")
    assert rc == 0, err
    pd.testing.assert_frame_equal(frame(back), rank)


def test_logits_export_as_logits_and_a_shared_names_file(probs, capsys, tmp_path):
    d, P, _ = probs
    for m, p in enumerate(P):
        np.save(_mk(tmp_path / "lg") / f"m{m}.npy", np.log(p) + m)  # logits: any shift
    rc, out, err = call(capsys, "rank", str(tmp_path / "lg"), "--export",
                        str(tmp_path / "t.npz"), "--csv")
    assert rc == 0, err
    with np.load(tmp_path / "t.npz") as z:
        assert z.files == ["logits"] and z["logits"].shape == (3, 120, 4)
    (tmp_path / "t.models.txt").rename(tmp_path / "models.txt")  # the folder's names file
    rc, back, err = call(capsys, "rank", str(tmp_path / "t.npz"), "--csv")
    assert rc == 0, err
    pd.testing.assert_frame_equal(frame(back), frame(out))


def test_a_coda_style_tensor_without_names_is_refused_naming_the_names_file(probs, capsys,
                                                                             tmp_path):
    import torch

    _, P, _ = probs
    torch.save(torch.from_numpy(P).float(), tmp_path / "task.pt")
    rc, out, err = call(capsys, "rank", str(tmp_path / "task.pt"))
    assert rc == 2 and out == ""
    assert f"{tmp_path / 'task.models.txt'}" in err and "model names, one per line" in err
    (tmp_path / "task.models.txt").write_text("a\nb\n")
    rc, out, err = call(capsys, "rank", str(tmp_path / "task.pt"))
    assert rc == 2 and "2 model names for the 3 models" in err
    (tmp_path / "task.models.txt").write_text("a\nb\nc\n")
    rc, out, err = call(capsys, "rank", str(tmp_path / "task.pt"), "--json")
    assert rc == 0, err
    assert sorted(r["model"] for r in json.loads(out)) == ["a", "b", "c"]


def test_a_prediction_zoo_in_the_tensor_layout_equals_the_per_model_layout(probs, capsys,
                                                                           tmp_path):
    d, P, y = probs
    for m, p in enumerate(P):
        np.save(_mk(_mk(tmp_path / "per") / "predictions" / f"m{m}") / "id.npy", p)
    np.save(_mk(tmp_path / "per" / "labels") / "id.npy", y)
    rc, per, err = call(capsys, "estimate", str(tmp_path / "per"), "--csv")
    assert rc == 0, err
    tz = _mk(_mk(tmp_path / "tensor") / "predictions")
    rc, _, err = call(capsys, "estimate", str(tmp_path / "per"), "--export", str(tz / "id.npy"))
    assert rc == 0, err
    (tz / "id.models.txt").rename(tz / "models.txt")
    np.save(_mk(tmp_path / "tensor" / "labels") / "id.npy", y)
    rc, tensor, err = call(capsys, "estimate", str(tmp_path / "tensor"), "--csv")
    assert rc == 0, err
    pd.testing.assert_frame_equal(frame(tensor), frame(per))
    assert "true_accuracy" in frame(tensor)


def test_tensor_model_names_with_dots_find_their_features(probs, capsys, tmp_path):
    _, P, _ = probs
    np.save(tmp_path / "t.npy", P)
    names = ["resnet50.a1_in1k", "vit_b16.augreg", "m.v2"]  # timm-style names hold dots
    (tmp_path / "t.models.txt").write_text("\n".join(names) + "\n")
    feats = _mk(tmp_path / "feats")
    r = np.random.default_rng(0)
    for n in names:
        np.save(feats / f"{n}.npy", r.normal(size=(120, 5)))
    rc, out, err = call(capsys, "rank", str(tmp_path / "t.npy"), "--features", str(feats),
                        "--method", "Dispersion", "--csv")
    assert rc == 0, err
    assert sorted(frame(out)["model"]) == sorted(names)
    rc, _, err = call(capsys, "rank", str(tmp_path / "t.npy"), str(tmp_path / "t.npy"))
    assert rc == 2 and "model 'm.v2' comes from" in err
