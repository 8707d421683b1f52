"""README's measured block is generated, not typed (issue 13 item 1).

README embeds docs/default-run/summary.md verbatim between the summary markers; that file is
results/summary.md of a default run, and it must be what the current generator renders from the
run's committed csv (docs/default-run/summary.csv). Typing a number into README, editing the
committed md by hand, or changing the renderer without regenerating fails this test.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from labelfree.scorecard.core import ONE_MODEL
from labelfree.store import read_table
from labelfree.summary import CHECKS_HEADER, embedded, from_csv, readme_block, render
from labelfree.zoo.sheet import build_sheet

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "docs" / "default-run"


def test_readme_embeds_the_default_runs_summary_verbatim():
    """README holds the block's head (provenance, counts, which method when) verbatim and links
    the every-check table instead of repeating it."""
    readme = (REPO / "README.md").read_text()
    full = (RUN / "summary.md").read_text()
    block = embedded(readme)
    assert block == readme_block(full)
    assert CHECKS_HEADER in full and CHECKS_HEADER not in block
    assert block.split("\n")[:3] == full.split("\n")[:3]  # the provenance line, unchanged
    assert "[docs/default-run/summary.md](docs/default-run/summary.md)" in block


def test_committed_summary_is_the_generators_rendering_of_the_run_csv():
    table, meta = from_csv(RUN / "summary.csv")
    assert meta["config"] == "config/config.yaml"
    methods = read_table(RUN / "summary-methods.csv")
    assert (RUN / "summary.md").read_text() == render(table, meta, methods)
    # issue 18: the default run scores every zoo, one-model zoos on estimation only; the block
    # lists each zoo with a scored shifted set: every zoo of the config but those of a
    # multi-label dataset (accuracy is not defined for multi-hot labels). alphatrim_backbone
    # has its dataset's corrupted and natural sets besides its source and alphatrim-train sets.

    cfg = yaml.safe_load((RUN.parents[1] / "config" / "config.yaml").read_text())
    multilabel = {z for z, c in cfg["zoos"].items()
                  if (cfg["datasets"][c["dataset"]].get("options") or {}).get("multilabel")}
    expected = set(cfg["zoos"]) - multilabel
    assert set(methods["zoo"]) == expected and multilabel == {"metamorphic_multilabel"}
    n_models = {z: len(build_sheet(z, c, RUN.parents[1] / "config")) for z, c in cfg["zoos"].items()}
    one = {z for z in expected if n_models[z] == 1}
    # a one-model zoo skipped again fails here
    assert one == {"alphatrim_backbone", "metamorphic_biased", "metamorphic_shortcut"}
    assert (methods.loc[methods["zoo"].isin(one), "ranker"] == ONE_MODEL).all()
    assert methods.loc[methods["zoo"].isin(one), "estimator"].notna().all()
    assert {s.split("/")[0] for s in table["study"]} == {"laf", "pace", "syp", "alphatrim",
                                                        "metamorphic"}
