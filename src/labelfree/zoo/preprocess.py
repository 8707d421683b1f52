"""Model input preprocessing: uint8 NHWC images -> float NCHW tensors (docs/zoo.md).

Kinds:

- ``scale01``: x / 255.
- ``center``: x / 127.5 - 1 (range [-1, 1]).
- ``imagenet``: x / 255, then ImageNet per-channel mean/std normalisation (no resizing).
- ``cifar10_kit``: x / 255, then the DataCV 2023 kit's CIFAR-10 mean/std (docs/zoo.md, reading R2).
- ``torchvision:<WeightsEnum>`` (e.g. ``torchvision:ResNet18_Weights.IMAGENET1K_V1``): the weights'
  own inference transforms (resize, centre crop, normalise), applied batched.
- ``<kind>@<R>`` / ``<kind>@<R>/<C>`` (one of the four kinds above the torchvision one): resize to
  R x R, or the shorter side to R and a centre crop C x C, before ``kind``
  (:mod:`labelfree.zoo.geometry`; e.g. ``scale01@640`` for the COCO TResNet-XL).
- ``pil:...``: a PIL evaluation pipeline per image, as timm builds it (:mod:`labelfree.zoo.evalspec`).

Inputs may be numpy uint8 arrays or torch tensors of pixel values in [0, 255]; a float tensor
input stays differentiable (PACE's FGSM takes gradients through preprocessing).

Every tensor that enters a model leaves through :func:`standard_nchw`: NHWC -> NCHW by
``permute`` gives strides that PyTorch also reads as channels_last (with C = 1 the permuted
tensor even counts as contiguous, so ``.contiguous()`` returns it unchanged), and oneDNN then
takes its channels_last convolution kernels, whose backward pass corrupts the heap on CPUs
without AVX-512 (docs/zoo.md, "Inference"; github.com/pytorch/pytorch/issues/120211). Integer images
converted by :func:`_convert` are written into a tensor allocated with those fresh strides.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
import torch

from labelfree.zoo.evalspec import EvalSpecError, is_eval_spec, parse_eval_spec
from labelfree.zoo.geometry import GeometryError, split_geometry

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: Per-channel (mean, std) normalisations after scaling to [0, 1].
NORMALISATIONS = {
    "imagenet": (IMAGENET_MEAN, IMAGENET_STD),
    # The DataCV 2023 kit's constants (docs/zoo.md, reading R2), not the usual CIFAR-10 std.
    "cifar10_kit": ((0.4914, 0.4822, 0.4465), (0.2023, 0.1994, 0.2010)),
}

KINDS = ("scale01", "center", *NORMALISATIONS, "torchvision:<WeightsEnum>", "<kind>@<R>[/<C>]",
         "pil:mode=...,interp=...,resize=R,crop=C[,mean=a/b/c,std=a/b/c]")


class PreprocessError(ValueError):
    """Unknown preprocessing kind or incompatible input."""


@lru_cache(maxsize=16)
def _tv_transform(name: str) -> Any:
    # deferred: torchvision takes 4-8 s to import; only torchvision rows need it
    from torchvision.models import get_weight

    try:
        return get_weight(name).transforms()
    except (ValueError, KeyError, AttributeError) as exc:
        raise PreprocessError(
            f"preprocessing 'torchvision:{name}': unknown torchvision weights ({exc})"
        ) from exc


def standard_nchw(t: torch.Tensor) -> torch.Tensor:
    """``t`` with the strides of a fresh contiguous tensor of its shape (copied only if needed).

    ``Tensor.contiguous()`` is not enough: it ignores the strides of size-1 dimensions, so a
    one-channel NHWC->NCHW permute, strides (HW, 1, W, 1), passes as contiguous while oneDNN
    reads it as channels_last. Autograd flows through the copy.
    """
    if t.stride() == _contiguous_strides(t.shape):
        return t
    return t.clone(memory_format=torch.contiguous_format)


def _contiguous_strides(shape: torch.Size | tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of ``shape``, as ``torch.empty(shape).stride()`` gives them."""
    strides, step = [], 1
    for size in reversed(tuple(shape)):
        strides.append(step)
        step *= max(int(size), 1)
    return tuple(reversed(strides))


#: Kinds whose integer input :func:`_convert` casts, transposes and scales into one buffer.
FUSED_KINDS = ("scale01", "center", *NORMALISATIONS)


def _convert(t: torch.Tensor, kind: str, out: torch.Tensor | None) -> torch.Tensor:
    """Integer NCHW view ``t`` -> float32 tensor with fresh strides, scaled as ``kind`` says.

    One copy casts and transposes into the output, then the scaling runs in place on it: the
    same arithmetic as ``t.float() / 255.0`` (a cast, then a float32 division), without a
    float intermediate or a separate layout copy. (A single ``torch.div`` of the permuted
    bytes gives the same values but its strided loop is slower for 3 channels.)
    """
    if kind in NORMALISATIONS and t.shape[1] != 3:
        raise PreprocessError(f"{kind!r} preprocessing needs 3 channels, got {t.shape[1]}")
    if out is None:
        out = torch.empty(t.shape, dtype=torch.float32, device=t.device)
    elif (
        out.shape != t.shape
        or out.dtype != torch.float32
        or out.device != t.device
        or out.stride() != _contiguous_strides(out.shape)
    ):
        raise PreprocessError(
            f"out must be a standard-strided float32 tensor of shape {tuple(t.shape)} on "
            f"{t.device}, got {out.dtype} {tuple(out.shape)} strides {out.stride()} on {out.device}"
        )
    out.copy_(t)  # exact: every uint8 value is a float32
    if kind == "center":
        return out.div_(127.5).sub_(1.0)
    out.div_(255.0)
    if kind in NORMALISATIONS:
        mean_values, std_values = NORMALISATIONS[kind]
        out.sub_(torch.tensor(mean_values, device=t.device).view(1, 3, 1, 1))
        out.div_(torch.tensor(std_values, device=t.device).view(1, 3, 1, 1))
    return out


