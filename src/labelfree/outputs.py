"""The one naming rule of the studies' tables and figures (docs/outputs.md).

Every output is ``results/<study>/tables/<name>.{csv,md}`` or
``results/<study>/figures/<name>.{png,pdf}`` with

    <name> = <id>-<scope>[-<detail>]

- ``<id>``: the paper's own table or figure id, ``table<N>`` or ``fig<N>`` (``table3``, ``fig4``,
  Roman numerals written in digits, appendix letters kept: ``tableA1``); ``table<N>-<M>`` for one
  file that holds consecutive paper items (``table9-10`` for Tables 9 and 10); ``extra`` for an
  output with no paper counterpart (checks, timings, calibration tables).
- ``<scope>``: what the output was computed on: the zoo (pace, syp, scorecard), the experiment
  (alphatrim), the dataset (the shifts layer's examples), or ``all`` (:data:`POOLED`) when its
  rows pool every zoo the study analyses (laf, metamorphic). Zoo, experiment and dataset names
  are ``[A-Za-z0-9_]+`` by the config schema, so the scope never holds a dash.
- ``<detail>``: lower-case words joined by ``_``, present when one id and scope have several
  outputs in one folder (``table2-3-pace_digits-best_counts``), always present after ``extra``.

A study declares each output by its *stem*, the name without the scope (``table9-10``,
``table2-3-best_counts``, ``extra-checks``); :func:`output_name` inserts the scope, and the
report caption of the output is ``workflow/report/<study>/<stem>.rst``. Standard library only:
the rule files import it while Snakemake parses them.
"""

from __future__ import annotations

import re

#: the scope of an output whose rows pool every zoo the study analyses
POOLED = "all"

_ID = r"(?:table|fig)[A-Z]?[0-9]+(?:-[0-9]+)?|extra"
_DETAIL = r"[a-z][a-z0-9_]*"
_SCOPE = r"[A-Za-z0-9_]*[A-Za-z_][A-Za-z0-9_]*"
_WILDCARD = r"\{[A-Za-z_]+\}"  # a Snakemake wildcard standing for the scope in a rule's pattern
#: a stem: ``<id>[-<detail>]``
STEM = re.compile(rf"^(?P<id>{_ID})(?:-(?P<detail>{_DETAIL}))?$")
#: an output name: ``<id>-<scope>[-<detail>]``
NAME = re.compile(rf"^(?P<id>{_ID})-(?P<scope>{_SCOPE})(?:-(?P<detail>{_DETAIL}))?$")


def split_stem(stem: str) -> tuple[str, str | None]:
    """``(id, detail)`` of a declared stem; ValueError naming the stem if it breaks the rule."""
    m = STEM.match(stem)
    if not m or (m["id"] == "extra" and not m["detail"]):
        raise ValueError(
            f"output stem {stem!r} breaks the naming rule: <id>[-<detail>] with <id> a paper "
            "id (table3, fig4, table9-10, tableA1) or extra (then a detail is required), "
            "detail lower-case words joined by _ (docs/outputs.md)"
        )
    return m["id"], m["detail"]


def output_name(stem: str, scope: str) -> str:
    """``<id>-<scope>[-<detail>]``: the file name (without suffix) of ``stem`` computed on ``scope``
    (or a rule's pattern when ``scope`` is a wildcard such as ``{zoo}``)."""
    paper_id, detail = split_stem(stem)
    if not re.fullmatch(_SCOPE, scope) and not re.fullmatch(_WILDCARD, scope):
        raise ValueError(
            f"output scope {scope!r} (for {stem!r}) breaks the naming rule: a zoo, experiment or "
            f"dataset name [A-Za-z0-9_]+ with a letter or _, or {POOLED!r} (docs/outputs.md)"
        )
    return f"{paper_id}-{scope}" + (f"-{detail}" if detail else "")


def check_name(name: str) -> dict[str, str | None]:
    """The parts (id, scope, detail) of an output name; ValueError if it breaks the rule."""
    m = NAME.match(name)
    if not m or (m["id"] == "extra" and not m["detail"]):
        raise ValueError(
            f"output name {name!r} breaks the naming rule <id>-<scope>[-<detail>] "
            "(table3-all, fig4-digits, table2-3-pace_digits-best_counts, extra-all-checks; "
            "docs/outputs.md)"
        )
    return m.groupdict()


def stem_of(name: str) -> str:
    """The stem (caption name) of an output name: the name without its scope."""
    parts = check_name(name)
    return parts["id"] + (f"-{parts['detail']}" if parts["detail"] else "")


def table_files(study: str, stem: str, scope: str) -> tuple[str, str]:
    """``results/<study>/tables/<name>.csv`` and its ``.md`` twin."""
    base = f"results/{study}/tables/{output_name(stem, scope)}"
    return f"{base}.csv", f"{base}.md"


def figure_files(study: str, stem: str, scope: str) -> tuple[str, str]:
    """``results/<study>/figures/<name>.png`` and its ``.pdf`` twin."""
    base = f"results/{study}/figures/{output_name(stem, scope)}"
    return f"{base}.png", f"{base}.pdf"
