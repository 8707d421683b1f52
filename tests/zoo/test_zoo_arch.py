"""Architectures: any input size and class count, named feature points, spec sizes."""

from __future__ import annotations

import pytest
import torch

from labelfree.zoo.arch import (
    ARCHS,
    LAF_MNIST_ARCHS,
    ArchError,
    build_model,
    feature_points,
    param_count,
)

SIZED_ARCHS = [a for a in ARCHS if a not in LAF_MNIST_ARCHS]


@pytest.mark.parametrize("arch", SIZED_ARCHS)
@pytest.mark.parametrize("shape", [(8, 8, 1), (16, 16, 3), (5, 7, 1), (1, 1, 3)])
def test_any_input_shape_and_class_count(arch, shape):
    torch.manual_seed(0)
    model = build_model(arch, shape, num_classes=7, width=4, depth=1).eval()
    h, w, c = shape
    out = model(torch.rand(3, c, h, w))
    assert out.shape == (3, 7)
    points = feature_points(model)
    assert set(points) == {"first", "penultimate"}
    assert points["penultimate"] == (model.head, "input")
    # each parameter is registered once (no aliases in the state dict)
    assert len(model.state_dict()) == len({id(t) for t in model.state_dict().values()})


def test_cnn_tiny_is_the_spec_network():
    # metamorphic.md 7.2: conv3x3 3->16, pool, 16->32, pool, 32->64, GAP, linear 64->10 (~25k params)
    model = build_model("cnn_tiny", (32, 32, 3), num_classes=10, width=16)
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [(c.in_channels, c.out_channels, c.kernel_size) for c in convs] == [
        (3, 16, (3, 3)),
        (16, 32, (3, 3)),
        (32, 64, (3, 3)),
    ]
    assert (model.head.in_features, model.head.out_features) == (64, 10)
    expected = (3 * 16 * 9 + 16) + (16 * 32 * 9 + 32) + (32 * 64 * 9 + 64) + (64 * 10 + 10)
    assert param_count(model) == expected == 24234


def test_width_and_depth_shape_the_networks():
    mlp = build_model("mlp", (8, 8, 1), 10, width=32, depth=3)
    assert sum(isinstance(m, torch.nn.Linear) for m in mlp.modules()) == 4
    assert build_model("mlp", (8, 8, 1), 10, width=32, depth=0).head.in_features == 64
    r1 = build_model("resnet", (8, 8, 1), 10, width=8, depth=1)
    r2 = build_model("resnet", (8, 8, 1), 10, width=8, depth=2)
    assert param_count(r2) > param_count(r1)
    assert r1.head.in_features == 32  # 4 x base width after three stages
    lenet1 = build_model("lenet", (8, 8, 1), 10, width=6, depth=0)  # LeNet-1-like: no hidden fc
    assert lenet1.head.in_features == 12 * 2 * 2


def test_bad_architecture_arguments_are_named():
    with pytest.raises(ArchError, match="unknown architecture 'vgg'"):
        build_model("vgg", (8, 8, 1), 10)
    with pytest.raises(ArchError, match="width=0"):
        build_model("mlp", (8, 8, 1), 10, width=0)
    with pytest.raises(ArchError, match="resnet needs depth"):
        build_model("resnet", (8, 8, 1), 10, depth=0)


def test_feature_points_of_a_foreign_model():
    # deferred: torchvision takes seconds to import; this test only
    from torchvision.models import resnet18

    model = resnet18(weights=None, num_classes=5)
    points = feature_points(model)
    assert points["first"] == (model.conv1, "output")
    assert points["penultimate"] == (model.fc, "input")


@pytest.mark.parametrize("arch", LAF_MNIST_ARCHS)
def test_laf_mnist_networks_run_on_mnist(arch):
    torch.manual_seed(0)
    model = build_model(arch, (28, 28, 1), num_classes=10).eval()
    assert model(torch.rand(3, 1, 28, 28)).shape == (3, 10)
    points = feature_points(model)
    assert points["penultimate"] == (model.head, "input")
    first = points["first"][0]
    assert isinstance(first, (torch.nn.ReLU, torch.nn.Tanh, torch.nn.Conv2d))
    assert len(model.state_dict()) == len({id(t) for t in model.state_dict().values()})


def test_laf_mnist_parameter_counts_are_the_keras_networks():
    # The LaF paper's Table 2 gives MNIST parameter counts 7,206-3,274,634: LeNet-1 (Model1.py)
    # and the notebook CNN (CNN_keras_mnist.ipynb) of the authors' trainModel/mnist; LeNet-5 and
    # the optimiser-study CNN counted by hand from their Keras layers (weights + biases).
    counts = {a: param_count(build_model(a, (28, 28, 1), 10)) for a in LAF_MNIST_ARCHS}
    assert counts["lenet1"] == 7206
    assert counts["nb_cnn"] == 3274634
    assert counts["lenet5"] == 156 + 2416 + 94200 + 10164 + 850
    assert counts["opt_cnn"] == 80 + 3216 + 784 * 256 + 256 + 2570
    assert min(counts.values()) == 7206 and max(counts.values()) == 3274634


def test_laf_mnist_network_on_too_small_input_is_named():
    with pytest.raises(ArchError, match="builder_full: input shape .* too small"):
        build_model("builder_full", (8, 8, 1), 10)
