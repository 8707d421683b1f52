"""ImageNet's Pascal-VOC box annotations in their real format, for tests that build tiny splits."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def write_voc(path: Path, wnid: str, width: int, height: int,
              boxes: Sequence[Sequence[int]]) -> None:
    """One ``<annotation>`` file: image size and one ``<object>`` per (xmin, ymin, xmax, ymax)."""
    objs = "".join(
        f"<object><name>{wnid}</name><pose>Unspecified</pose><truncated>0</truncated>"
        f"<difficult>0</difficult><bndbox><xmin>{b[0]}</xmin><ymin>{b[1]}</ymin>"
        f"<xmax>{b[2]}</xmax><ymax>{b[3]}</ymax></bndbox></object>"
        for b in boxes
    )
    path.write_text(
        f"<annotation><folder>val</folder><filename>{path.stem}</filename>"
        f"<size><width>{width}</width><height>{height}</height><depth>3</depth></size>"
        f"<segmented>0</segmented>{objs}</annotation>"
    )
