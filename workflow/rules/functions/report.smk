# Input functions and helpers of `report` (kept apart from its rules, see report.smk).

import functools
import hashlib
import json


@functools.cache
def config_digest():
    """A short digest of the validated config (sorted JSON): reruns provenance on any change.
    Computed once per parse (two rules use it); JSON, not YAML, since every parse pays for it
    (the default config: 1 ms, against 50 ms for a YAML dump; docs/pipeline.md, "No-op").
    """
    text = json.dumps(dict(config), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]
