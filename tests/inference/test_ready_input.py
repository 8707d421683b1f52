"""Test sets converted once (``prepare``) give the outputs of per-batch conversion (issue 19).

``infer_group`` converts each set once and runs every model of the group on slices of the ready
tensor, as a bare ``model(t[s:s + b])`` loop does. The conversion is elementwise, so the logits
and features must be bitwise those of ``predict`` on the uint8 images, which are bitwise those
of the bare loop (tests/inference/test_bare_loop.py); the batches must keep the standard NCHW
strides of issue 22 (tests/zoo/test_layout.py).
"""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
from torch import nn

from labelfree import inference
from labelfree.inference import InferenceError, infer_group, predict, prepare
from labelfree.store import read_logits, write_image_set
from labelfree.zoo.arch import ARCHS, FEATURES, LAF_MNIST_ARCHS, build_model
from labelfree.zoo.io import save_model
from labelfree.zoo.preprocess import NORMALISATIONS

#: Architectures that take a 9x9 input (the LaF authors' MNIST networks need 28x28; their
#: inference path is probed at that size in tests/zoo/test_layout.py).
SIZED = tuple(a for a in ARCHS if a not in LAF_MNIST_ARCHS)


def images(c: int, n: int = 45, hw: int = 9) -> np.ndarray:
    return np.random.default_rng(c).integers(0, 256, (n, hw, hw, c), dtype=np.uint8)


@pytest.mark.parametrize("kind", ["scale01", "center", *NORMALISATIONS])
@pytest.mark.parametrize("arch", SIZED)
def test_ready_input_gives_the_outputs_of_per_batch_conversion(arch, kind):
    x = images(3)
    torch.manual_seed(0)
    model = build_model(arch, (9, 9, 3), 6, 4, 1).eval()
    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    model.register_forward_pre_hook(lambda m, a: seen.append((tuple(a[0].shape), a[0].stride())))
    per_batch = predict(model, x, kind, 16, "cpu", FEATURES)  # 45 = 16 + 16 + 13
    ready = prepare(x, kind, 3, "cpu")
    got = predict(model, ready, kind, 16, "cpu", FEATURES)
    for k in ("logits", *FEATURES):
        np.testing.assert_array_equal(got[k], per_batch[k])
    assert [s for s, _ in seen[3:]] == [(16, 3, 9, 9), (16, 3, 9, 9), (13, 3, 9, 9)]
    assert all(st == torch.empty(s).stride() for s, st in seen[3:])  # issue 22 layout


def test_a_grey_set_converted_for_a_three_channel_model():
    x = images(1)
    torch.manual_seed(0)
    model = build_model("lenet", (9, 9, 3), 4, 4, 1).eval()
    np.testing.assert_array_equal(
        predict(model, prepare(x, "scale01", 3, "cpu"), "scale01", 8, "cpu")["logits"],
        predict(model, x, "scale01", 8, "cpu")["logits"],
    )


def test_a_ready_input_made_for_another_model_is_refused():
    x = images(1)
    torch.manual_seed(0)
    model = build_model("lenet", (9, 9, 1), 4, 4, 1)
    with pytest.raises(InferenceError, match="preprocessing 'center'"):
        predict(model, prepare(x, "center", 1, "cpu"), "scale01", 8, "cpu")
    with pytest.raises(InferenceError, match="3 channels, model wants 1"):
        predict(model, prepare(x, "scale01", 3, "cpu"), "scale01", 8, "cpu")


