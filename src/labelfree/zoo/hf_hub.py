"""``source: hf-hub`` rows: a Hugging Face repository of a timm model, read from the local
Hugging Face cache (docs/zoo.md, "Hugging Face Hub").

``weights`` is the repository id, ``owner/name`` or ``owner/name@revision`` (``timm/resnet18.a1_in1k``).
The repository's ``config.json`` names the timm architecture, its classes and its pretrained
configuration (the preprocessing); its weights are ``model.safetensors`` (or a weights-only
``pytorch_model.bin``). Nothing is downloaded: fetch a repository once where there is network
(``huggingface_hub.snapshot_download(repo_id)`` or ``timm.create_model("hf-hub:" + repo_id,
pretrained=True)``) and it is found in ``$HF_HOME/hub`` (``HF_HUB_CACHE``). Repositories in the
``transformers`` layout (no ``architecture`` in config.json) are not read. Needs the ``timm``
extra (it brings ``huggingface_hub``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from torch import nn

from labelfree.zoo.checkpoint import load_into, read_state_dict
from labelfree.zoo.hub import WeightsMissingError
from labelfree.zoo.sources import SourceError, row_preprocessing
from labelfree.zoo.timm_source import construct as timm_construct
from labelfree.zoo.timm_source import create, own_preprocessing

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def snapshot(repo: str) -> Path:
    """The cached folder of ``owner/name[@revision]`` (no network), or an error saying how to
    fill the cache."""
    try:
        from huggingface_hub import constants, snapshot_download  # deferred: optional extra
    except ModuleNotFoundError:
        raise SourceError("hf-hub rows need huggingface_hub: pip install 'labelfree[timm]'"
                          ) from None
    repo_id, _, revision = repo.partition("@")
    try:
        return Path(snapshot_download(repo_id, revision=revision or None, local_files_only=True,
                                      cache_dir=constants.HF_HUB_CACHE))
    except Exception as exc:  # not cached (LocalEntryNotFoundError and kin)
        raise WeightsMissingError(
            f"Hugging Face repository {repo!r} is not in the cache {constants.HF_HUB_CACHE} "
            f"({type(exc).__name__}). Fetch it once with network: "
            f"huggingface_hub.snapshot_download({repo_id!r})."
        ) from None


def read_config(folder: Path, repo: str) -> dict[str, Any]:
    """The timm fields of the repository's config.json; errors name the file and what is wrong."""
    path = folder / "config.json"
    try:
        cfg = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise SourceError(f"{path}: not a readable config.json of {repo} ({exc})") from None
    if not isinstance(cfg, dict) or "architecture" not in cfg:
        raise SourceError(f"{path}: no 'architecture' key, so {repo} is not a timm repository "
                          "(transformers repositories are not read)")
    return cfg


def resolve(
    row: dict[str, Any], in_shape: tuple[int, int, int] | None, num_classes: int | None,
) -> tuple[nn.Module, dict[str, Any]]:
    """The model of an hf-hub row with its weights, and its meta.json fields."""
    repo = str(row["weights"])
    folder = snapshot(repo)
    cfg = read_config(folder, repo)
    files = [folder / f for f in WEIGHT_FILES if (folder / f).is_file()]
    if not files:
        raise SourceError(f"{folder}: no weights file ({' or '.join(WEIGHT_FILES)}) in {repo}")
    kwargs: dict[str, Any] = {}
    if cfg.get("num_classes") is not None:
        kwargs["num_classes"] = int(cfg["num_classes"])
    if isinstance(cfg.get("pretrained_cfg"), dict):
        kwargs["pretrained_cfg_overlay"] = cfg["pretrained_cfg"]
    model = create(str(cfg["architecture"]), **kwargs)
    load_into(model, read_state_dict(files[0]), f"{row['model']} ({files[0]})")
    kwargs["num_classes"] = int(model.num_classes)
    own = own_preprocessing(model)
    crop = int(own.split("crop=")[1].split(",")[0])
    meta = {
        "family": "timm",
        "arch": str(cfg["architecture"]),
        "timm_kwargs": kwargs,
        "num_classes": kwargs["num_classes"],
        "input_shape": [crop, crop, int(model.pretrained_cfg.get("input_size", (3,))[0])],
        "preprocessing": row_preprocessing(row, own),
        "model_preprocessing": own,
        "hf_repo": repo,
        "hf_snapshot": folder.name,
        "weights_file": str(files[0]),
    }
    return model, meta


def construct(meta: dict[str, Any]) -> nn.Module:
    return timm_construct(meta)
