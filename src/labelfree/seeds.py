"""Deterministic seeds derived from the config seed and the names of an artefact.

ARCHITECTURE.md, conventions: every random draw is seeded from the config seed plus the
wildcards that name the artefact, so two runs give identical tables and reordering the
config never changes an unrelated artefact.
"""

from __future__ import annotations

import hashlib

import numpy as np


def derive_seed(base: int, *names: object) -> int:
    """Return a 32-bit seed that depends only on ``base`` and the string forms of ``names``.

    Python's ``hash`` is salted per process, so a stable digest (BLAKE2b) is used instead.
    """
    text = "\x1f".join([str(int(base)), *(str(n) for n in names)])
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % (2**32)


def rng(base: int, *names: object) -> np.random.Generator:
    """A numpy Generator seeded by :func:`derive_seed`."""
    return np.random.default_rng(derive_seed(base, *names))