def resample(t: torch.Tensor, resize: int, crop: int | None) -> torch.Tensor:
    """Float NCHW images in [0, 255] resized as a geometry suffix says (labelfree.zoo.geometry):
    ``crop`` None: to ``resize`` x ``resize``, aspect ignored; else the shorter side to
    ``resize`` (``side * resize // min(h, w)``) and the centre ``crop`` x ``crop``. Bilinear
    with antialiasing, rounded to 8-bit values (PIL and torchvision's uint8 resize round too)."""
    h, w = int(t.shape[2]), int(t.shape[3])
    short = min(h, w)
    size = (resize, resize) if crop is None else (h * resize // short, w * resize // short)
    if size != (h, w):
        t = torch.nn.functional.interpolate(t, size=size, mode="bilinear", antialias=True,
                                            align_corners=False).round_().clamp_(0, 255)
    if crop is not None:
        top, left = (size[0] - crop) // 2, (size[1] - crop) // 2
        t = t[:, :, top : top + crop, left : left + crop]
    return t


def check_kind(kind: str) -> None:
    """Raise PreprocessError unless ``kind`` names a known preprocessing."""
    if kind in ("scale01", "center", *NORMALISATIONS):
        return
    if "@" in kind:
        try:
            base, _ = split_geometry(kind)
        except GeometryError as exc:
            raise PreprocessError(str(exc)) from None
        if base not in FUSED_KINDS:
            raise PreprocessError(f"preprocessing {kind!r}: a geometry suffix goes after one of "
                                  f"{FUSED_KINDS}, not {base!r}")
        return
    if kind.startswith("torchvision:"):
        _tv_transform(kind.split(":", 1)[1])
        return
    if is_eval_spec(kind):
        try:
            parse_eval_spec(kind)
        except EvalSpecError as exc:
            raise PreprocessError(str(exc)) from None
        return
    raise PreprocessError(f"unknown preprocessing {kind!r}; known kinds: {KINDS}")


def preprocess(
    x: np.ndarray | torch.Tensor,
    kind: str = "scale01",
    channels: int | None = None,
    device: torch.device | str | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor:
    """Turn images ``x`` (N, H, W, C) with pixel values in [0, 255] into a float NCHW tensor.

    ``channels``: the model's input channels; a 1-channel input is repeated to 3 when the model
    wants 3 (grey images into ImageNet models). ``device``: where the result lives (the cast
    and scaling run there, so only uint8 bytes cross the bus).

    Integer input with ``scale01``, ``center`` or a per-channel normalisation is cast and
    transposed by one copy into a fresh NCHW float32 tensor and scaled in place there (the
    same values as ``x.float() / 255``); ``out``, a float32 tensor of the result's shape
    and standard strides, receives it instead of a new allocation (inference reuses one buffer
    for every batch). Other kinds ignore ``out``.
    """
    t = torch.from_numpy(np.ascontiguousarray(x)) if isinstance(x, np.ndarray) else x
    if t.ndim != 4:
        raise PreprocessError(f"preprocess expects (N, H, W, C) images, got shape {tuple(t.shape)}")
    if is_eval_spec(kind):  # a PIL pipeline per image (labelfree.zoo.evalspec)
        from labelfree.zoo.evaltransform import apply_eval  # deferred: torchvision's import

        return apply_eval(t, kind, channels, device)
    if device is not None and t.device != torch.device(device):
        t = t.to(device, non_blocking=True)
    t = t.permute(0, 3, 1, 2)
    if channels is not None and t.shape[1] != channels:
        if t.shape[1] == 1 and channels == 3:
            t = t.expand(-1, 3, -1, -1)
        else:
            raise PreprocessError(
                f"model expects {channels} input channels, images have {t.shape[1]}"
            )
    if not t.is_floating_point() and kind in FUSED_KINDS:
        return _convert(t, kind, out)
    if not t.is_floating_point():
        t = t.float()
    if "@" in kind:
        check_kind(kind)
        kind, geometry = split_geometry(kind)
        t = resample(t, *geometry)
    if kind == "scale01":
        return standard_nchw(t / 255.0)
    if kind == "center":
        return standard_nchw(t / 127.5 - 1.0)
    if kind in NORMALISATIONS:
        if t.shape[1] != 3:
            raise PreprocessError(f"{kind!r} preprocessing needs 3 channels, got {t.shape[1]}")
        mean_values, std_values = NORMALISATIONS[kind]
        mean = torch.tensor(mean_values, device=t.device).view(1, 3, 1, 1)
        std = torch.tensor(std_values, device=t.device).view(1, 3, 1, 1)
        return standard_nchw((t / 255.0 - mean) / std)
    if kind.startswith("torchvision:"):
        tf = _tv_transform(kind.split(":", 1)[1])
        # ImageClassification transforms take uint8 or [0, 1] float tensors, batched.
        return standard_nchw(tf(t / 255.0))
    raise PreprocessError(f"unknown preprocessing {kind!r}; known kinds: {KINDS}")
