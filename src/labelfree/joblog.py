"""Send a workflow job's logging, warnings and tracebacks to its log file; show progress bars.

Scripts under workflow/scripts call :func:`log_to` first. Everything a job writes to stderr ends
up in the rule's ``log:`` file, which Snakemake shows on failure. Progress bars (tqdm redraws a
bar by writing ``\\r`` + bar) are also echoed to the terminal, so ``snakemake --cores all`` shows
progress inside long jobs while log lines, warnings and tracebacks stay out of the terminal.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO


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
