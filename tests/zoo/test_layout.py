"""Every tensor that enters a model is standard-strided NCHW (issue 22).

NHWC -> NCHW by ``permute`` leaves strides that PyTorch also reads as channels_last; with one
channel the permuted tensor even counts as contiguous, so ``.contiguous()`` keeps it. oneDNN then
takes its channels_last convolution kernels, whose backward pass corrupts the heap on CPUs
without AVX-512 (SIGABRT in ``zoo_train_digits``). That crash only shows on such CPUs, so these
tests assert the layout itself, which is the same on every machine: each entry point's model
inputs, and every ``conv2d`` input inside the models, must have the strides of a fresh
contiguous tensor of their shape. Reverting ``standard_nchw`` in preprocess.py fails them.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
import yaml

from labelfree.inference import predict
from labelfree.pace.inputs import adversarial
from labelfree.zoo import train as train_module
from labelfree.zoo.arch import ARCHS, LAF_MNIST_ARCHS, build_model
from labelfree.zoo.batched import BatchedCNNSpec, train_batched_cnn
from labelfree.zoo.preprocess import NORMALISATIONS, preprocess, standard_nchw
from labelfree.zoo.train import TrainSpec, train_model

CHANNELS = (1, 3)
#: The LaF authors' MNIST networks are written for 28x28 inputs (their kernels and pools do not
#: fit 8x8); the other architectures take any size and are probed at 8x8.
GENERIC = tuple(a for a in ARCHS if a not in LAF_MNIST_ARCHS)


def side(arch: str) -> int:
    """Image side each architecture is probed at."""
    return 28 if arch in LAF_MNIST_ARCHS else 8


def fresh_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The reference: what torch gives a newly allocated contiguous tensor of ``shape``."""
    return torch.empty(shape).stride()


def assert_standard(seen: list[tuple[tuple[int, ...], tuple[int, ...]]], what: str) -> None:
    assert seen, f"{what}: no tensor reached the model (the probe is not wired)"
    bad = [(s, st) for s, st in seen if st != fresh_strides(s)]
    assert not bad, f"{what}: non-standard strides (shape, strides): {bad[:3]}"


@pytest.fixture
def conv_inputs(monkeypatch):
    """Shapes and strides of every 4-D input of ``F.conv2d`` (nn.Conv2d calls it too)."""
    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    original = F.conv2d

    def recording(inp, *args, **kwargs):
        seen.append((tuple(inp.shape), inp.stride()))
        return original(inp, *args, **kwargs)

    monkeypatch.setattr(F, "conv2d", recording)
    return seen


def record_model_inputs(model: torch.nn.Module, seen: list) -> torch.nn.Module:
    """Forward pre-hook: the tensor the entry point hands the model (mlp has no conv)."""

    def hook(_module, args):
        seen.append((tuple(args[0].shape), args[0].stride()))

    model.register_forward_pre_hook(hook)
    return model


def images(c: int, n: int = 24, hw: int = 8) -> tuple[np.ndarray, np.ndarray]:
    gen = np.random.default_rng(c)
    x = gen.integers(0, 256, size=(n, hw, hw, c), dtype=np.uint8)
    return x, np.arange(n, dtype=np.int64) % 4


def test_reference_strides_differ_for_the_permuted_one_channel_batch():
    # The bug this file guards against, stated as torch's behaviour (so the probe can see it):
    # a 1-channel permute passes as contiguous but does not have fresh strides.
    t = torch.zeros(4, 8, 8, 1).permute(0, 3, 1, 2)
    assert t.is_contiguous() and t.contiguous().stride() != fresh_strides(t.shape)
    assert standard_nchw(t).stride() == fresh_strides(t.shape)
    ok = torch.zeros(4, 1, 8, 8)
    assert standard_nchw(ok) is ok  # no copy when already standard


@pytest.mark.parametrize("c", CHANNELS)
@pytest.mark.parametrize("kind", ["scale01", "center", *NORMALISATIONS])
def test_preprocess_returns_standard_nchw(kind, c):
    x, _ = images(c)
    out = preprocess(x, kind, channels=3 if kind in NORMALISATIONS else c)
    assert out.dtype == torch.float32 and out.shape[1] in (1, 3)
    assert out.stride() == fresh_strides(tuple(out.shape))
    # float (differentiable) input, as PACE's FGSM feeds it
    outf = preprocess(torch.from_numpy(x).float(), kind, channels=3 if kind in NORMALISATIONS else c)
    assert outf.stride() == fresh_strides(tuple(outf.shape))


@pytest.mark.parametrize("c", CHANNELS)
def test_torchvision_preprocessing_returns_standard_nchw(c):
    x, _ = images(c, n=2, hw=40)
    out = preprocess(x, "torchvision:ResNet18_Weights.IMAGENET1K_V1", channels=3)
    assert out.stride() == fresh_strides(tuple(out.shape))


@pytest.mark.parametrize("c", CHANNELS)
@pytest.mark.parametrize("arch", ARCHS)
def test_training_feeds_standard_layout(arch, c, conv_inputs, monkeypatch):
    model_inputs: list = []
    real_init = train_module.init_model
    monkeypatch.setattr(
        train_module,
        "init_model",
        lambda *a, **k: record_model_inputs(real_init(*a, **k), model_inputs),
    )
    x, y = images(c, hw=side(arch))
    spec = TrainSpec(arch=arch, width=4, epochs=1, batch_size=8)
    train_model(spec, x, y, x[:8], y[:8], num_classes=4)
    assert_standard(model_inputs, f"train_model({arch}, C={c}) model input")
    if arch != "mlp":
        assert_standard(conv_inputs, f"train_model({arch}, C={c}) conv2d input")


