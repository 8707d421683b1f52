"""Input geometry suffixes of preprocessing kinds (standard library only: the zoo sheet checks them
at parse time).

``<kind>@<R>`` resizes every image to R x R, aspect ratio ignored, then applies ``kind`` (the ASL
TResNets' COCO pipeline, docs/zoo.md, reading R3).
``<kind>@<R>/<C>`` resizes the shorter side to R (aspect kept, ``side * R // min(h, w)``) and
crops the centre C x C (torchvision ``Resize(R)`` + ``CenterCrop(C)``, the Keras Applications' and torchvision's
evaluation transform, e.g. shorter side 256, centre crop 224; docs/zoo.md, reading R3). Both
resample bilinearly with antialiasing and round to 8-bit values, as PIL's and torchvision's uint8
resizes do.
"""

from __future__ import annotations

import re

_GEOMETRY = re.compile(r"^(?P<kind>[A-Za-z0-9_]+)@(?P<resize>[1-9][0-9]*)(?:/(?P<crop>[1-9][0-9]*))?$")


class GeometryError(ValueError):
    """A malformed geometry suffix."""


def split_geometry(kind: str) -> tuple[str, tuple[int, int | None] | None]:
    """``'scale01@640'`` -> ``('scale01', (640, None))`` (squash to 640 x 640);
    ``'imagenet@256/224'`` -> ``('imagenet', (256, 224))``; ``'scale01'`` -> ``('scale01', None)``.
    """
    if "@" not in kind:
        return kind, None
    m = _GEOMETRY.match(kind)
    if not m:
        raise GeometryError(
            f"preprocessing {kind!r}: a geometry suffix is '@<R>' (resize to R x R) or "
            "'@<R>/<C>' (shorter side to R, centre crop C), e.g. scale01@448, imagenet@256/224")
    resize, crop = int(m["resize"]), int(m["crop"]) if m["crop"] else None
    if crop is not None and crop > resize:
        raise GeometryError(f"preprocessing {kind!r}: the crop {crop} exceeds the resize {resize}")
    return m["kind"], (resize, crop)
