"""Deterministic seeds derived from the config seed and the names of an artefact.

ARCHITECTURE.md, conventions: every random draw is seeded from the config seed plus the
wildcards that name the artefact, so two runs give identical tables and reordering the
config never changes an unrelated artefact.

A name that was renamed keeps its draws through :data:`FORMER_NAMES`, the one place where a
former name survives: :func:`derive_seed` hashes the former name in place of the new one, at
every point where the name reaches a seed (a dataset's partition or scenes, a zoo's
validation split, a study's sample), so a rename changes paths and tables' labels, never a number.
"""

from __future__ import annotations

import hashlib

import numpy as np

#: Current name -> the name whose random stream it keeps (docs/data.md, "Renamed entries"). The
#: metamorphic study's shipped datasets and zoos and its RQ1 sample's stream were named ``mm_*``
#: when the default and smoke runs' data, models and checks (docs/metamorphic.md, "Names") were
#: drawn; the study now has one name, ``metamorphic``, and these rows keep those draws. A row
#: is added when a config entry is renamed and its draws must stay; never removed while a
#: committed result depends on it.
FORMER_NAMES: dict[str, str] = {
    "metamorphic_unbiased": "mm_unbiased",
    "metamorphic_biased": "mm_biased",
    "metamorphic_shortcut": "mm_shortcut",
    "metamorphic_multilabel": "mm_multilabel",
    "metamorphic_imagenet": "mm_imagenet",
    "metamorphic_coco": "mm_coco",
    "metamorphic_coco_r50": "mm_coco_r50",
    "metamorphic_rq1": "mm_rq1",
}


def seed_name(name: object) -> str:
    """The string a name contributes to a seed: its former name if it has one, else itself."""
    text = str(name)
    return FORMER_NAMES.get(text, text)


def derive_seed(base: int, *names: object) -> int:
    """Return a 32-bit seed that depends only on ``base`` and the string forms of ``names``
    (each through :func:`seed_name`).

    Python's ``hash`` is salted per process, so a stable digest (BLAKE2b) is used instead.
    """
    text = "\x1f".join([str(int(base)), *(seed_name(n) for n in names)])
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % (2**32)


def rng(base: int, *names: object) -> np.random.Generator:
    """A numpy Generator seeded by :func:`derive_seed`."""
    return np.random.default_rng(derive_seed(base, *names))
