# Input functions and helpers of `report` (kept apart from its rules, see report.smk).

import hashlib

import yaml


def config_digest():
    """A short digest of the validated config (sorted YAML): reruns provenance on any change."""
    text = yaml.safe_dump(dict(config), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
