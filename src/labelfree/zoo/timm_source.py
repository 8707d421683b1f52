"""``source: timm`` rows: any ``timm.create_model`` name (docs/zoo.md, "timm").

``arch`` is the model name (``resnet18``, ``vit_small_patch16_224.augreg_in21k_ft_in1k``);
``weights`` is a weights file (safetensors, or a weights-only torch state dict; read without
unpickling code, labelfree.zoo.checkpoint) or ``pretrained`` (timm's own weights from the
user's Hugging Face cache, downloaded there if missing and the network allows). A file whose
classifier has another number of classes than the model's default gets a classifier of its
size. The preprocessing is the model's own (timm's pretrained configuration: input size,
interpolation, crop, mean, std, as a ``pil:`` string, labelfree.zoo.evalspec) unless the row
gives one. Needs the ``timm`` extra (``pip install labelfree[timm]``).
"""

from __future__ import annotations

from typing import Any

from torch import nn

from labelfree.zoo.checkpoint import load_into, read_state_dict
from labelfree.zoo.evalspec import from_timm_config
from labelfree.zoo.hub import WeightsMissingError
from labelfree.zoo.sources import SourceError, model_file, row_preprocessing


def timm_module() -> Any:
    """The ``timm`` package, or an error saying how to install it."""
    try:
        import timm  # deferred: optional extra
    except ModuleNotFoundError:
        raise SourceError("timm rows need the timm package: pip install 'labelfree[timm]'"
                          ) from None
    return timm


def create(name: str, **kwargs: Any) -> nn.Module:
    """``timm.create_model(name, pretrained=False, **kwargs)``, with an unknown name named."""
    timm = timm_module()
    try:
        return timm.create_model(name, pretrained=False, **kwargs)
    except RuntimeError as exc:
        if "Unknown model" in str(exc):
            raise SourceError(f"timm has no model {name!r} ({exc}); see timm.list_models()"
                              ) from None
        raise


def classifier_rows(model: nn.Module, state: dict[str, Any]) -> int | None:
    """Rows of the classifier weight in ``state`` (the key timm's pretrained configuration
    names), or None when the state has no such key."""
    names = model.pretrained_cfg.get("classifier") or ()
    for name in [names] if isinstance(names, str) else names:
        w = state.get(f"{name}.weight")
        if w is not None and w.ndim >= 2:
            return int(w.shape[0])
    return None


def own_preprocessing(model: nn.Module) -> str:
    """The model's own evaluation pipeline as a ``pil:`` string (timm's resolved data config)."""
    from timm.data import resolve_data_config  # deferred: optional extra

    return str(from_timm_config(resolve_data_config(model=model)))


def resolve(
    row: dict[str, Any], in_shape: tuple[int, int, int] | None, num_classes: int | None,
) -> tuple[nn.Module, dict[str, Any]]:
    """The model of a timm row with its weights, and its meta.json fields."""
    name = str(row["arch"])
    if row["weights"] == "pretrained":
        timm = timm_module()
        try:
            model = timm.create_model(name, pretrained=True)
        except Exception as exc:  # no network and no cache: every failure means "not there"
            raise WeightsMissingError(
                f"model {row['model']}: timm weights of {name!r} are not in the Hugging Face "
                f"cache and could not be downloaded ({type(exc).__name__}: {exc}). Run "
                f"timm.create_model({name!r}, pretrained=True) once with network (the files land "
                "in $HF_HOME/hub), or save the weights to a file and name it in `weights`."
            ) from None
        kwargs: dict[str, Any] = {"num_classes": int(model.num_classes)}
        source_file = ""
    else:
        path = model_file(row)
        state = read_state_dict(path)
        model = create(name)
        rows = classifier_rows(model, state)
        if rows is not None and rows != model.num_classes:
            model.reset_classifier(rows)
        load_into(model, state, f"{row['model']} ({path})")
        kwargs = {"num_classes": int(model.num_classes)}
        source_file = str(path)
    own = own_preprocessing(model)
    crop = int(own.split("crop=")[1].split(",")[0])
    meta = {
        "family": "timm",
        "arch": name,
        "timm_kwargs": kwargs,
        "num_classes": kwargs["num_classes"],
        "input_shape": [crop, crop, int(model.pretrained_cfg.get("input_size", (3,))[0])],
        "preprocessing": row_preprocessing(row, own),
        "model_preprocessing": own,
        "weights_file": source_file,
        "timm_version": timm_module().__version__,
    }
    return model, meta


def construct(meta: dict[str, Any]) -> nn.Module:
    return create(meta["arch"], **meta.get("timm_kwargs", {}))
