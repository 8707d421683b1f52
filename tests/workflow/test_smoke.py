"""End to end: the smoke configuration runs the whole graph, offline, and reruns nothing."""

from __future__ import annotations

import pytest

from labelfree.store import read_table
from tests.workflow.runner import run_snakemake

pytestmark = pytest.mark.slow


def test_smoke_run_is_complete(smoke_run):
    proc = run_snakemake(smoke_run, "--dry-run")
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_spine_tables(smoke_run):
    tables = sorted((smoke_run / "results" / "infer").glob("*/accuracy.csv"))
    assert tables, "no accuracy tables were written"
    for path in tables:
        df = read_table(path)
        assert len(df) > 0
        assert (path.with_suffix(".png")).exists() and (path.with_suffix(".pdf")).exists()


@pytest.mark.parametrize("study", ["laf", "pace", "syp", "alphatrim", "metamorphic"])
def test_every_study_writes_tables_and_figures(smoke_run, study):
    """Every table has rows and its markdown twin; every figure is a real image with its pdf;
    the study wrote a checks table of the spec's conclusions (issue 13)."""
    root = smoke_run / "results" / study
    tables = sorted((root / "tables").glob("*.csv"))
    assert tables, f"{study}: no csv tables"
    for path in tables:
        assert len(read_table(path)) > 0 or path.stem.endswith("errors"), f"{path.name}: no rows"
        assert path.with_suffix(".md").exists(), f"{path.name}: no markdown twin"
    figures = sorted((root / "figures").glob("*.png"))
    assert figures, f"{study}: no png figures"
    for path in figures:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000
        assert path.with_suffix(".pdf").exists(), f"{path.name}: no pdf twin"
    checks = [p for p in tables if p.stem.endswith("checks")]
    assert checks, f"{study}: no checks table"
    for path in checks:
        df = read_table(path)
        assert {"check", "value", "threshold", "holds"} <= set(df.columns) and len(df) >= 3


def test_answer_per_configured_zoo(smoke_run):
    """Issue 14 item 3: one answer per zoo, the ranking table led by rank 1, a plan to label."""
    for zoo in ("digits", "laf_tight"):
        root = smoke_run / "results" / "answer" / zoo
        md = (root / "answer.md").read_text()
        assert md.startswith(f"# Answer for zoo `{zoo}`") and "| 1 | `" in md
        table = read_table(root / "answer.csv")
        assert set(table["laf_rank"]) == set(range(1, table["model"].nunique() + 1))
        assert table["true_accuracy"].between(0, 1).all()
        plan = read_table(root / "label-these.csv")
        assert len(plan) == 50 and plan["input_index"].is_unique
        assert (root / "answer.png").exists() and (root / "answer.pdf").exists()


def test_scorecard_scores_every_method_kind(smoke_run):
    root = smoke_run / "results" / "scorecard"
    for name in ("estimation", "ranking", "fewlabel", "best"):
        assert len(read_table(root / "tables" / f"extra-laf_tight-{name}.csv")) > 0, name
    ranking = read_table(root / "tables" / "extra-laf_tight-ranking.csv")
    assert {"LaF", "AC"} <= set(ranking["method"])
    assert (root / "figures" / "extra-laf_tight-scorecard.png").exists()


