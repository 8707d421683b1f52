"""Safe loading of user checkpoints (ARCHITECTURE.md: untrusted checkpoints never go through pickle).

A checkpoint is read with safetensors (``.safetensors``) or ``torch.load(weights_only=True)``,
whose restricted unpickler accepts tensors and plain containers only; anything else (a pickled
object whose ``__reduce__`` would run code) is refused before it runs, with an error naming the
file. A state dict that does not fit the declared architecture gives an error naming the model
and the missing, unexpected or mis-shaped keys.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import nn


class CheckpointError(ValueError):
    """A checkpoint is unsafe, unreadable or does not fit its architecture."""


_NESTED = ("state_dict", "model_state_dict", "model", "net", "weights")


def read_state_dict(path: str | Path) -> dict[str, torch.Tensor]:
    """Read a state dict from ``path`` without executing code.

    Accepts a plain state dict or one nested under a common key (``state_dict``, ``model``, ...);
    strips a ``module.`` prefix left by DataParallel.
    """
    p = Path(path)
    if not p.exists():
        raise CheckpointError(f"checkpoint {p}: file not found")
    if p.suffix == ".safetensors":
        try:
            obj: object = load_file(str(p))
        except (SafetensorError, OSError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {p}: not a readable safetensors file ({exc})") from exc
    else:
        try:
            obj = torch.load(p, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as exc:
            raise CheckpointError(
                f"checkpoint {p} was refused: it needs pickle beyond tensors (arbitrary objects or "
                "code), which labelfree never unpickles. Re-save it as a plain state dict "
                "(torch.save(model.state_dict(), ...)) or as safetensors. Detail: "
                f"{str(exc).splitlines()[0]}"
            ) from None
        except (RuntimeError, EOFError, OSError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {p}: not a readable torch file ({exc})") from exc
    for _ in range(3):
        if isinstance(obj, Mapping) and not _is_state(obj):
            inner = next((obj[k] for k in _NESTED if k in obj and isinstance(obj[k], Mapping)), None)
            if inner is None:
                break
            obj = inner
    if not isinstance(obj, Mapping) or not _is_state(obj):
        raise CheckpointError(
            f"checkpoint {p}: expected a state dict of tensors (or one under {_NESTED}), "
            f"got {type(obj).__name__}"
        )
    state = {str(k): v for k, v in obj.items() if isinstance(v, torch.Tensor)}
    if state and all(k.startswith("module.") for k in state):
        state = {k.removeprefix("module."): v for k, v in state.items()}
    return state


def _is_state(obj: Mapping) -> bool:
    return bool(obj) and all(isinstance(v, torch.Tensor) for v in obj.values())


def load_into(model: nn.Module, state: Mapping[str, torch.Tensor], name: str) -> None:
    """Load ``state`` into ``model`` strictly; on mismatch name the model and keys at fault."""
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    shapes = sorted(
        f"{k}: checkpoint {tuple(state[k].shape)} vs model {tuple(own[k].shape)}"
        for k in set(own) & set(state)
        if tuple(state[k].shape) != tuple(own[k].shape)
    )
    if missing or unexpected or shapes:

        def few(xs: list[str]) -> str:
            return ", ".join(xs[:8]) + (f" (+{len(xs) - 8} more)" if len(xs) > 8 else "")

        parts = []
        if missing:
            parts.append(f"missing keys [{few(missing)}]")
        if unexpected:
            parts.append(f"unexpected keys [{few(unexpected)}]")
        if shapes:
            parts.append(f"shape mismatches [{few(shapes)}]")
        raise CheckpointError(
            f"model {name}: checkpoint does not fit architecture {type(model).__name__}: "
            + "; ".join(parts)
        )
    model.load_state_dict(dict(state), strict=True)
