"""Apply a ``pil:`` evaluation pipeline (labelfree.zoo.evalspec) to a batch of uint8 images.

Each image goes through PIL and torchvision's functional resize and centre crop on PIL images,
exactly as ``timm.data.create_transform``'s evaluation transform does, so the tensor equals
timm's own for the same image bit for bit (tests/zoo/test_zoo_timm.py checks it); the scaling
and normalisation then run once on the whole batch, with the same float32 operations as
torchvision's ``to_tensor`` and ``normalize``.
"""

from __future__ import annotations

import numpy as np
import torch
from PIL import Image
from torchvision.transforms import InterpolationMode
from torchvision.transforms import functional as tvf

from labelfree.zoo.evalspec import EvalSpec, parse_eval_spec

_MODES = {name: InterpolationMode(name) for name in
          ("nearest", "bilinear", "bicubic", "box", "hamming", "lanczos")}


def crop_one(img: Image.Image, spec: EvalSpec) -> Image.Image:
    """Resize and centre-crop one PIL image as ``spec`` says (torchvision on PIL images)."""
    size = [spec.resize, spec.resize] if spec.mode == "squash" else spec.resize
    img = tvf.resize(img, size, interpolation=_MODES[spec.interp])
    return tvf.center_crop(img, [spec.crop, spec.crop])


def normalise(t: torch.Tensor, spec: EvalSpec) -> torch.Tensor:
    """uint8 NCHW -> float32 ``/ 255`` then ``(x - mean) / std`` (torchvision's arithmetic)."""
    out = t.to(torch.float32).div(255)
    if spec.mean is not None and spec.std is not None:
        shape = (1, -1, 1, 1)
        out = out.sub_(torch.as_tensor(spec.mean, dtype=torch.float32).view(shape))
        out = out.div_(torch.as_tensor(spec.std, dtype=torch.float32).view(shape))
    return out


def apply_eval(
    x: np.ndarray | torch.Tensor, kind: str | EvalSpec, channels: int | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """uint8 NHWC images -> float32 NCHW tensor (on ``device``) through the ``pil:`` pipeline
    ``kind``; one-channel images are repeated to three when ``channels`` is 3 (PIL's
    ``convert("RGB")`` of a greyscale image)."""
    spec = kind if isinstance(kind, EvalSpec) else parse_eval_spec(kind)
    if isinstance(x, torch.Tensor):
        if x.is_floating_point():
            raise ValueError(f"preprocessing {spec}: needs uint8 images, got {x.dtype} values")
        x = x.detach().cpu().numpy()
    if x.ndim != 4 or x.dtype != np.uint8:
        raise ValueError(f"preprocessing {spec}: needs uint8 (N, H, W, C) images, got "
                         f"{x.dtype} {x.shape}")
    if channels == 3 and x.shape[3] == 1:
        x = np.repeat(x, 3, axis=3)
    elif channels is not None and x.shape[3] != channels:
        raise ValueError(f"model expects {channels} input channels, images have {x.shape[3]}")
    grey = x.shape[3] == 1
    crops = np.empty((len(x), spec.crop, spec.crop, x.shape[3]), dtype=np.uint8)
    for i in range(len(x)):
        img = Image.fromarray(x[i, :, :, 0] if grey else x[i], "L" if grey else "RGB")
        crops[i] = np.asarray(crop_one(img, spec)).reshape(spec.crop, spec.crop, -1)
    t = torch.from_numpy(crops).permute(0, 3, 1, 2).contiguous()
    if device is not None:
        t = t.to(device)
    return normalise(t, spec)
