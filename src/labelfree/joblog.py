"""Send a workflow job's logging, warnings, tracebacks and progress bars to its log file.

Scripts under workflow/scripts call :func:`log_to` first, so that everything a job prints (tqdm
bars write to stderr) ends up in the rule's ``log:`` file, which Snakemake shows on failure.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO


def log_to(path: str) -> TextIO:
    """Open ``path`` line-buffered, make it stderr and the root logger's stream; return it."""
    log_file = open(path, "w", buffering=1)  # noqa: SIM115 (lives for the whole job)
    sys.stderr = log_file
    logging.basicConfig(
        stream=log_file,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        force=True,
    )
    logging.captureWarnings(True)
    return log_file
