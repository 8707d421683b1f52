"""Architectures of local zoos: ``mlp``, ``lenet``, ``resnet`` and ``cnn_tiny``.

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

import math
from collections.abc import Callable

import torch
from torch import nn

#: Local architecture families; ``width``/``depth`` meaning per family is in docs/zoo.md.
ARCHS = ("mlp", "lenet", "resnet", "cnn_tiny")

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


_BUILDERS: dict[str, Callable[..., nn.Module]] = {
    "mlp": MLP,
    "lenet": LeNet,
    "resnet": ResNet,
    "cnn_tiny": CNNTiny,
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
    return _BUILDERS[arch](tuple(int(s) for s in in_shape), int(num_classes), int(width), int(depth))


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
