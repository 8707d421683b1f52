"""Messages name the real culprit (issue 14, "Messages blame the wrong thing"): an empty test
set, a bad `train_device`, logits of the wrong K and a truncated weights file."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from labelfree.accuracy import AccuracyError, accuracy_long
from labelfree.device import DeviceError, resolve_device
from labelfree.inference import InferenceError, infer_group
from labelfree.store import ArtefactError, write_image_set, write_inference, write_labels
from labelfree.zoo.arch import build_model
from labelfree.zoo.io import load_model, save_model
from labelfree.zoo.local import build_bundle, train_local_zoo

META = {"arch": "mlp", "width": 4, "depth": 1, "num_classes": 10, "input_shape": [8, 8, 1],
        "preprocessing": "scale01", "family": "local"}


def _saved_model(d, name="mlp4"):
    torch.manual_seed(0)
    save_model(d, build_model("mlp", (8, 8, 1), 10, 4, 1).eval(), {"model": name, **META})
    return d


def test_empty_test_set_blames_the_test_set_not_the_model(tmp_path, digits_small):
    x, y = digits_small
    write_image_set(tmp_path / "id.npz", x[:20], y[:20])
    write_image_set(tmp_path / "empty.npz", x[:0], y[:0])
    model = _saved_model(tmp_path / "zoo" / "mlp4")
    with pytest.raises(InferenceError) as err:
        infer_group([model], [("id", tmp_path / "id.npz"), ("empty", tmp_path / "empty.npz")],
                    [tmp_path / "out.npz"], device="cpu")
    msg = str(err.value)
    # before: "<model dir>: model gives 0 logits, meta.json says 10"
    assert msg.startswith(f"{tmp_path / 'empty.npz'}: test set 'empty' is empty"), msg
    assert "model gives" not in msg and not (tmp_path / "out.npz").exists()


def test_empty_id_set_of_a_checkpoint_zoo_is_named(tmp_path, digits_small):
    x, y = digits_small
    write_image_set(tmp_path / "id.npz", x[:0], y[:0])
    row = {"model": "c", "source": "checkpoint", "arch": "mlp", "width": 4, "depth": 1,
           "weights": str(tmp_path / "w.safetensors"), "preprocessing": "scale01"}
    with pytest.raises(ValueError, match=r"id\.npz: the id test set is empty"):
        build_bundle("z", [row], [tmp_path / "out"], None, tmp_path / "id.npz", 0.1, 0)


def test_bad_train_device_is_reported_as_the_zoo_key(tmp_path, digits_small):
    x, y = digits_small
    write_image_set(tmp_path / "train.npz", x[:60], y[:60])
    row = {"model": "m", "arch": "mlp", "width": 4, "depth": 1, "optimizer": "adam", "lr": 1e-3,
           "epochs": 1, "batch_size": 32, "data_fraction": 1.0, "seed": 0, "batch_seed": None,
           "preprocessing": "scale01", "label_map": "", "source": "local", "weights": ""}
    with pytest.raises(DeviceError) as err:
        train_local_zoo("myzoo", [row], tmp_path / "train.npz", [tmp_path / "m"], 0.1, 0,
                        device="tpu")
    assert "zoos.myzoo.train_device='tpu'" in str(err.value)
    assert "inference.device" not in str(err.value)
    if not torch.cuda.is_available():  # the case the issue met: cuda asked, none present
        with pytest.raises(DeviceError, match=r"zoos\.myzoo\.train_device='cuda' but no CUDA"):
            resolve_device("cuda", key="zoos.myzoo.train_device")


def _logits_file(path, k, n=12, seed=0):
    z = np.random.default_rng(seed).normal(size=(n, k)).astype(np.float32)
    write_inference(path, {"id": {"logits": z}})
    return path


def test_logits_of_the_wrong_k_blame_the_model_not_the_labels(tmp_path):
    y = np.arange(12) % 10  # a 10-class test set, labels 0..9
    write_labels(tmp_path / "id.npz", y, 12)
    good = _logits_file(tmp_path / "good.npz", 10)
    short = _logits_file(tmp_path / "short.npz", 5, seed=1)
    with pytest.raises(AccuracyError) as err:
        accuracy_long(["good", "short"], ["id"], [[good], [short]], [tmp_path / "id.npz"])
    msg = str(err.value)
    # before: "<labels>: labels out of range [0, 5) for short.npz"
    assert msg.startswith(f"{short}: model 'short' gives 5 logits"), msg
    assert "other models of the zoo give [10]" in msg


def test_labels_beyond_every_model_still_blame_the_labels(tmp_path):
    y = np.full(12, 99)
    write_labels(tmp_path / "id.npz", y, 12)
    a, b = _logits_file(tmp_path / "a.npz", 10), _logits_file(tmp_path / "b.npz", 10, seed=2)
    with pytest.raises(AccuracyError) as err:
        accuracy_long(["a", "b"], ["id"], [[a], [b]], [tmp_path / "id.npz"])
    assert str(err.value).startswith(f"{tmp_path / 'id.npz'}: labels out of range [0, 10)")


def test_unlabelled_test_set_gives_nan_accuracy(tmp_path):
    write_labels(tmp_path / "u.npz", None, 12)
    a = _logits_file(tmp_path / "a.npz", 10)
    long = accuracy_long(["a"], ["id"], [[a]], [tmp_path / "u.npz"])
    assert long["n"].item() == 12 and np.isnan(long["accuracy"].item())


def test_truncated_weights_error_names_the_file(tmp_path):
    d = _saved_model(tmp_path / "zoo" / "mlp4")
    w = d / "weights.safetensors"
    w.write_bytes(w.read_bytes()[:50])  # a copy killed midway
    with pytest.raises(ArtefactError) as err:
        load_model(d)
    assert str(err.value).startswith(f"{w}: not a readable safetensors file"), str(err.value)
