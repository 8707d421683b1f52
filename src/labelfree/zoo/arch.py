"""Architectures of local zoos: ``mlp``, ``lenet``, ``resnet``, ``cnn_tiny``, and the MNIST
networks of the LaF authors' training scripts (:data:`LAF_MNIST_ARCHS`, docs/laf.md, "A zoo like
the paper's").

Every model takes float NCHW input of any size ``(C, H, W)`` and returns ``K`` logits. Each
exposes two named feature points (used by PACE's FL/LHL features, PACE paper Section 3.1, and by
SYP):

- ``first``: the output of the first layer with trainable weights, after its activation
  (PACE "FL").
- ``penultimate``: the input of the last parameterised layer (the classifier head), flattened
  (PACE "LHL": "the input to the last parameterised layer").

Models built here mark those points with the attributes ``feature_first`` (the dotted name of
the submodule whose output is the feature; a name, so the module is not registered twice) and
``head`` (the final ``nn.Linear``, whose input is the penultimate feature).
:func:`feature_points` finds the same points on foreign models (torchvision, hub, checkpoints).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch
from torch import nn

#: Local architecture families; ``width``/``depth`` meaning per family is in docs/zoo.md.
#: The LaF authors' MNIST networks (github.com/testing-cs/LaF-model-selection at 028011f,
#: ``trainModel/mnist``), written in torch from their Keras layer lists; ``width``/``depth`` are
#: ignored. Names and the scripts they come from are in docs/laf.md, "A zoo like the paper's".
LAF_MNIST_ARCHS = (
    "keras_cnn", "opt_cnn", "bn_deep", "keras_main", "convnet", "bn_cnn", "builder_small",
    "builder_larger", "builder_very_big", "builder_full", "builder_full_revert", "builder_full_1",
    "builder_big", "lenet1", "lenet4", "lenet5", "nb_cnn",
)
ARCHS = ("mlp", "lenet", "resnet", "cnn_tiny", *LAF_MNIST_ARCHS)

FEATURES = ("first", "penultimate")


class ArchError(ValueError):
    """An architecture name or its hyper-parameters are invalid."""


def _pooled(size: int, times: int) -> int:
    """Spatial size after ``times`` 2x2 max-pools with ``ceil_mode=True``."""
    for _ in range(times):
        size = math.ceil(size / 2)
    return size


class MLP(nn.Module):
    """Flatten -> ``depth`` x (Linear(width) + ReLU) -> Linear(K). ``depth=0`` is a linear model."""

    def __init__(self, in_shape: tuple[int, int, int], num_classes: int, width: int, depth: int):
        super().__init__()
        h, w, c = in_shape
        dims = [h * w * c] + [width] * depth
        layers: list[nn.Module] = [nn.Flatten()]
        blocks = [nn.Sequential(nn.Linear(a, b), nn.ReLU()) for a, b in zip(dims, dims[1:], strict=False)]
        self.body = nn.Sequential(*layers, *blocks)
        self.head = nn.Linear(dims[-1], num_classes)
        self.feature_first = "body.1" if blocks else "head"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


class LeNet(nn.Module):
    """LeNet-style CNN: conv5x5(w)+ReLU+pool, conv5x5(2w)+ReLU+pool, ``depth`` FC(8w)+ReLU, FC(K).

    ``depth=0`` is LeNet-1-like (the flattened last pooling map feeds the head).
    """

    def __init__(self, in_shape: tuple[int, int, int], num_classes: int, width: int, depth: int):
        super().__init__()
        h, w, c = in_shape
        conv1 = nn.Sequential(nn.Conv2d(c, width, 5, padding=2), nn.ReLU())
        conv2 = nn.Sequential(nn.Conv2d(width, 2 * width, 5, padding=2), nn.ReLU())
        pool = dict(kernel_size=2, ceil_mode=True)
        flat = 2 * width * _pooled(h, 2) * _pooled(w, 2)
        dims = [flat] + [8 * width] * depth
        fcs = [nn.Sequential(nn.Linear(a, b), nn.ReLU()) for a, b in zip(dims, dims[1:], strict=False)]
        self.body = nn.Sequential(
            conv1, nn.MaxPool2d(**pool), conv2, nn.MaxPool2d(**pool), nn.Flatten(), *fcs
        )
        self.head = nn.Linear(dims[-1], num_classes)
        self.feature_first = "body.0"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


class BasicBlock(nn.Module):
    """ResNet basic block: two conv3x3+BN, identity or 1x1 projection shortcut."""

    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU()
        self.short: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.short = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.short(x))


class ResNet(nn.Module):
    """Small CIFAR-style ResNet: stem conv3x3(w), 3 stages (w, 2w, 4w) of ``depth`` blocks, GAP, FC."""

    def __init__(self, in_shape: tuple[int, int, int], num_classes: int, width: int, depth: int):
        super().__init__()
        if depth < 1:
            raise ArchError(f"resnet needs depth >= 1 blocks per stage, got {depth}")
        c = in_shape[2]
        stem = nn.Sequential(nn.Conv2d(c, width, 3, padding=1, bias=False), nn.BatchNorm2d(width), nn.ReLU())
        blocks: list[nn.Module] = []
        cin = width
        for stage, mult in enumerate((1, 2, 4)):
            for b in range(depth):
                stride = 2 if stage > 0 and b == 0 else 1
                blocks.append(BasicBlock(cin, width * mult, stride))
                cin = width * mult
        self.body = nn.Sequential(stem, *blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.head = nn.Linear(cin, num_classes)
        self.feature_first = "body.0"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


class CNNTiny(nn.Module):
    """Tiny CNN of the offline metamorphic study (docs/zoo.md, reading R4): conv3x3(w)+ReLU+pool,
    conv3x3(2w)+ReLU+pool, conv3x3(4w)+ReLU, GAP, Linear(4w -> K). ``width=16`` is its
    3->16->32->64 network.
    """

    def __init__(self, in_shape: tuple[int, int, int], num_classes: int, width: int, depth: int = 1):
        super().__init__()
        c = in_shape[2]
        conv1 = nn.Sequential(nn.Conv2d(c, width, 3, padding=1), nn.ReLU())
        pool = dict(kernel_size=2, ceil_mode=True)
        self.body = nn.Sequential(
            conv1,
            nn.MaxPool2d(**pool),
            nn.Conv2d(width, 2 * width, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(**pool),
            nn.Conv2d(2 * width, 4 * width, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.head = nn.Linear(4 * width, num_classes)
        self.feature_first = "body.0"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


# The LaF authors' MNIST networks as layer lists (Keras semantics: ``valid`` padding unless
# ``same``, pooling windows of 2 with stride 2, ``same`` pooling rounds up). Tokens:
# ("c", out, kernel, stride, padding, activation), ("bn",), ("a", activation), ("mp", padding),
# ("ap",), ("d", p), ("f",), ("fc", out, activation). The final Dense(10) is the model's ``head``;
# its softmax (or sigmoid) is dropped: models return logits. ``post`` is a layer after the head
# (mnist_project.py's BatchNormalization before its softmax).
_LAF_MNIST: dict[str, tuple[tuple, ...]] = {
    # cnn_mnist.py (model-1), mnist.py (model-14)
    "keras_cnn": (("c", 32, 3, 1, "valid", "relu"), ("c", 64, 3, 1, "valid", "relu"), ("mp", "valid"),
                  ("d", 0.25), ("f",), ("fc", 128, "relu"), ("d", 0.5)),
    # model_{Adadelta,Adagrad,Adam,Adamax,Nadam,RMSprop,SGD}.py (model-2..8)
    "opt_cnn": (("c", 8, 3, 1, "same", "relu"), ("mp", "valid"), ("d", 0.25),
                ("c", 16, 5, 1, "same", "relu"), ("mp", "valid"), ("d", 0.25), ("f",),
                ("fc", 256, "relu"), ("d", 0.5)),
    # mnist_project.py (model-9; its data augmentation is not reproduced)
    "bn_deep": (("c", 8, 5, 1, "same", None), ("bn",), ("a", "relu"),
                ("c", 16, 5, 1, "same", None), ("bn",), ("a", "relu"), ("mp", "valid"),
                ("c", 32, 3, 1, "same", None), ("bn",), ("a", "relu"),
                ("c", 64, 3, 1, "same", None), ("bn",), ("a", "relu"), ("mp", "valid"),
                ("c", 128, 3, 1, "same", None), ("bn",), ("a", "relu"),
                ("c", 128, 3, 1, "same", None), ("bn",), ("a", "relu"),
                ("c", 128, 3, 1, "same", None), ("bn",), ("a", "relu"), ("mp", "valid"),
                ("f",), ("fc", 256, None), ("bn",), ("a", "relu")),
    # MainCNN.py (model-10)
    "keras_main": (("c", 32, 3, 1, "valid", "relu"), ("c", 32, 3, 1, "valid", "relu"),
                   ("mp", "valid"), ("d", 0.25), ("f",), ("fc", 128, "relu"), ("d", 0.5)),
    # mnist_convnet.py (model-13)
    "convnet": (("c", 32, 3, 1, "valid", "relu"), ("mp", "valid"), ("c", 64, 3, 1, "valid", "relu"),
                ("mp", "valid"), ("f",), ("d", 0.5)),
    # CNN.py (model-16)
    "bn_cnn": (("c", 32, 3, 1, "valid", "relu"), ("bn",), ("c", 32, 3, 1, "valid", "relu"), ("bn",),
               ("c", 32, 5, 2, "same", "relu"), ("bn",), ("d", 0.4),
               ("c", 64, 3, 1, "valid", "relu"), ("bn",), ("c", 64, 3, 1, "valid", "relu"), ("bn",),
               ("c", 64, 5, 2, "same", "relu"), ("bn",), ("d", 0.4), ("f",),
               ("fc", 128, "relu"), ("bn",), ("d", 0.4)),
    # cnnBuilder.py: small_model (model-19; sigmoid output, trained here with softmax)
    "builder_small": (("c", 15, 3, 1, "valid", "tanh"), ("ap",), ("c", 15, 3, 1, "valid", "relu"),
                      ("mp", "valid"), ("d", 0.2), ("f",), ("fc", 500, "sigmoid")),
    # larger_model (model-17)
    "builder_larger": (("c", 30, 5, 1, "valid", "relu"), ("mp", "valid"),
                       ("c", 15, 3, 1, "valid", "relu"), ("mp", "valid"), ("d", 0.2), ("f",),
                       ("fc", 128, "relu"), ("fc", 50, "relu")),
    # very_big_model (model-20)
    "builder_very_big": (("c", 60, 5, 1, "valid", "relu"), ("mp", "valid"),
                         ("c", 30, 3, 1, "valid", "relu"), ("mp", "valid"), ("d", 0.1), ("f",),
                         ("fc", 1000, "relu"), ("fc", 100, "relu")),
    # full_cnn_model (model-21)
    "builder_full": (("c", 30, 5, 1, "valid", "relu"), ("mp", "valid"),
                     ("c", 20, 3, 1, "valid", "relu"), ("mp", "valid"),
                     ("c", 10, 5, 1, "valid", "relu"), ("f",), ("fc", 1000, "tanh")),
    # full_cnn_revert_model (model-22; their loss: mean squared log error)
    "builder_full_revert": (("c", 10, 3, 1, "valid", "relu"), ("mp", "valid"),
                            ("c", 20, 3, 1, "valid", "relu"), ("mp", "valid"),
                            ("c", 60, 3, 1, "valid", "relu"), ("f",), ("fc", 1000, "tanh")),
    # full_cnn_1_model (model-23; their loss: mean squared log error)
    "builder_full_1": (("c", 10, 3, 1, "valid", "relu"), ("mp", "valid"),
                       ("c", 20, 3, 1, "valid", "relu"), ("mp", "valid"),
                       ("c", 60, 5, 1, "valid", "relu"), ("f",), ("fc", 1000, "tanh")),
    # big_cnn_model (model-18; their loss: mean squared log error)
    "builder_big": (("c", 60, 5, 1, "valid", "relu"), ("mp", "valid"),
                    ("c", 60, 3, 1, "valid", "relu"), ("mp", "valid"), ("d", 0.2), ("f",),
                    ("fc", 256, "relu"), ("fc", 100, "relu")),
    # Model1.py, LeNet-1 (model-24; 7,206 parameters, the paper's Table 2 minimum)
    "lenet1": (("c", 4, 5, 1, "same", "relu"), ("mp", "valid"), ("c", 12, 5, 1, "same", "relu"),
               ("mp", "valid"), ("f",)),
    # Model2.py, LeNet-4 (model-25)
    "lenet4": (("c", 6, 5, 1, "same", "relu"), ("mp", "valid"), ("c", 16, 5, 1, "same", "relu"),
               ("mp", "valid"), ("f",), ("fc", 84, "relu")),
    # Model3.py, LeNet-5 (model-26)
    "lenet5": (("c", 6, 5, 1, "same", "relu"), ("mp", "valid"), ("c", 16, 5, 1, "same", "relu"),
               ("mp", "valid"), ("f",), ("fc", 120, "relu"), ("fc", 84, "relu")),
    # CNN_keras_mnist.ipynb (model-27; 3,274,634 parameters, the paper's Table 2 maximum)
    "nb_cnn": (("c", 32, 5, 1, "same", "relu"), ("mp", "same"), ("c", 64, 5, 1, "same", "relu"),
               ("mp", "same"), ("f",), ("fc", 1024, "relu"), ("d", 0.2)),
}

_ACTS: dict[str, Callable[[], nn.Module]] = {"relu": nn.ReLU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid}


class LafMnistNet(nn.Module):
    """One of the LaF authors' MNIST networks (:data:`_LAF_MNIST`): body of the listed layers,
    ``head`` = Linear(K), and ``post`` (BatchNorm1d for ``bn_deep``, else identity)."""

    def __init__(self, in_shape: tuple[int, int, int], num_classes: int, width: int = 0,
                 depth: int = 0, *, name: str):
        super().__init__()
        h, w, c = in_shape
        layers: list[nn.Module] = []
        ch, flat, first = c, 0, ""
        for tok in _LAF_MNIST[name]:
            kind = tok[0]
            if kind == "c":
                _, out, k, stride, pad, act = tok
                layers.append(nn.Conv2d(ch, out, k, stride=stride,
                                        padding=k // 2 if pad == "same" else 0))
                ch = out
            elif kind == "fc":
                _, out, act = tok
                layers.append(nn.Linear(flat, out))
                flat = out
            elif kind == "bn":
                layers.append(nn.BatchNorm1d(flat) if flat else nn.BatchNorm2d(ch))
                act = None
            elif kind == "mp":
                layers.append(nn.MaxPool2d(2, ceil_mode=tok[1] == "same"))
                act = None
            elif kind == "ap":
                layers.append(nn.AvgPool2d(2))
                act = None
            elif kind == "d":
                layers.append(nn.Dropout(tok[1]))
                act = None
            elif kind == "f":
                layers.append(nn.Flatten())
                flat = _flat_size(nn.Sequential(*layers), c, h, w)
                act = None
            else:  # "a"
                act = tok[1]
            if act is not None:
                layers.append(_ACTS[act]())
            if not first and kind in ("c", "fc"):
                first = f"body.{len(layers) - 1}"
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(flat, num_classes)
        self.post: nn.Module = nn.BatchNorm1d(num_classes) if name == "bn_deep" else nn.Identity()
        self.feature_first = first

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.post(self.head(self.body(x)))


def _flat_size(body: nn.Module, c: int, h: int, w: int) -> int:
    """Features after ``body`` (ending in Flatten) for one (c, h, w) input; draws no random
    numbers, so the initial weights depend on the seed only."""
    body.eval()
    with torch.no_grad():
        return int(body(torch.zeros(1, c, h, w)).shape[1])


_BUILDERS: dict[str, Callable[..., nn.Module]] = {
    "mlp": MLP,
    "lenet": LeNet,
    "resnet": ResNet,
    "cnn_tiny": CNNTiny,
    **{name: functools.partial(LafMnistNet, name=name) for name in LAF_MNIST_ARCHS},
}


def build_model(
    arch: str, in_shape: tuple[int, int, int], num_classes: int, width: int = 32, depth: int = 1
) -> nn.Module:
    """Build a local architecture for inputs of shape ``in_shape`` = (H, W, C) and ``num_classes``.

    Initialisation draws from torch's global RNG: seed it (``torch.manual_seed``) first.
    """
    if arch not in _BUILDERS:
        raise ArchError(f"unknown architecture {arch!r}; local architectures are {ARCHS}")
    if width < 1 or depth < 0 or num_classes < 1:
        raise ArchError(
            f"{arch}: width={width} must be >= 1, depth={depth} >= 0, num_classes={num_classes} >= 1"
        )
    if len(in_shape) != 3 or min(in_shape) < 1:
        raise ArchError(f"{arch}: input shape {in_shape} must be (H, W, C) with positive sizes")
    shape = tuple(int(s) for s in in_shape)
    if arch in LAF_MNIST_ARCHS:
        try:
            return _BUILDERS[arch](shape, int(num_classes), int(width), int(depth))
        except RuntimeError as err:  # a kernel larger than the map it slides over
            raise ArchError(f"{arch}: input shape {in_shape} is too small for this network "
                            f"(written for 28x28 MNIST): {err}") from None
    return _BUILDERS[arch](shape, int(num_classes), int(width), int(depth))


def param_count(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return int(sum(p.numel() for p in model.parameters() if p.requires_grad))


def feature_points(model: nn.Module) -> dict[str, tuple[nn.Module, str]]:
    """Where each named feature is captured: ``{name: (module, "output" | "input")}``.

    Local models declare ``feature_first`` and ``head``. For any other model (torchvision, hub,
    checkpoints) ``first`` is the output of the first module with trainable weights (in
    registration order, which is forward order for the common architectures) and
    ``penultimate`` is the input of the last ``nn.Linear`` (PACE's rule for new zoos,
    docs/zoo.md, reading R1).
    """
    first = getattr(model, "feature_first", None)
    head = getattr(model, "head", None)
    if isinstance(first, str) and isinstance(head, nn.Linear):
        return {"first": (model.get_submodule(first), "output"), "penultimate": (head, "input")}
    leaves = [
        m for m in model.modules()
        if not list(m.children()) and any(p.requires_grad for p in m.parameters(recurse=False))
    ]
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not leaves or not linears:
        raise ArchError(
            f"{type(model).__name__}: cannot locate feature points (no parameterised layer "
            "or no nn.Linear classifier head)"
        )
    return {"first": (leaves[0], "output"), "penultimate": (linears[-1], "input")}