def test_every_zoo_has_its_scorecard_or_its_reason(smoke_run):
    """Issue 18 ("the default run writes the scorecard for every zoo"): extra-all-zoos lists
    every zoo of the smoke config (the default config's zoos, tiny); a zoo of two or more models
    has all its scorecard outputs and shifted rows; a one-model zoo has them too, on estimation
    (label-free MAE, few-label accuracy error) with ranking and selection noted "not applicable:
    one model"; the multi-label zoo says why it is not scored; each answer summarises its zoo's
    scorecard, a one-model zoo's naming its best estimator."""
    import yaml

    from labelfree.scorecard.core import ONE_MODEL
    from tests.workflow.runner import SMOKE_CONFIG

    zoos = list(yaml.safe_load(SMOKE_CONFIG.read_text())["zoos"])
    root = smoke_run / "results" / "scorecard"
    cover = read_table(root / "tables" / "extra-all-zoos.csv").set_index("zoo")
    assert list(cover.index) == zoos
    status = cover["scorecard"].to_dict()
    assert {z for z, s in status.items() if s == "yes"} == {
        "digits", "syp", "pace_digits", "laf_tight", "laf_spread", "metamorphic_unbiased"}
    one = {z for z, s in status.items() if s == "estimation only"}
    # a one-model zoo skipped again fails here
    assert one == {"alphatrim_backbone", "metamorphic_biased", "metamorphic_shortcut"}
    assert (cover.loc[sorted(one), "models"] == 1).all()
    assert cover.loc[sorted(one), "reason"].str.contains("ranking and model selection not "
                                                         "applicable").all()
    assert status["metamorphic_multilabel"] == "no"
    assert cover.loc["metamorphic_multilabel", "scored_testsets"] == 0
    assert cover.loc["metamorphic_multilabel", "reason"].startswith("multi-label labels only")
    for zoo in zoos:  # every zoo: its tables and figure
        for name in ("estimation", "ranking", "fewlabel", "best"):
            assert len(read_table(root / "tables" / f"extra-{zoo}-{name}.csv")) > 0, (zoo, name)
        assert (root / "figures" / f"extra-{zoo}-scorecard.png").exists(), zoo
        best = read_table(root / "tables" / f"extra-{zoo}-best.csv")
        if status[zoo] == "no":
            assert best["estimator"].isna().all() and best["note"].notna().all(), zoo
            continue
        assert best["estimator"].notna().all(), zoo
        assert ("overall" in set(best["shift"])) == (zoo != "alphatrim_backbone"), zoo  # id only
    for zoo in one:
        rank = read_table(root / "tables" / f"extra-{zoo}-ranking.csv")
        assert (rank["shift"] == "all").all() and rank["note"].str.startswith(ONE_MODEL).all()
        best = read_table(root / "tables" / f"extra-{zoo}-best.csv")
        assert (best["ranker"] == ONE_MODEL).all(), zoo
    # shifted sets: few-label accuracy error per budget
    for zoo in ("metamorphic_biased", "metamorphic_shortcut"):
        few = read_table(root / "tables" / f"extra-{zoo}-fewlabel.csv")
        scored = few[few["shift"] == "overall"]
        assert {"ActiveTesting", "SRS+labels"} <= set(scored["method"]), zoo
        assert scored["mae"].notna().all() and scored["regret"].isna().all(), zoo
        assert set(few.loc[few["shift"] == "all", "method"]) == {"ModelPicker"}  # CODA excluded
    for zoo in ("digits", "laf_tight", "metamorphic_biased"):
        md = (smoke_run / "results" / "answer" / zoo / "answer.md").read_text()
        assert f"Scorecard (`results/scorecard/tables/extra-{zoo}-best.csv`" in md, zoo
        what = "best estimator:" if zoo == "metamorphic_biased" else "best estimator and ranker:"
        assert f"over all shifted test sets, {what}" in md, zoo
    assert md.rstrip().endswith(f"Ranking and model selection: {ONE_MODEL} (nothing to rank).")


def test_summary_gathers_every_study_checks(smoke_run):
    """Issue 13 item 1: results/summary.{csv,md} from each study's checks table, with provenance."""
    table = read_table(smoke_run / "results" / "summary.csv")
    studies = {s.split("/")[0] for s in table["study"]}
    assert studies == {"laf", "pace", "syp", "alphatrim", "metamorphic"}
    assert table["holds"].notna().all() and (table["machine"].str.len() > 0).all()
    md = (smoke_run / "results" / "summary.md").read_text()
    assert md.startswith("<!-- summary:begin -->") and ".test/config/config.yaml" in md


def test_every_output_follows_the_naming_rule(smoke_run):
    """Issue 20 item 2: every table and figure the smoke run writes under results/<study>/ is
    ``<id>-<scope>[-<detail>]`` (docs/outputs.md), with the paper's id, a zoo, experiment or
    dataset of the run (or ``all``) as scope; a new table named ``foo_bar`` fails here."""
    from labelfree.outputs import POOLED, check_name

    scopes = {POOLED, "digits", "heads", "synthetic", "laf_tight", "laf_spread", "pace_digits",
              "syp", "metamorphic_unbiased", "alphatrim_backbone", "metamorphic_biased",
              "metamorphic_shortcut", "metamorphic_multilabel"}
    seen = set()
    for kind, exts in (("tables", {".csv", ".md"}), ("figures", {".png", ".pdf"})):
        for path in sorted((smoke_run / "results").glob(f"*/{kind}/*")):
            study = path.parent.parent.name
            assert path.suffix in exts, path
            parts = check_name(path.stem)  # raises on a name that breaks the rule
            assert parts["scope"] in scopes, f"{study}/{kind}/{path.name}: scope {parts['scope']!r}"
            seen.add(study)
    assert seen == {"laf", "pace", "syp", "alphatrim", "metamorphic", "scorecard", "shifts"}
