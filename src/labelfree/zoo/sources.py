"""What the ``keras``, ``timm`` and ``hf-hub`` sheet rows share (docs/zoo.md, "Keras, timm and
Hugging Face models"): the model file (present, or downloaded from the row's ``url`` and
verified by its ``sha256``), the class subset that restricts a model's logits, and the dispatch
to one module per source (labelfree.zoo.keras, labelfree.zoo.timm_source,
labelfree.zoo.hf_hub). Those modules import their optional libraries only when a row of theirs
is resolved or loaded.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import torch
from torch import nn

from labelfree.data import classes
from labelfree.data.base import DataError
from labelfree.data.download import FileSpec, fetch, verify_file

#: Sheet source -> the module that resolves its rows and rebuilds its models.
MODULES = {"keras": "keras", "timm": "timm_source", "hf-hub": "hf_hub"}


class SourceError(ValueError):
    """A model file or class subset that cannot be used; the message names the file and why."""


def model_file(row: dict[str, Any]) -> Path:
    """The row's ``weights`` file, downloaded from ``url`` first when absent; verified against
    ``sha256`` whenever the row gives one (labelfree.data.download: a mismatch is an error
    naming the file, nothing unverified is left under its name)."""
    path = Path(str(row["weights"]))
    sha = str(row.get("sha256") or "")
    try:
        if sha:
            wanted = FileSpec(path.name, (str(row.get("url") or ""),), sha256=sha)
            if path.exists():
                verify_file(path, wanted)
            elif row.get("url"):
                fetch(wanted, path.parent)
        if not path.is_file():
            raise SourceError(f"model {row['model']}: {path}: file not found")
    except DataError as exc:
        raise SourceError(f"model {row['model']}: {exc}") from None
    return path


def read_class_subset(path: str | Path, num_classes: int | None = None) -> list[int]:
    """labelfree.data.classes.read_class_subset, its errors as :class:`SourceError`."""
    try:
        return classes.read_class_subset(path, num_classes)
    except DataError as exc:
        raise SourceError(str(exc)) from None


class SubsetLogits(nn.Module):
    """``inner``'s logits restricted to ``classes`` (in that order): what every later layer sees
    (inference artefacts, accuracy, every method), e.g. the 200 ImageNet classes of ImageNet-R
    or ImageNet-A. Feature points stay the inner model's."""

    def __init__(self, inner: nn.Module, classes: list[int]) -> None:
        super().__init__()
        self.inner = inner
        self.register_buffer("classes", torch.as_tensor(classes, dtype=torch.int64))

    @property
    def feature_first(self) -> str | None:
        first = getattr(self.inner, "feature_first", None)
        return f"inner.{first}" if isinstance(first, str) else None

    @property
    def head(self) -> nn.Module | None:
        return getattr(self.inner, "head", None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x).index_select(1, self.classes)


def wrap_subset(model: nn.Module, meta: dict[str, Any]) -> nn.Module:
    """``model`` restricted to ``meta['class_subset']`` when meta.json has one."""
    subset = meta.get("class_subset")
    return SubsetLogits(model, list(subset)) if subset else model


def resolve(
    row: dict[str, Any], in_shape: tuple[int, int, int] | None, num_classes: int | None,
) -> tuple[nn.Module, dict[str, Any]]:
    """Build the model of a keras/timm/hf-hub row with its weights, and its meta.json fields
    (``preprocessing`` included: the row's, else the model's own); with a ``class_subset``
    the model comes back wrapped in :class:`SubsetLogits` and ``num_classes`` is the subset's."""
    module = importlib.import_module(f"labelfree.zoo.{MODULES[row['source']]}")
    model, meta = module.resolve(row, in_shape, num_classes)
    if row.get("class_subset"):
        subset = read_class_subset(row["class_subset"], meta.get("num_classes"))
        meta.update(class_subset=subset, class_subset_file=str(row["class_subset"]),
                    num_classes_full=meta.get("num_classes"), num_classes=len(subset))
        model = SubsetLogits(model, subset)
    return model, meta


def construct(meta: dict[str, Any]) -> nn.Module:
    """The untrained network of a resolved keras/timm/hf-hub model (weights loaded after)."""
    source = meta["source"]
    module = importlib.import_module(f"labelfree.zoo.{MODULES[source]}")
    return module.construct(meta)


def row_preprocessing(row: dict[str, Any], own: str) -> str:
    """The row's preprocessing, or ``own`` (the model's) where the row says ``model``."""
    prep = str(row.get("preprocessing") or "model")
    return own if prep == "model" else prep
