"""Apply a ``pil:`` evaluation pipeline (labelfree.zoo.evalspec) to a batch of uint8 images.

Each image goes through PIL and torchvision's functional resize and centre crop on PIL images,
exactly as ``timm.data.create_transform``'s evaluation transform does, so the tensor equals
timm's own for the same image bit for bit (docs/zoo.md, "Keras, timm and Hugging Face
models"); the scaling and normalisation then run once on the whole batch, with the same float32
operations as torchvision's ``to_tensor`` and ``normalize``.
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


def crop_one(img: Image.Image, pipe: EvalSpec) -> Image.Image:
    """Resize and centre-crop one PIL image as ``pipe`` says (torchvision on PIL images)."""
    size = [pipe.resize, pipe.resize] if pipe.mode == "squash" else pipe.resize
    img = tvf.resize(img, size, interpolation=_MODES[pipe.interp])
    return tvf.center_crop(img, [pipe.crop, pipe.crop])


def normalise(t: torch.Tensor, pipe: EvalSpec) -> torch.Tensor:
    """uint8 NCHW -> float32 ``/ 255`` then ``(x - mean) / std`` (torchvision's arithmetic)."""
    out = t.to(torch.float32).div(255)
    if pipe.mean is not None and pipe.std is not None:
        shape = (1, -1, 1, 1)
        out = out.sub_(torch.as_tensor(pipe.mean, dtype=torch.float32).view(shape))
        out = out.div_(torch.as_tensor(pipe.std, dtype=torch.float32).view(shape))
    return out


def apply_eval(
    x: np.ndarray | torch.Tensor, kind: str | EvalSpec, channels: int | None = None,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """uint8 NHWC images -> float32 NCHW tensor (on ``device``) through the ``pil:`` pipeline
    ``kind``; one-channel images are repeated to three when ``channels`` is 3 (PIL's
    ``convert("RGB")`` of a greyscale image)."""
    pipe = kind if isinstance(kind, EvalSpec) else parse_eval_spec(kind)
    if isinstance(x, torch.Tensor):
        if x.is_floating_point():
            raise ValueError(f"preprocessing {pipe}: needs uint8 images, got {x.dtype} values")
        x = x.detach().cpu().numpy()
    if x.ndim != 4 or x.dtype != np.uint8:
        raise ValueError(f"preprocessing {pipe}: needs uint8 (N, H, W, C) images, got "
                         f"{x.dtype} {x.shape}")
    if channels == 3 and x.shape[3] == 1:
        x = np.repeat(x, 3, axis=3)
    elif channels is not None and x.shape[3] != channels:
        raise ValueError(f"model expects {channels} input channels, images have {x.shape[3]}")
    grey = x.shape[3] == 1
    crops = np.empty((len(x), pipe.crop, pipe.crop, x.shape[3]), dtype=np.uint8)
    for i in range(len(x)):
        img = Image.fromarray(x[i, :, :, 0] if grey else x[i], "L" if grey else "RGB")
        crops[i] = np.asarray(crop_one(img, pipe)).reshape(pipe.crop, pipe.crop, -1)
    t = torch.from_numpy(crops).permute(0, 3, 1, 2).contiguous()
    if device is not None:
        t = t.to(device)
    return normalise(t, pipe)
