"""Model zoos: architectures, seeded training, safe loading of pretrained and user models.

Public API (docs/zoo.md):

- :func:`load_model` ``(model_dir) -> (nn.Module in eval mode, meta dict)``
- :func:`preprocess` ``(x_uint8_nhwc, kind) -> float NCHW tensor``
- :func:`build_model`, :func:`train_model` / :class:`TrainSpec`, :func:`feature_points`

Names are imported lazily (PEP 562): the Snakefile imports ``labelfree.zoo.sheet`` and
``labelfree.zoo.bundle`` at parse time, which must not import torch.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

_WHERE = {
    "ARCHS": "arch",
    "FEATURES": "arch",
    "build_model": "arch",
    "feature_points": "arch",
    "param_count": "arch",
    "CheckpointError": "checkpoint",
    "read_state_dict": "checkpoint",
    "load_model": "io",
    "read_meta": "io",
    "save_model": "io",
    "preprocess": "preprocess",
    "WeightsMissingError": "pretrained",
    "TrainSpec": "train",
    "train_model": "train",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"labelfree.zoo.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'labelfree.zoo' has no attribute {name!r}")


class _ZooPackage(types.ModuleType):
    """``labelfree.zoo.preprocess`` names the function, as with eager imports, even once the
    submodule of the same name is imported (the import system's setattr is ignored)."""

    @property
    def preprocess(self) -> Any:
        return importlib.import_module("labelfree.zoo.preprocess").preprocess

    @preprocess.setter
    def preprocess(self, value: Any) -> None:
        pass


sys.modules[__name__].__class__ = _ZooPackage
