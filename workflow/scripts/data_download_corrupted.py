"""Thin adapter: fetch and verify a released corruption archive (labelfree.data.corrupted)."""

import logging
import sys

from labelfree.data.corrupted import fetch_release, release
from labelfree.store import save_json

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_file = open(sm.log[0], "w", buffering=1)  # noqa: SIM115 (lives for the whole job)
sys.stderr = log_file
logging.basicConfig(
    stream=log_file, level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", force=True
)

rel = release(sm.params.release)
path = fetch_release(sm.params.release, root=sm.params.root)  # verifies the checksum
save_json(
    {"release": rel.name, "path": str(path), rel.archive.algorithm: rel.archive.digest},
    sm.output[0],
)
