"""The ``pil:`` preprocessing kind: an evaluation pipeline on PIL images, written as one string
(standard library only: the zoo sheet checks it at parse time; docs/zoo.md).

``pil:mode=center,interp=bicubic,resize=235,crop=224,mean=0.485/0.456/0.406,std=0.229/0.224/0.225``
is what ``timm.data.create_transform(**resolve_data_config(model=m))`` builds for evaluation:

- ``mode=center``: resize the shorter side to ``resize`` (aspect kept), centre crop
  ``crop`` x ``crop``; ``mode=squash``: resize to ``resize`` x ``resize`` (aspect ignored), then
  the centre crop;
- ``interp``: ``nearest``, ``bilinear``, ``bicubic``, ``box``, ``hamming`` or ``lanczos``
  (PIL's filters, which torchvision's ``Resize`` uses on PIL images, with antialiasing);
- then ``/ 255`` and ``(x - mean) / std`` per channel (``mean``/``std``: three values joined by
  ``/``; omitted: no normalisation).

A timm row's meta.json holds the string made from the model's pretrained configuration
(:func:`from_timm_config`); a sheet row may write its own to override it.
:mod:`labelfree.zoo.evaltransform` applies it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PREFIX = "pil:"
MODES = ("center", "squash")
INTERPOLATIONS = ("nearest", "bilinear", "bicubic", "box", "hamming", "lanczos")


class EvalSpecError(ValueError):
    """A malformed ``pil:`` preprocessing string; the message names the string and the part."""


@dataclass(frozen=True)
class EvalSpec:
    """One evaluation pipeline: resize (``mode``, ``interp``, ``resize``), centre ``crop``, then
    ``/ 255`` and, when ``mean`` is given, ``(x - mean) / std``."""

    mode: str
    interp: str
    resize: int
    crop: int
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None

    def __str__(self) -> str:
        parts = [f"mode={self.mode}", f"interp={self.interp}", f"resize={self.resize}",
                 f"crop={self.crop}"]
        if self.mean is not None and self.std is not None:
            parts += ["mean=" + "/".join(repr(float(v)) for v in self.mean),
                      "std=" + "/".join(repr(float(v)) for v in self.std)]
        return PREFIX + ",".join(parts)


def is_eval_spec(kind: str) -> bool:
    return str(kind).startswith(PREFIX)


def parse_eval_spec(kind: str) -> EvalSpec:
    """``pil:key=value,...`` -> :class:`EvalSpec`; every problem named in one error."""
    if not is_eval_spec(kind):
        raise EvalSpecError(f"preprocessing {kind!r} does not start with {PREFIX!r}")
    fields: dict[str, str] = {}
    for part in kind[len(PREFIX):].split(","):
        key, eq, value = part.partition("=")
        if not eq or not key or key in fields:
            raise EvalSpecError(f"preprocessing {kind!r}: {part!r} is not one new key=value")
        fields[key.strip()] = value.strip()
    allowed = {"mode", "interp", "resize", "crop", "mean", "std"}
    errs = [f"unknown key(s) {sorted(set(fields) - allowed)}"] if set(fields) - allowed else []
    mode, interp = fields.get("mode", "center"), fields.get("interp", "bilinear")
    if mode not in MODES:
        errs.append(f"mode={mode!r} is not one of {MODES}")
    if interp not in INTERPOLATIONS:
        errs.append(f"interp={interp!r} is not one of {INTERPOLATIONS}")
    sizes = {}
    for key in ("resize", "crop"):
        try:
            sizes[key] = int(fields[key])
            if sizes[key] < 1:
                raise ValueError
        except KeyError:
            errs.append(f"{key} is missing")
        except ValueError:
            errs.append(f"{key}={fields[key]!r} is not a positive integer")
    if len(sizes) == 2 and sizes["crop"] > sizes["resize"]:
        errs.append(f"crop={sizes['crop']} exceeds resize={sizes['resize']}")
    norm: dict[str, tuple[float, ...] | None] = {"mean": None, "std": None}
    for key in norm:
        if key in fields:
            try:
                norm[key] = tuple(float(v) for v in fields[key].split("/"))
            except ValueError:
                errs.append(f"{key}={fields[key]!r} is not numbers joined by '/'")
                continue
            if len(norm[key]) not in (1, 3):
                errs.append(f"{key} has {len(norm[key])} values, not 1 or 3")
    if (norm["mean"] is None) != (norm["std"] is None):
        errs.append("mean and std go together")
    if norm["std"] is not None and any(v == 0 for v in norm["std"]):
        errs.append("std has a zero")
    if errs:
        raise EvalSpecError(f"preprocessing {kind!r}: " + "; ".join(errs))
    return EvalSpec(mode, interp, sizes["resize"], sizes["crop"], norm["mean"], norm["std"])


def from_timm_config(cfg: dict) -> EvalSpec:
    """The pipeline of ``timm.data.create_transform(**cfg)`` for evaluation, where ``cfg`` is
    ``timm.data.resolve_data_config(...)``'s dict (square ``input_size``, crop mode ``center``
    or ``squash``; timm's ``transforms_imagenet_eval``: ``floor(size / crop_pct)``)."""
    _, h, w = cfg["input_size"]
    if h != w:
        raise EvalSpecError(f"timm input_size {cfg['input_size']} is not square; write the "
                            "row's preprocessing yourself")
    mode = cfg.get("crop_mode") or "center"
    if mode not in MODES:
        raise EvalSpecError(f"timm crop_mode {mode!r} is not one of {MODES}")
    crop_pct = cfg.get("crop_pct") or 0.875
    interp = cfg.get("interpolation") or "bilinear"
    if interp == "random":
        interp = "bilinear"
    return EvalSpec(mode, interp, int(math.floor(h / crop_pct)), int(h),
                    tuple(float(v) for v in cfg["mean"]), tuple(float(v) for v in cfg["std"]))
