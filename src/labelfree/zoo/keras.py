"""``source: keras`` rows: a Keras model file run by Keras 3 on its torch backend (docs/zoo.md,
"Keras").

``weights`` is the file: HDF5 as Keras 2 saved it (``.h5``/``.hdf5``, the format in which the
LaF, PACE and metamorphic authors published their models) or Keras 3's ``.keras``. The model
runs through the same inference path as every other model, wrapped in :class:`KerasNet`:

- input: the row's ``preprocessing`` (default ``scale01``, x / 255) gives NCHW tensors, which
  the wrapper turns back to the model's own channels-last layout (or flattens, for a model
  whose input is a vector of H x W x C values);
- output: logits. The classifier head (the last ``Dense`` layer) runs as a torch ``nn.Linear``
  with the file's kernel and bias, and a softmax after it (its own activation or a
  ``Softmax``/``Activation`` layer) is left out, so a model saved with probabilities gives the
  logits whose softmax they are;
- features: ``first`` is the output of the first layer with weights (after the next layer when
  that is its separate activation), ``penultimate`` the input of the head (PACE's last hidden
  layer, SYP's penultimate features), both in the model's own layout;
- weights: every variable of the file is saved in ``weights.safetensors`` like any model's,
  and meta.json keeps the architecture (Keras' JSON), so loading rebuilds the model with
  Keras' safe mode (no code from the file runs).

A file that cannot be used stops its job with one line naming it and what is wrong (not a Keras
file, a layer type that cannot run, an input shape that does not fit the data, no ``Dense``
head). Needs the ``keras`` extra (``pip install labelfree[keras]``, Keras 3 with h5py).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import torch
from torch import nn

from labelfree.data.download import file_digest
from labelfree.zoo.sources import SourceError, model_file

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
ZIP_MAGIC = b"PK\x03\x04"
#: Layers that may follow the head: a softmax (left out) or nothing at all.
_AFTER_HEAD = ("Activation", "Softmax")


def keras_module() -> Any:
    """Keras 3 on its torch backend, or an error saying how to get it."""
    backend = os.environ.setdefault("KERAS_BACKEND", "torch")
    try:
        import keras  # deferred: optional extra (and 10-20 s to import)
    except ModuleNotFoundError:
        raise SourceError("keras rows need Keras 3 with h5py: pip install 'labelfree[keras]'"
                          ) from None
    if keras.backend.backend() != "torch":
        raise SourceError(f"keras rows need KERAS_BACKEND=torch, Keras runs on "
                          f"{keras.backend.backend()!r} (KERAS_BACKEND={backend!r})")
    return keras


def load_file(path: Path) -> Any:
    """The Keras model in ``path``; every failure is one line naming the file and the cause."""
    with path.open("rb") as fh:
        head = fh.read(8)
    if not (head.startswith(HDF5_MAGIC) or head.startswith(ZIP_MAGIC)):
        raise SourceError(f"{path}: not a Keras file (neither HDF5 nor a .keras zip archive)")
    keras = keras_module()
    target = path
    if head.startswith(ZIP_MAGIC) and path.suffix != ".keras":
        raise SourceError(f"{path}: a zip archive; Keras reads one only under a .keras name")
    if head.startswith(HDF5_MAGIC) and path.suffix not in (".h5", ".hdf5"):
        raise SourceError(f"{path}: an HDF5 file; name it .h5 so that Keras reads it")
    try:
        return keras.models.load_model(str(target), compile=False, safe_mode=True)
    except Exception as exc:  # Keras raises ValueError, TypeError, KeyError, OSError alike
        raise SourceError(f"{path}: Keras cannot load it: {_first_line(exc)}") from None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    cause = text[0] if text else ""
    unknown = re.search(r"(?:Could not locate class|Unknown layer:) '([^']+)'", str(exc))
    if unknown:
        cause = f"layer type {unknown.group(1)!r} is not a Keras layer that can run here"
    return f"{type(exc).__name__}: {cause}"


def _weighted(layer: Any) -> bool:
    return bool(layer.weights) and type(layer).__name__ not in ("InputLayer",)


def _activation_name(layer: Any) -> str:
    act = getattr(layer, "activation", None)
    return getattr(act, "__name__", str(act)) if act is not None else "linear"


def find_points(model: Any, where: str) -> tuple[str, str]:
    """(layer whose output is the ``first`` feature, the ``Dense`` head), by name."""
    layers = [la for la in model.layers if type(la).__name__ != "InputLayer"]
    weighted = [i for i, la in enumerate(layers) if _weighted(la)]
    if not weighted:
        raise SourceError(f"{where}: the model has no layer with weights")
    head_i = weighted[-1]
    head = layers[head_i]
    if type(head).__name__ != "Dense":
        raise SourceError(f"{where}: the last layer with weights, {head.name!r}, is a "
                          f"{type(head).__name__}, not the Dense classifier head labelfree reads")
    if _activation_name(head) not in ("softmax", "linear"):
        raise SourceError(f"{where}: the head {head.name!r} ends in {_activation_name(head)}, "
                          "not softmax or linear")
    for la in layers[head_i + 1:]:
        if type(la).__name__ not in _AFTER_HEAD or _activation_name(la) not in ("softmax",
                                                                                  "linear"):
            raise SourceError(f"{where}: layer {la.name!r} ({type(la).__name__}) after the head "
                              f"{head.name!r} is not a softmax; labelfree reads the head's logits")
    first_i = weighted[0]
    first = layers[first_i]
    if (_activation_name(first) == "linear" and first_i + 1 < len(layers)
            and type(layers[first_i + 1]).__name__ in ("Activation", "ReLU", "LeakyReLU")):
        first = layers[first_i + 1]
    return first.name, head.name


class KerasNet(nn.Module):
    """A Keras model as a torch module: NCHW float input, logits out (see the module doc).

    The Keras body (input to the head's input) is kept outside torch's module tree, so torch
    sees no 4-d Keras kernel as a first convolution weight; its variables are registered as
    buffers (the same tensors, so loading a state dict writes into Keras' variables).
    """

    def __init__(self, model: Any, first: str, head: str) -> None:
        super().__init__()
        keras = keras_module()
        head_layer = model.get_layer(head)
        first_out = model.get_layer(first).output
        body = keras.Model(model.inputs, [first_out, head_layer.input])
        self.__dict__["_body"] = body  # not a submodule (see the class doc)
        self.flat = len(model.inputs[0].shape) == 2
        for i, var in enumerate(body.weights):
            self.register_buffer(f"k{i:03d}_{re.sub(r'[^A-Za-z0-9_]', '_', var.path)}", var.value)
        kernel, bias = (w.value for w in head_layer.weights[:2]) if head_layer.use_bias else (
            head_layer.weights[0].value, None)
        self.first_tap = nn.Identity()
        self.head = nn.Linear(kernel.shape[0], kernel.shape[1], bias=bias is not None)
        with torch.no_grad():
            self.head.weight.copy_(kernel.detach().T)
            if bias is not None:
                self.head.bias.copy_(bias.detach())
        self.feature_first = "first_tap"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nhwc = x.permute(0, 2, 3, 1)
        if self.flat:
            nhwc = nhwc.reshape(len(nhwc), -1)
        # Keras keeps its variables on its own device (torch's .to() copies the buffers only)
        weights = self._body.weights
        dev = weights[0].value.device if weights else x.device
        first, penultimate = self._body(nhwc.to(dev), training=False)
        self.first_tap(first)
        return self.head(penultimate.to(self.head.weight.device))


def _check_input(model: Any, in_shape: tuple[int, int, int] | None, path: Path) -> list[int]:
    """The model's input shape [H, W, C] (or its vector length) fitted to the data's."""
    shape = [None if d is None else int(d) for d in model.inputs[0].shape[1:]]
    if in_shape is None:
        return [d or 0 for d in shape]
    h, w, c = in_shape
    if len(shape) == 1:
        if shape[0] not in (None, h * w * c):
            raise SourceError(f"{path}: the model takes vectors of {shape[0]} values, the data's "
                              f"images are {h}x{w}x{c} = {h * w * c}")
        return [h, w, c]
    if len(shape) != 3 or any(d not in (None, v) for d, v in zip(shape, (h, w, c), strict=True)):
        raise SourceError(f"{path}: the model's input shape {tuple(shape)} (channels last) does "
                          f"not fit the data's images {h}x{w}x{c}")
    return [h, w, c]


def resolve(
    row: dict[str, Any], in_shape: tuple[int, int, int] | None, num_classes: int | None,
) -> tuple[nn.Module, dict[str, Any]]:
    """The model of a keras row, wrapped in :class:`KerasNet`, and its meta.json fields."""
    path = model_file(row)
    model = load_file(path)
    keras = keras_module()
    shape = _check_input(model, in_shape, path)
    first, head = find_points(model, str(path))
    net = KerasNet(model, first, head)
    meta = {
        "family": "keras",
        "arch": type(model).__name__,
        "keras_model": model.to_json(),
        "keras_first": first,
        "keras_head": head,
        "keras_version": keras.__version__,
        "num_classes": int(net.head.out_features),
        "input_shape": shape,
        "preprocessing": str(row.get("preprocessing") or "scale01"),
        "keras_file": str(path),
        "keras_file_sha256": file_digest(path),
    }
    return net, meta


def construct(meta: dict[str, Any]) -> nn.Module:
    """The network of a resolved Keras model, rebuilt from its JSON in safe mode."""
    keras = keras_module()
    model = keras.models.model_from_json(meta["keras_model"])
    return KerasNet(model, meta["keras_first"], meta["keras_head"])
