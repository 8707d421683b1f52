"""`snakemake --report` builds on the smoke run with the plain install (issue 22, item 3), and its
first screen shows each zoo's answer (issue 33, item 7): rendered in headless Chromium
(Playwright), where one can be found; else that test skips, saying why.

The first screen of a report can be looked at, and saved, from the command line:

    python -m tests.workflow.test_report report.html docs/img/report-first-screen.png
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from importlib.metadata import requires
from pathlib import Path

import pytest

from labelfree.answer import SUMMARY_LINE
from tests.workflow.runner import run_snakemake

pytestmark = pytest.mark.slow

STUDIES = ("laf", "pace", "syp", "alphatrim", "metamorphic")
VIEWPORT = {"width": 1280, "height": 800}
SYSTEM_BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")

#: Text of the block elements that lie wholly inside the viewport and are on top there (not
#: covered, e.g. by the menu): the element itself is what its corners and centre show.
_VISIBLE = """() => {
  const out = [];
  const shown = (el, x, y) => { const t = document.elementFromPoint(x, y);
                                return t !== null && (t === el || el.contains(t)); };
  for (const el of document.querySelectorAll('p, li, h1, h2, h3, td')) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0 && r.top >= 0 && r.left >= 0 && r.bottom <= innerHeight
        && r.right <= innerWidth && el.checkVisibility()
        && shown(el, r.left + 2, r.top + 2) && shown(el, r.right - 2, r.bottom - 2)
        && shown(el, (r.left + r.right) / 2, (r.top + r.bottom) / 2)) out.push(el.innerText);
  }
  return out;
}"""


def browser() -> tuple[str | None, str]:
    """(executable or None for Playwright's own, "") when a Chromium can be launched, else
    (None, why not)."""
    try:
        from playwright.sync_api import sync_playwright  # deferred: optional test dependency
    except ImportError:
        return None, "playwright is not installed (pip install playwright)"
    candidates = [os.environ.get("LABELFREE_CHROMIUM")] + [shutil.which(b) for b in SYSTEM_BROWSERS]
    found = [c for c in candidates if c]
    with sync_playwright() as p:
        try:
            own = p.chromium.executable_path
        except Exception:  # noqa: BLE001 - no bundled browser for this platform
            own = ""
        if own and Path(own).exists():
            return None, ""
    if found:
        return found[0], ""
    return None, ("no Chromium: Playwright's own is not downloaded (`playwright install "
                  "chromium` needs its CDN) and none of $LABELFREE_CHROMIUM, "
                  f"{', '.join(SYSTEM_BROWSERS)} is on PATH")


def first_screen(html: Path, executable: str | None = None, shot: Path | None = None,
                 timeout_ms: int = 60_000) -> list[str]:
    """The visible paragraphs of the report's first screen (1280 x 800), after its app drew."""
    from playwright.sync_api import sync_playwright  # deferred: optional test dependency

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = b.new_page(viewport=VIEWPORT)
            page.goto(Path(html).resolve().as_uri(), timeout=timeout_ms)
            page.wait_for_function("document.body.innerText.length > 200", timeout=timeout_ms)
            page.wait_for_timeout(1000)  # the app's last layout pass
            if shot is not None:
                page.screenshot(path=str(shot))
            return page.evaluate(_VISIBLE)
        finally:
            b.close()



@pytest.fixture(scope="module")
def report(smoke_run, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "report.html"
    run_snakemake(smoke_run, "--report", str(path))
    return path


def test_plain_install_has_what_the_report_needs():
    """Snakemake's HTML report imports pygments, which snakemake itself does not require;
    README command one installs only our dependencies, so we must name it."""
    needed = {re.split(r"[<>=!~; \[]", r, maxsplit=1)[0].lower() for r in requires("labelfree") or []
              if "extra ==" not in r}
    assert "pygments" in needed, sorted(needed)


def test_report_names_every_study(report):
    html = report.read_text(errors="replace")
    assert len(html) > 10_000, "report is nearly empty"
    missing = [s for s in STUDIES if f'"{s}"' not in html and f"'{s}'" not in html]
    assert not missing, f"report has no category for {missing}"


def plain(markdown_line: str) -> str:
    """A summary line as the report shows it: no markdown or reStructuredText marks."""
    return markdown_line.replace("**", "").replace("`", "")


def test_the_first_screen_shows_each_zoos_answer(report, smoke_run, tmp_path):
    """At 1280 x 800, before any click or scroll, the landing page holds every zoo's answer
    line (the summary line of its answer.md), whole."""
    exe, why = browser()
    if why:
        pytest.skip(f"cannot render the report: {why}")
    answers = sorted((smoke_run / "results" / "answer").glob("*/answer.md"))
    assert len(answers) >= 2, answers
    seen = first_screen(report, exe, tmp_path / "first-screen.png")
    missing = []
    for md in answers:
        line = plain(md.read_text().splitlines()[SUMMARY_LINE])
        assert line.startswith(f"In short (zoo {md.parent.name}, test set "), line
        if not any(line in " ".join(t.split()) for t in seen):
            missing.append(md.parent.name)
    assert not missing, f"not on the first screen: {missing}; it shows {seen}"


if __name__ == "__main__":
    exe, why = browser()
    if why:
        sys.exit(why)
    for text in first_screen(Path(sys.argv[1]), exe, Path(sys.argv[2]) if len(sys.argv) > 2
                             else None):
        print(text)
