"""Seeded training: exact reproducibility, independent init/batch seeds, label maps, meta.json."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
import torch

from labelfree.store import load_json, write_image_set
from labelfree.zoo.io import load_model, state_dict_hash
from labelfree.zoo.local import train_local_zoo
from labelfree.zoo.train import (
    OPTIMIZERS,
    TrainError,
    TrainSpec,
    _optimizer,
    apply_label_map,
    parse_label_map,
    train_model,
    validation_split,
)


def _train(data, n=240, **kw):
    x, y = data
    spec = TrainSpec(**{"arch": "mlp", "width": 16, "epochs": 2, "batch_size": 32, **kw})
    return train_model(spec, x[:n], y[:n], x[240:], y[240:], num_classes=10)


def _hash(res):
    return state_dict_hash(res.model.state_dict())


def test_same_seeds_give_bitwise_identical_weights(digits_small):
    for arch in ("lenet", "resnet"):
        a = _train(digits_small, n=96, arch=arch, width=4, epochs=1, seed=3, batch_seed=5)
        b = _train(digits_small, n=96, arch=arch, width=4, epochs=1, seed=3, batch_seed=5)
        assert _hash(a) == _hash(b)
        assert a.meta["val_accuracy"] == b.meta["val_accuracy"]


def test_dropout_networks_train_reproducibly_and_leave_the_global_rng_alone(digits_small):
    # opt_cnn has dropout: its masks come from torch's RNG, forked and seeded by the data seed.
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    a = _train(digits_small, n=96, arch="opt_cnn", epochs=1, seed=3)
    assert torch.equal(torch.rand(3), before)
    b = _train(digits_small, n=96, arch="opt_cnn", epochs=1, seed=3)
    c = _train(digits_small, n=96, arch="opt_cnn", epochs=1, seed=3, batch_seed=4)
    assert _hash(a) == _hash(b)
    assert a.meta["init_sha256"] == c.meta["init_sha256"] and _hash(a) != _hash(c)


def test_batch_seed_changes_only_the_data_order(digits_small):
    # alpha-trimming.md, training zoo semantics 16: S_batch shares the initial weights.
    a = _train(digits_small, seed=0, batch_seed=1)
    b = _train(digits_small, seed=0, batch_seed=2)
    assert a.meta["init_sha256"] == b.meta["init_sha256"]
    assert a.meta["batch_order_sha256"] != b.meta["batch_order_sha256"]
    assert _hash(a) != _hash(b)


def test_seed_changes_only_the_initialisation(digits_small):
    # ... and S_init shares the batch sequence.
    a = _train(digits_small, seed=1, batch_seed=7)
    b = _train(digits_small, seed=2, batch_seed=7)
    assert a.meta["init_sha256"] != b.meta["init_sha256"]
    assert a.meta["batch_order_sha256"] == b.meta["batch_order_sha256"]
    assert _hash(a) != _hash(b)


def test_batch_seed_defaults_to_seed(digits_small):
    a = _train(digits_small, seed=4)
    b = _train(digits_small, seed=4, batch_seed=4)
    assert _hash(a) == _hash(b) and a.meta["batch_seed"] == 4


def test_training_leaves_the_global_rng_alone(digits_small):
    torch.manual_seed(123)
    before = torch.rand(3)
    torch.manual_seed(123)
    _train(digits_small, seed=9)
    assert torch.equal(torch.rand(3), before)


def test_data_fraction_subsets_and_validation_split(digits_small):
    res = _train(digits_small, data_fraction=0.25)
    assert res.meta["n_train_used"] == 60
    _, y = digits_small
    tr, va = validation_split(y, 0.2, seed=0)
    assert len(np.intersect1d(tr, va)) == 0 and len(tr) + len(va) == len(y)
    assert np.array_equal(va, validation_split(y, 0.2, seed=0)[1])
    # stratified: every class has ~20 % of its images in validation
    share = np.bincount(y[va], minlength=10) / np.bincount(y, minlength=10)
    assert np.all(np.abs(share - 0.2) < 0.05)


def test_label_map_trains_a_swap_mutant(digits_small):
    assert parse_label_map("0:8,8:0,1:7,7:1") == {0: 8, 8: 0, 1: 7, 7: 1}
    assert parse_label_map("") == {}
    assert apply_label_map(np.array([0, 1, 8, 5]), {0: 8, 8: 0}).tolist() == [8, 1, 0, 5]
    with pytest.raises(TrainError, match="'0-8'"):
        parse_label_map("0-8")
    with pytest.raises(TrainError, match=r"\[0, 10\)"):
        parse_label_map("0:12", num_classes=10)
    x, y = digits_small
    res = _train(digits_small, arch="mlp", width=64, epochs=10, lr=0.01, label_map="0:1,1:0")
    with torch.no_grad():
        logits = res.model(torch.from_numpy(x[:240]).permute(0, 3, 1, 2).float() / 255)
    pred, yt = logits.argmax(1).numpy(), y[:240]
    # on its training images the mutant calls zeros "1" and ones "0" (pace.md 7, IDs 4-6)
    assert (pred[yt == 0] == 1).mean() > 0.8 and (pred[yt == 1] == 0).mean() > 0.8
    assert res.meta["val_accuracy_mapped"] > res.meta["val_accuracy"]
    assert res.meta["label_map_dict"] == {"0": 1, "1": 0}


def test_every_optimizer_trains(digits_small):
    """Every optimizer name moves the same initial weights, each to its own place (a name mapped
    to another optimizer would repeat a state), with a finite loss; SGD carries momentum 0.9."""
    runs = {opt: _train(digits_small, optimizer=opt, lr=0.01, epochs=1) for opt in OPTIMIZERS}
    init = {r.meta["init_sha256"] for r in runs.values()}
    assert len(init) == 1
    hashes = {opt: _hash(r) for opt, r in runs.items()}
    assert init.isdisjoint(hashes.values())
    assert len(set(hashes.values())) == len(OPTIMIZERS), hashes
    assert all(np.isfinite(r.meta["final_train_loss"]) for r in runs.values())

    sgd = _optimizer("sgd", [torch.zeros(1, requires_grad=True)], 0.01)
    assert isinstance(sgd, torch.optim.SGD) and sgd.defaults["momentum"] == 0.9
    assert isinstance(_optimizer("NAdam", [torch.zeros(1, requires_grad=True)], 0.1),
                      torch.optim.NAdam)


def test_bad_training_arguments(digits_small):
    with pytest.raises(TrainError, match="unknown optimizer 'lbfgs'"):
        _train(digits_small, optimizer="lbfgs")
    with pytest.raises(TrainError, match="data_fraction=0"):
        _train(digits_small, data_fraction=0.0)


def test_epoch_callback_and_multilabel(digits_small):
    seen = []
    x, y = digits_small
    multi = np.zeros((len(y), 10), np.int64)
    multi[np.arange(len(y)), y] = 1
    multi[np.arange(len(y)), (y + 1) % 10] = 1
    spec = TrainSpec(arch="cnn_tiny", width=4, epochs=3, batch_size=64)
    res = train_model(
        spec, x[:240], multi[:240], x[240:], multi[240:],
        on_epoch_end=lambda e, m, s: seen.append((e, s["loss"], s["val_accuracy"])),
    )
    assert [e for e, _, _ in seen] == [0, 1, 2]
    assert res.meta["task"] == "multi" and res.meta["num_classes"] == 10


def test_local_zoo_writes_models_with_meta(tmp_path, digits_small):
    x, y = digits_small
    write_image_set(tmp_path / "train.npz", x, y)
    rows = [
        {"model": "a", "arch": "mlp", "width": 8, "depth": 1, "optimizer": "adam", "lr": 1e-3,
         "epochs": 2, "batch_size": 32, "data_fraction": 1.0, "seed": 0, "batch_seed": None,
         "label_map": "", "preprocessing": "scale01"},
        {"model": "b", "arch": "lenet", "width": 4, "depth": 1, "optimizer": "sgd", "lr": 0.05,
         "epochs": 1, "batch_size": 32, "data_fraction": 0.5, "seed": 1, "batch_seed": 2,
         "label_map": "3:9,9:3", "preprocessing": "scale01"},
    ]
    log = io.StringIO()
    dirs = [tmp_path / "zoo" / r["model"] for r in rows]
    metas = train_local_zoo("z", rows, tmp_path / "train.npz", dirs, 0.2, 0, progress_file=log)
    assert "train z" in log.getvalue()  # tqdm progress goes to the job log
    meta = load_json(dirs[1] / "meta.json")
    for key in ("arch", "params", "seed", "batch_seed", "train_data", "val_accuracy",
                "train_time_s", "label_map", "num_classes", "input_shape", "preprocessing",
                "optimizer", "epochs", "data_fraction", "weights_sha256"):
        assert key in meta, key
    assert meta["arch"] == "lenet" and meta["seed"] == 1 and meta["batch_seed"] == 2
    assert meta["label_map"] == "3:9,9:3" and meta["input_shape"] == [8, 8, 1]
    assert meta["num_classes"] == 10 and meta["train_data"]["n_val"] == 60
    assert 0 <= meta["val_accuracy"] <= 1 and meta == metas[1]
    model, meta2 = load_model(dirs[1])
    assert not model.training and meta2 == meta
    assert state_dict_hash(model.state_dict()) == meta["weights_sha256"]


def test_local_zoo_trains_rows_differing_in_epochs_as_one_run(tmp_path, digits_small):
    # A zoo trains rows that differ only in `epochs` as one run saved at each epoch count; each
    # model (weights and meta.json, train time aside) must be the one its row trains alone, and a
    # row of another seed, or of 0 epochs, must not be taken from that run.
    x, y = digits_small
    write_image_set(tmp_path / "train.npz", x[:200], y[:200])
    base = {"arch": "lenet", "width": 4, "depth": 1, "optimizer": "adam", "lr": 1e-3,
            "batch_size": 32, "data_fraction": 0.8, "seed": 0, "batch_seed": None,
            "label_map": "", "preprocessing": "scale01"}
    plan = [("e3", 3, 0), ("e1", 1, 0), ("s1", 2, 1), ("e0", 0, 0), ("e2", 2, 0), ("e3b", 3, 0)]
    rows = [{**base, "model": m, "epochs": e, "seed": s} for m, e, s in plan]
    dirs = [tmp_path / "zoo" / r["model"] for r in rows]
    log = io.StringIO()
    metas = train_local_zoo("z", rows, tmp_path / "train.npz", dirs, 0.2, 0, progress_file=log)
    assert "| 5/5 " in log.getvalue()  # epochs run: 3 (the seed-0 run) + 2 (seed 1), not 11
    for row, d, meta in zip(rows, dirs, metas, strict=True):
        alone = tmp_path / "alone" / row["model"]
        (solo,) = train_local_zoo("z", [row], tmp_path / "train.npz", [alone], 0.2, 0)
        assert (d / "weights.safetensors").read_bytes() == (alone / "weights.safetensors").read_bytes()
        same = [json.dumps({**m, "train_time_s": 0}, sort_keys=True) for m in (meta, solo)]
        assert same[0] == same[1], row["model"]  # as JSON: NaN loss of the 0-epoch row
    hashes = [m["weights_sha256"] for m in metas]
    assert len(set(hashes)) == 5 and hashes[0] == hashes[5]


def test_shorter_run_equals_the_longer_runs_epoch_checkpoint(digits_small):
    # Rows that differ only in `epochs` are the per-epoch checkpoints of one run (the data order
    # of epoch k does not depend on the total), as the metamorphic RQ6 zoo relies on.
    states = {}

    def keep(epoch, model, stats):
        states[epoch] = state_dict_hash(model.state_dict())

    x, y = digits_small
    spec = TrainSpec(arch="lenet", width=4, epochs=3, batch_size=32, seed=1)
    train_model(spec, x[:96], y[:96], num_classes=10, on_epoch_end=keep)
    short = _train(digits_small, n=96, arch="lenet", width=4, epochs=2, seed=1)
    assert _hash(short) == states[1] != states[2]
