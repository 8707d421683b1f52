# Input functions and helpers of `report` (kept apart from its rules, see report.smk).

import functools
import hashlib

import yaml


@functools.cache
def config_digest():
    """A short digest of the validated config (sorted YAML): reruns provenance on any change.
    Computed once per parse (two rules use it; a 10,000-model grid takes 0.7 s to dump).
    """
    text = yaml.safe_dump(dict(config), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
