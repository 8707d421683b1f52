"""Model directories ``results/zoo/{zoo}/{model}/``: ``weights.safetensors`` + ``meta.json``.

:func:`save_model` writes both atomically; :func:`load_model` rebuilds the network from
``meta.json`` (local architecture, torchvision or hub constructor) and loads the weights with
safetensors, which cannot execute code.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from labelfree.store import ArtefactError, atomic_path, load_json, save_json
from labelfree.zoo.arch import build_model
from labelfree.zoo.checkpoint import load_into
from labelfree.zoo.hub import hub_construct
from labelfree.zoo.sources import MODULES, wrap_subset
from labelfree.zoo.sources import construct as construct_source

WEIGHTS = "weights.safetensors"
META = "meta.json"


def state_dict_hash(state: dict[str, torch.Tensor]) -> str:
    """SHA-256 over the names and bytes of a state dict (bitwise identity of weights)."""
    h = hashlib.sha256()
    for k in sorted(state):
        t = state[k].detach().cpu().contiguous()
        h.update(k.encode())
        h.update(str(t.dtype).encode())
        h.update(t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.view(torch.int16).numpy().tobytes())
    return h.hexdigest()


def _plain_state(model: nn.Module) -> dict[str, torch.Tensor]:
    # safetensors refuses shared storage: clone every tensor into its own contiguous buffer.
    return {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}


def save_model(model_dir: str | Path, model: nn.Module, meta: dict[str, Any]) -> dict[str, Any]:
    """Write ``weights.safetensors`` and ``meta.json`` (with ``weights_sha256`` and ``params``)."""
    d = Path(model_dir)
    d.mkdir(parents=True, exist_ok=True)
    state = _plain_state(model)
    meta = dict(meta)
    meta["weights_sha256"] = state_dict_hash(state)
    meta["params"] = int(sum(p.numel() for p in model.parameters()))
    with atomic_path(d / WEIGHTS) as tmp:
        save_file(state, str(tmp))
    save_json(meta, d / META)
    return meta


def read_meta(model_dir: str | Path) -> dict[str, Any]:
    """Read ``meta.json`` of a model directory."""
    return load_json(Path(model_dir) / META)


def construct(meta: dict[str, Any]) -> nn.Module:
    """Build the (untrained) network that ``meta`` describes."""
    source = meta.get("source", "local")
    family = meta.get("family", "local")
    if family == "local":
        return build_model(
            meta["arch"],
            tuple(meta["input_shape"]),
            int(meta["num_classes"]),
            int(meta["width"]),
            int(meta["depth"]),
        )
    if family == "torchvision":
        # deferred: torchvision takes 4-8 s to import; only torchvision rows need it
        from torchvision.models import get_model

        return get_model(
            meta["arch"],
            weights=None,
            num_classes=int(meta["num_classes"]),
            **meta.get("tv_kwargs", {}),
        )
    if family == "hub":
        return hub_construct(meta["hub_repo"], meta["arch"])
    if source in MODULES:  # keras, timm, hf-hub (labelfree.zoo.sources)
        return construct_source(meta)
    raise ArtefactError(f"meta.json: unknown model family {family!r} (source {source!r})")


def load_model(
    model_dir: str | Path, device: torch.device | str = "cpu"
) -> tuple[nn.Module, dict[str, Any]]:
    """Return ``(model in eval mode on device, meta)`` for a model directory.

    Weights are read with safetensors only; a mismatch with the architecture in meta.json
    raises an error naming the directory and the mismatching keys.
    """
    d = Path(model_dir)
    meta = read_meta(d)
    wpath = d / WEIGHTS
    if not wpath.exists():
        raise ArtefactError(f"{wpath}: weights file not found")
    model = wrap_subset(construct(meta), meta)

    try:
        state = load_file(str(wpath))
    except (SafetensorError, OSError, ValueError) as exc:  # truncated or not safetensors
        raise ArtefactError(
            f"{wpath}: not a readable safetensors file ({exc}); delete it (or the model's "
            "folder) and rerun to rebuild it"
        ) from exc

    load_into(model, state, f"{d.name} ({wpath})")
    model.to(device).eval()
    return model, meta
