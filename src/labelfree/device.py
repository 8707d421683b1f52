"""The torch device a job runs on, from a config value (``auto``, ``cpu``, ``cuda[:N]``).

Below both the zoo (training, ``zoos.<zoo>.train_device``) and inference
(``inference.device``), which resolve their device here.
"""

from __future__ import annotations

import torch


class DeviceError(ValueError):
    """A device the config asks for that does not exist here, naming the config key."""


def resolve_device(device: str | torch.device = "auto", key: str = "inference.device") -> torch.device:
    """``auto`` -> ``cuda`` when available, else ``cpu``; ``cuda`` without a GPU is an error.

    ``key`` is the config key the value came from, named in errors (training passes
    ``zoos.<zoo>.train_device``)."""
    if isinstance(device, torch.device):
        return device
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise DeviceError(f"{key}={device!r} but no CUDA device is available")
    if device not in ("cpu",) and not device.startswith("cuda"):
        raise DeviceError(f"{key}={device!r}; use auto, cpu or cuda")
    return torch.device(device)
