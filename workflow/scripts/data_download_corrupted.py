"""Thin adapter: fetch and verify a released corruption archive (labelfree.data.corrupted)."""

from labelfree.data.corrupted import fetch_release, release
from labelfree.joblog import log_to
from labelfree.store import save_json

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

rel = release(sm.params.release)
path = fetch_release(sm.params.release, root=sm.params.root)  # verifies the checksum
save_json(
    {"release": rel.name, "path": str(path), rel.archive.algorithm: rel.archive.digest},
    sm.output[0],
)
