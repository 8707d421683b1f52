"""Job logs: everything in the log file; only progress bars reach the terminal (issue 14 item 6)."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import logging, sys, warnings
from tqdm import tqdm
from labelfree.joblog import log_to
log_to(sys.argv[1])
logging.info("a log line")
warnings.warn("a warning")
for _ in tqdm(range(3), desc="training", mininterval=0):
    pass
print("done", file=sys.stderr)
"""


def test_progress_bars_reach_the_terminal_and_logs_do_not(tmp_path):
    log = tmp_path / "job.log"
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(log)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    text = log.read_text()
    assert "a log line" in text and "a warning" in text and "training" in text and "done" in text
    assert "training" in proc.stderr and "3/3" in proc.stderr  # the bar, in the terminal
    assert "a log line" not in proc.stderr and "a warning" not in proc.stderr
    assert "done" not in proc.stderr


def test_the_returned_stream_is_the_tee(tmp_path):
    """Scripts pass log_to's return value to tqdm(file=...): it must echo bars too."""
    script = SCRIPT.replace("log_to(sys.argv[1])", "f = log_to(sys.argv[1])").replace(
        'desc="training"', 'desc="training", file=f')
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "j.log")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "3/3" in proc.stderr, proc.stderr
