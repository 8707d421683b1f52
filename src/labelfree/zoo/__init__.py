"""Model zoos: architectures, seeded training, safe loading of pretrained and user models.

Public API (docs/zoo.md):

- :func:`load_model` ``(model_dir) -> (nn.Module in eval mode, meta dict)``
- :func:`preprocess` ``(x_uint8_nhwc, kind) -> float NCHW tensor``
- :func:`build_model`, :func:`train_model` / :class:`TrainSpec`, :func:`feature_points`
"""

from labelfree.zoo.arch import ARCHS, FEATURES, build_model, feature_points, param_count
from labelfree.zoo.checkpoint import CheckpointError, read_state_dict
from labelfree.zoo.io import load_model, read_meta, save_model
from labelfree.zoo.preprocess import preprocess
from labelfree.zoo.pretrained import WeightsMissingError
from labelfree.zoo.train import TrainSpec, train_model

__all__ = [
    "ARCHS",
    "FEATURES",
    "CheckpointError",
    "TrainSpec",
    "WeightsMissingError",
    "build_model",
    "feature_points",
    "load_model",
    "param_count",
    "preprocess",
    "read_meta",
    "read_state_dict",
    "save_model",
    "train_model",
]