@pytest.mark.parametrize("c", CHANNELS)
@pytest.mark.parametrize("arch", ARCHS)
def test_inference_and_features_feed_standard_layout(arch, c, conv_inputs):
    torch.manual_seed(0)
    model_inputs: list = []
    hw = side(arch)
    model = record_model_inputs(build_model(arch, (hw, hw, c), 4, width=4), model_inputs)
    x, _ = images(c, hw=hw)
    out = predict(model, x, batch_size=10, device="cpu", features=("first", "penultimate"))
    assert out["logits"].shape == (len(x), 4)
    assert_standard(model_inputs, f"predict({arch}, C={c}) model input")
    if arch != "mlp":
        assert_standard(conv_inputs, f"predict({arch}, C={c}) conv2d input")


@pytest.mark.parametrize("c", CHANNELS)
def test_pace_adversarial_feeds_standard_layout(c, conv_inputs):
    torch.manual_seed(0)
    model_inputs: list = []
    model = record_model_inputs(build_model("lenet", (8, 8, c), 4, width=4), model_inputs)
    x, y = images(c, n=6)
    adversarial(model, x, y, method="bim", steps=2)
    assert_standard(model_inputs, f"pace adversarial C={c} model input")
    assert_standard(conv_inputs, f"pace adversarial C={c} conv2d input")


@pytest.mark.parametrize("c", CHANNELS)
def test_batched_cnn_zoo_feeds_standard_layout(c, conv_inputs):
    x, y = images(c, n=16)
    spec = BatchedCNNSpec(conv=(4, 2), hidden=(8,), epochs=1, batch_size=8)
    train_batched_cnn(
        x.astype(np.float32) / 255, y, [0, 1], [2, 3], spec, {"test": (x[:4] / 255, None)},
        num_classes=4,
    )
    assert_standard(conv_inputs, f"train_batched_cnn C={c} conv2d input")


# ------------------------------------------------------------------ training in a subprocess

TRAIN_STEPS = """
import sys, numpy as np, torch
from labelfree.zoo.arch import build_model
from labelfree.zoo.preprocess import preprocess
arch, c, hw = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(1)
x = np.random.default_rng(0).integers(0, 256, size=(64, hw, hw, c), dtype=np.uint8)
y = torch.arange(64) % 10
for width in map(int, sys.argv[4:]):
    torch.manual_seed(0)
    model = build_model(arch, (hw, hw, c), 10, width=width)
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    for _ in range(20):
        loss = torch.nn.functional.cross_entropy(model(preprocess(x, "scale01", channels=c)), y)
        opt.zero_grad(); loss.backward(); opt.step()
    assert torch.isfinite(loss), (arch, width)
print("ok")
"""


def configured_widths() -> dict[str, list[int]]:
    """Every (arch, width) a shipped config trains: rows and grids of config/**/*.yaml."""
    found: dict[str, set[int]] = {a: set() for a in ARCHS}

    def walk(node):
        if isinstance(node, dict):
            if node.get("arch") in ARCHS and "width" in node:
                w = node["width"]
                found[node["arch"]].update(w if isinstance(w, list) else [w])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    root = Path(__file__).resolve().parents[2] / "config"
    for path in sorted(root.rglob("*.yaml")):
        if path.parent.name != "schema":
            walk(yaml.safe_load(path.read_text()))
    return {a: sorted(int(w) for w in ws) for a, ws in found.items()}


def test_configs_name_every_architecture():
    """Every generic architecture is trained by a shipped config at some width (the subprocess
    test below covers those widths); every LaF MNIST network (no width) by a shipped sheet."""
    widths = configured_widths()
    assert all(widths[a] for a in GENERIC), widths
    root = Path(__file__).resolve().parents[2] / "config"
    sheets = "\n".join(p.read_text() for p in root.rglob("*.tsv"))
    named = {line.split("\t")[2] for line in sheets.splitlines() if line.count("\t") >= 2}
    assert set(LAF_MNIST_ARCHS) <= named, sorted(set(LAF_MNIST_ARCHS) - named)


@pytest.mark.parametrize("c", CHANNELS)
@pytest.mark.parametrize("arch", ARCHS)
def test_twenty_training_steps_survive_in_a_subprocess(arch, c):
    """Adam steps through preprocess for every configured width; an abort (the AVX2 heap
    corruption was SIGABRT) fails this one test with the signal named, not the whole run."""
    widths = configured_widths()[arch] or [32]  # the LaF MNIST networks take no width
    proc = subprocess.run(
        [sys.executable, "-c", TRAIN_STEPS, arch, str(c), str(side(arch)), *map(str, widths)],
        capture_output=True, text=True, timeout=300,
    )
    if proc.returncode < 0:
        pytest.fail(
            f"{arch} C={c} widths {widths}: killed by {signal.Signals(-proc.returncode).name}\n"
            f"{proc.stderr[-2000:]}"
        )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]
