"""Class files of user data (standard library only): a label map from folder names to class
indices, and a class subset (docs/your-zoo.md, section 4).

Both are read here and nowhere else: the ``imagefolder`` source maps its folders and relabels its
images with them (labelfree.data.imagefolder), and a zoo row's ``class_subset`` restricts its
model's logits to the same classes (labelfree.zoo.sources).
"""

from __future__ import annotations

import os
from pathlib import Path

from labelfree.data.base import DataError

#: Defaults of ``options`` of ``imagefolder`` (labelfree.data.imagefolder; mirrored in the schema).
IMAGEFOLDER_OPTIONS: dict[str, object] = {
    "images_dir": "", "label_map": "", "class_subset": "", "size": 224,
    "interpolation": "bilinear", "limit": 0,
}


def read_label_map(path: str | os.PathLike[str]) -> dict[str, int]:
    """``{folder name: class index}`` from a label-map file (see the module doc)."""
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except OSError as exc:
        raise DataError(f"label map {p}: cannot be read ({exc})") from None
    out: dict[str, int] = {}
    for n, line in enumerate(lines, 1):
        line = line.split("#")[0].strip()
        if not line:
            continue
        parts = line.replace(",", " ").replace("\t", " ").split()
        if len(parts) != 2 or not parts[1].lstrip("-").isdigit() or int(parts[1]) < 0:
            raise DataError(f"label map {p}, line {n}: {line!r} is not '<folder> <class index>'")
        if parts[0] in out:
            raise DataError(f"label map {p}, line {n}: folder {parts[0]!r} appears twice")
        out[parts[0]] = int(parts[1])
    if not out:
        raise DataError(f"label map {p}: no '<folder> <class index>' line")
    return out


def read_class_subset(path: str | os.PathLike[str], num_classes: int | None = None) -> list[int]:
    """Class indices, one per line (or separated by commas or spaces; ``#`` starts a comment),
    in the order the restricted logits take them; distinct, within ``num_classes``. The one
    reader of a class-subset file, for datasets and zoo rows alike (labelfree.zoo.sources)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise DataError(f"class subset {p}: cannot be read ({exc})") from None
    tokens = [t for line in text.splitlines() for t in line.split("#")[0].replace(",", " ").split()]
    try:
        idx = [int(t) for t in tokens]
    except ValueError:
        raise DataError(f"class subset {p}: holds something other than integer class indices"
                        ) from None
    if not idx:
        raise DataError(f"class subset {p}: no class index")
    if len(set(idx)) != len(idx):
        raise DataError(f"class subset {p}: repeated class indices")
    bad = [i for i in idx if i < 0 or (num_classes is not None and i >= num_classes)]
    if bad:
        raise DataError(f"class subset {p}: indices {bad[:5]} are outside the model's "
                        f"{num_classes} classes")
    return idx