def test_a_model_that_changes_its_input_in_place_is_refused():
    # the converted set is shared by the group's models: a later model must see the same input
    class Inplace(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.head = nn.Linear(81, 2)

        def forward(self, t: torch.Tensor) -> torch.Tensor:
            return self.head(t.mul_(2).flatten(1))

    with pytest.raises(InferenceError, match="changed its input in place"):
        predict(Inplace(), prepare(images(1), "scale01", 1, "cpu"), "scale01", 8, "cpu")


@pytest.mark.parametrize("group_models", [1, 3])
def test_infer_group_writes_the_logits_of_predict_on_the_uint8_set(
    tmp_path, monkeypatch, group_models
):
    # 3 models share one conversion per set; 1 model converts batch by batch as before
    conversions: list[int] = []

    def counted(x, *args):
        conversions.append(len(x))
        return prepare(x, *args)

    monkeypatch.setattr(inference, "prepare", counted)
    x, x2 = images(1), images(1, n=20)
    dirs, refs = [], []
    for i in range(group_models):
        torch.manual_seed(i)
        arch = SIZED[i % len(SIZED)]
        model = build_model(arch, (9, 9, 1), 5, 4, 1).eval()
        meta = {"model": f"m{i}", "arch": arch, "width": 4, "depth": 1, "num_classes": 5,
                "input_shape": [9, 9, 1], "preprocessing": "scale01", "family": "local"}
        save_model(tmp_path / f"m{i}", model, meta)
        dirs.append(tmp_path / f"m{i}")
        refs.append({t: predict(model, v, "scale01", 16, "cpu")["logits"]
                     for t, v in (("a", x), ("b", x2))})
    write_image_set(tmp_path / "a.npz", x, np.zeros(len(x), np.int64))
    write_image_set(tmp_path / "b.npz", x2, np.zeros(len(x2), np.int64))
    outs = [tmp_path / f"out{i}.npz" for i in range(group_models)]
    infer_group(dirs, [("a", tmp_path / "a.npz"), ("b", tmp_path / "b.npz")], outs,
                batch_size=16, device="cpu", progress_file=io.StringIO())
    assert conversions == ([45, 20] if group_models > 1 else [])
    for out, ref in zip(outs, refs, strict=True):
        for t in ("a", "b"):
            np.testing.assert_array_equal(read_logits(out, t), ref[t])


@pytest.mark.parametrize("arch", ARCHS)
def test_first_parameter_is_the_first_of_parameters(arch):
    # _eval's pre-order descent must find what next(model.parameters()) gives (the channel
    # check and model_channels read it)
    model = build_model(arch, (28, 28, 3), 5, 4, 2)  # 28x28: every architecture fits
    assert inference._eval(model) is next(model.parameters())
    assert inference._first_parameter(nn.ReLU()) is None


def test_the_first_parameter_in_pre_order_decides_the_channels():
    # breadth first, the head's 2-d weight would come first (one level up) and the check of a
    # convolution's input channels would be skipped; pre-order finds the convolution
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Sequential(nn.Sequential(nn.Conv2d(3, 2, 3)), nn.Flatten()), nn.Linear(98, 4)
    )
    assert inference._first_parameter(model) is model[0][0][0].weight
    with pytest.raises(InferenceError, match="1 channels, model wants 3"):
        predict(model, prepare(images(1), "scale01", 1, "cpu"), "scale01", 8, "cpu")
    got = predict(model, prepare(images(1), "scale01", 3, "cpu"), "scale01", 8, "cpu")
    np.testing.assert_array_equal(
        got["logits"], predict(model, images(1), "scale01", 8, "cpu")["logits"]
    )


def test_a_submodule_left_in_training_mode_is_put_in_eval_mode():
    # the flags are read breadth first: a deep BatchNorm in training mode must be found, or it
    # would normalise with the batch's statistics and update its running ones
    torch.manual_seed(0)
    model = build_model("resnet", (9, 9, 1), 5, 4, 1).eval()
    ref = predict(model, prepare(images(1), "scale01", 1, "cpu"), "scale01", 16, "cpu")
    deep = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)][-1]
    deep.train()
    stats = deep.running_mean.clone()
    got = predict(model, prepare(images(1), "scale01", 1, "cpu"), "scale01", 16, "cpu")
    assert not any(m.training for m in model.modules())
    torch.testing.assert_close(deep.running_mean, stats, rtol=0, atol=0)
    np.testing.assert_array_equal(got["logits"], ref["logits"])


@pytest.mark.parametrize("flush_batches", [1, 2, 100])
def test_logits_written_in_runs_of_batches_keep_their_rows(monkeypatch, flush_batches):
    # predict copies the held batch logits into its output every _FLUSH_BYTES; the rows of each
    # run come from the batch bounds: 45 inputs in batches of 8 = 5 x 8 + 5 (a short last run)
    x = images(1)
    torch.manual_seed(0)
    model = build_model("mlp", (9, 9, 1), 5, 4, 1).eval()
    t = prepare(x, "scale01", 1, "cpu")
    with torch.inference_mode():
        ref = torch.cat([model(t.tensor[s : s + 8]) for s in range(0, len(x), 8)]).numpy()
    monkeypatch.setattr(inference, "_FLUSH_BYTES", flush_batches * 8 * 5 * 4)
    np.testing.assert_array_equal(predict(model, t, "scale01", 8, "cpu")["logits"], ref)


def test_a_ready_input_on_another_device_is_refused():
    # predict checks the CPU case by Tensor.is_cpu (no device-type strings); a tensor on the
    # meta device stands in for a GPU one on a machine without a GPU
    model = build_model("mlp", (9, 9, 1), 5, 4, 1).eval()
    ready = prepare(images(1), "scale01", 1, "cpu")
    moved = inference.ModelInput(ready.tensor.to("meta"), "scale01", 1)
    with pytest.raises(InferenceError, match="input converted on meta, inference runs on cpu"):
        predict(model, moved, "scale01", 8, "cpu")
