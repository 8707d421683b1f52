"""Pretrained and user models resolved into ``results/zoo/{zoo}/{model}/`` (docs/zoo.md).

Sheet rows by ``source``:

- ``torchvision``: ``arch`` = model name (``resnet18``), ``weights`` = a weights enum name
  (``DEFAULT``, ``IMAGENET1K_V1`` or ``ResNet18_Weights.IMAGENET1K_V1``). Files are cached by
  torch in ``$TORCH_HOME/hub/checkpoints/`` (default ``~/.cache/torch/hub/checkpoints/``).
  Preprocessing defaults to the weights' own transforms.
- ``hub``: ``arch`` = entry point, ``weights`` = ``owner/repo[:ref]`` on GitHub or a local directory
  holding ``hubconf.py``. Repositories are cached in ``$TORCH_HOME/hub/``.
- ``checkpoint``: ``weights`` = path of a user checkpoint (safetensors or a weights-only torch
  state dict); ``arch`` = a local architecture (with ``width``/``depth``) or a torchvision model
  name. Never unpickled beyond tensors (labelfree.zoo.checkpoint).

Without network, a missing download raises :class:`WeightsMissingError` naming the weights and
the exact file or directory to place them in.
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

from torch import nn

from labelfree.zoo.arch import ARCHS, build_model
from labelfree.zoo.checkpoint import load_into, read_state_dict
from labelfree.zoo.hub import WeightsMissingError, hub_construct, hub_dir, hub_source
from labelfree.zoo.io import save_model
from labelfree.zoo.sources import MODULES
from labelfree.zoo.sources import resolve as resolve_source

log = logging.getLogger(__name__)

__all__ = ["WeightsMissingError", "hub_model", "resolve_row", "torchvision_model"]


def _tv_weights(arch: str, weights: str) -> Any:
    # deferred: torchvision takes 4-8 s to import; only torchvision rows need it
    from torchvision.models import get_model_weights, get_weight

    try:
        if "." in weights:
            return get_weight(weights)
        return get_model_weights(arch)[weights]
    except (KeyError, ValueError, AttributeError) as exc:
        raise ValueError(
            f"torchvision model {arch!r}: unknown weights {weights!r} ({exc}); see "
            "torchvision.models.get_model_weights(arch) for the names"
        ) from None


def tv_kwargs(arch: str, w: Any) -> dict[str, Any]:
    """Constructor arguments that torchvision's builder sets when it loads weights ``w``.

    With them, ``get_model(arch, weights=None, **kwargs)`` rebuilds exactly the pretrained
    network, so load_model never needs the download again.
    """
    kw: dict[str, Any] = {"num_classes": len(w.meta["categories"])}
    if arch in ("googlenet", "inception_v3"):
        kw.update(transform_input=True, aux_logits=False, init_weights=False)
    if arch.startswith("vit_"):
        kw["image_size"] = int(w.meta["min_size"][0])
    return kw


def torchvision_model(arch: str, weights: str) -> tuple[nn.Module, dict[str, Any]]:
    """Load a torchvision pretrained model from the cache (downloading if possible)."""
    # deferred: torchvision takes 4-8 s to import; only torchvision rows need it
    from torchvision.models import get_model

    w = _tv_weights(arch, weights)
    cached = hub_dir() / "checkpoints" / Path(w.url).name
    try:
        state = w.get_state_dict(progress=False, check_hash=True)
    except Exception as exc:  # no network, HTTP error, bad hash: all mean "not available"
        raise WeightsMissingError(
            f"torchvision weights {w} for model {arch!r} are not cached and could not be "
            f"downloaded ({type(exc).__name__}: {exc}). Download {w.url} on a machine with "
            f"network and put it at {cached} (set TORCH_HOME to move the cache)."
        ) from None
    kwargs = tv_kwargs(arch, w)
    crop = int(getattr(w.transforms(), "crop_size", [224])[0])  # the size the model sees
    model = get_model(arch, weights=None, **kwargs)
    load_into(model, state, f"{arch} ({w})")
    meta = {
        "family": "torchvision",
        "arch": arch,
        "tv_weights": str(w),
        "tv_kwargs": {k: v for k, v in kwargs.items() if k != "num_classes"},
        "weights_url": w.url,
        "num_classes": kwargs["num_classes"],
        "categories": list(w.meta["categories"]),
        "input_shape": [crop, crop, 3],
        "preprocessing": f"torchvision:{w}",
        "reported_metrics": w.meta.get("_metrics", {}),
    }
    return model, meta


def hub_model(repo: str, entry: str) -> tuple[nn.Module, dict[str, Any]]:
    model = hub_construct(repo, entry, pretrained=True)
    head = [m for m in model.modules() if isinstance(m, nn.Linear)]
    meta = {
        "family": "hub",
        "arch": entry,
        "hub_repo": hub_source(repo)[0],
        "num_classes": int(head[-1].out_features) if head else None,
    }
    return model, meta


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def checkpoint_model(
    row: dict[str, Any],
    path: str | Path,
    in_shape: tuple[int, int, int],
    num_classes: int,
) -> tuple[nn.Module, dict[str, Any]]:
    """Build ``row['arch']`` and load the user checkpoint at ``path`` safely into it."""
    p = Path(path)
    arch = str(row["arch"])
    state = read_state_dict(p)
    if arch in ARCHS:
        model = build_model(arch, in_shape, num_classes, int(row["width"]), int(row["depth"]))
        family = "local"
    else:
        # deferred: torchvision takes 4-8 s to import; only torchvision rows need it
        from torchvision.models import get_model, list_models

        if arch not in list_models():
            raise ValueError(
                f"model {row['model']}: arch {arch!r} is neither a local architecture {ARCHS} "
                "nor a torchvision model name"
            )
        model = get_model(arch, weights=None, num_classes=num_classes)
        family = "torchvision"
    load_into(model, state, f"{row['model']} ({p})")
    meta = {
        "family": family,
        "arch": arch,
        "width": int(row["width"]),
        "depth": int(row["depth"]),
        "tv_kwargs": {},
        "num_classes": int(num_classes),
        "input_shape": [int(s) for s in in_shape],
        "checkpoint": str(p),
        "checkpoint_sha256": _sha256(p),
    }
    return model, meta


def resolve_row(
    zoo: str,
    row: dict[str, Any],
    out_dir: str | Path,
    base_dir: str | Path = ".",
    in_shape: tuple[int, int, int] | None = None,
    num_classes: int | None = None,
) -> dict[str, Any]:
    """Resolve one non-local sheet row into ``out_dir`` (weights.safetensors + meta.json)."""
    source = row["source"]
    if source == "torchvision":
        model, meta = torchvision_model(str(row["arch"]), str(row["weights"]))
        if row.get("preprocessing") not in (None, "", "scale01"):
            meta["preprocessing"] = str(row["preprocessing"])
    elif source == "hub":
        model, meta = hub_model(str(row["weights"]), str(row["arch"]))
        meta["preprocessing"] = str(row.get("preprocessing") or "imagenet")
        if in_shape is not None:
            meta["input_shape"] = [int(s) for s in in_shape]
    elif source == "checkpoint":
        if in_shape is None or num_classes is None:
            raise ValueError(f"model {row['model']}: a checkpoint needs the input shape and classes")
        path = Path(row["weights"])
        if not path.is_absolute():
            path = Path(base_dir) / path
        model, meta = checkpoint_model(row, path, in_shape, num_classes)
        meta["preprocessing"] = str(row.get("preprocessing") or "scale01")
    elif source in MODULES:  # keras, timm, hf-hub: one module each (labelfree.zoo.sources)
        model, meta = resolve_source(row, in_shape, num_classes)
    else:
        raise ValueError(f"model {row['model']}: source {source!r} is not pretrained/checkpoint")
    meta.update(
        model=row["model"],
        zoo=zoo,
        source=source,
        weights_spec=str(row["weights"]),
        seed=None,
        batch_seed=None,
        label_map="",
        val_accuracy=None,
        train_time_s=0.0,
        task="single",
    )
    return save_model(out_dir, model.eval(), meta)
