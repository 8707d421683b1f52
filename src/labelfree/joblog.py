"""Send a workflow job's logging, warnings and tracebacks to its log file; show progress bars.

Scripts under workflow/scripts call :func:`log_to` first. Everything a job writes to stderr ends
up in the rule's ``log:`` file, which Snakemake shows on failure. Progress bars (tqdm redraws a
bar by writing ``\\r`` + bar) are also echoed to the terminal, so ``snakemake --cores all`` shows
progress inside long jobs while log lines, warnings and tracebacks stay out of the terminal.

:func:`progress` is the one progress bar of the library (training, inference, study loops), so
every bar looks and behaves the same and goes where stderr goes.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable
from typing import Any, TextIO

#: Seconds between two redraws of a bar: a job log gets a line every 2 s at most.
MIN_INTERVAL = 2.0


class _ProgressTee:
    """A stderr stand-in: every write to the log file; tqdm redraws also to the terminal."""

    def __init__(self, log_file: TextIO, terminal: TextIO | None) -> None:
        self.log_file = log_file
        self.terminal = terminal
        self._in_bar = False

    def write(self, text: str) -> int:
        self.log_file.write(text)
        if self.terminal is not None:
            if text.startswith("\r"):  # tqdm draws and redraws its bar this way
                self._in_bar = True
                self.terminal.write(text)
                self.terminal.flush()
            elif self._in_bar and text == "\n":  # a bar closing: end its terminal line
                self._in_bar = False
                self.terminal.write(text)
                self.terminal.flush()
        return len(text)

    def flush(self) -> None:
        self.log_file.flush()

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self.log_file.fileno()

    def __getattr__(self, name: str):  # encoding, errors, ... of the log file
        return getattr(self.log_file, name)


def adapter_job(sm: Any, argv: list[str]) -> tuple[dict[str, Any], str, int]:
    """(job, log path, threads) of a thin adapter that runs either as a Snakemake ``script:``
    (``sm``, the injected object: ``params.job``, ``log[0]``, ``threads``) or from ``shell:`` as
    ``python <adapter> JOB LOG THREADS`` with JOB as JSON (``sm`` None; workflow/rules/common.smk
    ::adapter_shell)."""
    if sm is not None:
        return sm.params.job, sm.log[0], sm.threads

    return json.loads(argv[1]), argv[2], int(argv[3])


def log_to(path: str, progress_to_terminal: bool = True) -> TextIO:
    """Open ``path`` line-buffered, make it the root logger's stream and (through the progress
    tee) stderr; return the tee, which scripts hand to tqdm bars as their ``file``."""
    log_file = open(path, "w", buffering=1)  # noqa: SIM115 (lives for the whole job)
    terminal = sys.__stderr__ if progress_to_terminal else None
    sys.stderr = _ProgressTee(log_file, terminal)  # type: ignore[assignment]
    logging.basicConfig(
        stream=log_file,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(message)s",
        force=True,
    )
    logging.captureWarnings(True)
    return sys.stderr


def progress(
    iterable: Iterable[Any] | None = None,
    *,
    desc: str,
    total: float | None = None,
    unit: str = "it",
    file: TextIO | None = None,
    **options: Any,
) -> Any:
    """A tqdm bar on ``file`` or the current ``sys.stderr`` (under :func:`log_to`: the job log and
    the terminal), ASCII, redrawn at most every :data:`MIN_INTERVAL` seconds and once when it
    closes, so the final ``n/total`` always shows. Iterate it, or call ``update``/``close``.

    Always on, TTY or not (the tee is not a TTY): the bar is how a job log shows how far a long
    step got. A bar only writes to stderr; it never changes a result. ``options``: other tqdm
    arguments (a download's ``unit_scale``, a longer ``mininterval``, ``disable``).
    """
    # deferred: parse-time module (via labelfree.data.download); tqdm adds 0.035 s
    from tqdm import tqdm

    # miniters=0: redraw on time alone, so update(0) after a set_postfix_str(refresh=False) shows
    # the new postfix once the interval has passed
    kw: dict[str, Any] = {"mininterval": MIN_INTERVAL, "miniters": 0, "ascii": True, **options}
    return tqdm(
        iterable, desc=desc, total=total, unit=unit,
        file=file if file is not None else sys.stderr, **kw,
    )
