"""torch.hub models built offline (docs/zoo.md): construction shared by resolving and loading.

Its own module so that ``zoo.io`` (loading a resolved model) and ``zoo.pretrained`` (resolving
one) both use it without importing each other.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn


class WeightsMissingError(RuntimeError):
    """Pretrained weights are not cached and cannot be downloaded; says where to put them."""


def hub_dir() -> Path:
    return Path(torch.hub.get_dir())


def hub_source(repo: str) -> tuple[str, str]:
    """(source, kind) for torch.hub.load: a local directory with hubconf.py, or GitHub."""
    return (str(Path(repo).resolve()), "local") if Path(repo).is_dir() else (repo, "github")


def hub_construct(repo: str, entry: str, pretrained: bool = False) -> nn.Module:
    """Build a torch.hub model (``pretrained=False``: architecture only, weights loaded after)."""
    src, kind = hub_source(repo)
    try:
        try:
            return torch.hub.load(
                src, entry, source=kind, trust_repo=True, skip_validation=True, pretrained=pretrained
            )
        except TypeError:
            return torch.hub.load(src, entry, source=kind, trust_repo=True, skip_validation=True)
    except Exception as exc:
        where = src if kind == "local" else f"{hub_dir()}/<owner>_<repo>_<ref>"
        raise WeightsMissingError(
            f"torch.hub model {repo}:{entry} is not available offline ({type(exc).__name__}: "
            f"{exc}). Fetch it once with network (torch.hub.load('{repo}', '{entry}')) so that "
            f"the repository lands in {where} and its weights in {hub_dir() / 'checkpoints'}."
        ) from None
