"""A zoo with one clean test set and nothing else (issue 14 item 4): `snakemake` goes through to
the answer, and every enabled study either runs or says in one line why it skips; none stops
the run. The smallest config that shows it: a sheet of two user checkpoints and one local
model on the embedded digits, every study key left out except lighter LaF/scorecard settings."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.workflow.runner import run_snakemake

pytestmark = pytest.mark.slow


def make_zoo(folder: Path, studies: dict | None = None) -> Path:
    import torch
    from safetensors.torch import save_file

    from labelfree.zoo.arch import build_model

    folder.mkdir(parents=True, exist_ok=True)
    for width in (8, 16):
        torch.manual_seed(width)
        save_file(build_model("mlp", (8, 8, 1), 10, width=width).state_dict(),
                  str(folder / f"mlp{width}.safetensors"))
    (folder / "zoo.tsv").write_text(
        "model\tsource\tarch\twidth\tweights\tepochs\n"
        "ck8\tcheckpoint\tmlp\t8\tmlp8.safetensors\t\n"
        "ck16\tcheckpoint\tmlp\t16\tmlp16.safetensors\t\n"
        "local\tlocal\tmlp\t16\t\t3\n"
    )
    cfg = {
        "datasets": {"digits": {"source": "digits"}},
        "zoos": {"clean": {"dataset": "digits", "testsets": ["id"], "sheet": "zoo.tsv"}},
        "laf": {"repetitions": 3, "ces": {"repetitions": 1}},
        "scorecard": {"runs": 2, "budgets": [10, 20]},
        **(studies or {}),
    }
    path = folder / "clean.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _skip_lines(stderr: str, study: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith(f"labelfree: {study} skipped: ")]


def test_clean_only_zoo_goes_through_to_the_answer(tmp_path):
    work = tmp_path / "run"
    proc = run_snakemake(work, configfile=make_zoo(tmp_path / "cfg"), timeout=900)
    res = work / "results"
    answer = (res / "answer" / "clean" / "answer.md").read_text()
    assert all(f"`{m}`" in answer for m in ("ck8", "ck16", "local"))
    # runs: laf (tables on the one clean set), scorecard, the accuracy table, the summary
    assert (res / "laf" / "tables" / "table3-4-all-id.csv").is_file()
    assert (res / "laf" / "figures" / "table6-all.png").is_file()  # empty, not a crash
    assert (res / "scorecard" / "tables" / "extra-clean-best.csv").is_file()
    assert (res / "infer" / "clean" / "accuracy.csv").is_file()
    assert "`laf`" in (res / "summary.md").read_text()
    # skips, one line each, naming why
    reasons = {s: _skip_lines(proc.stderr, s) for s in ("pace", "syp", "alphatrim", "metamorphic")}
    assert all(len(v) == 1 for v in reasons.values()), proc.stderr[-3000:]
    assert "'pace_digits' (the default of pace.zoo) is not configured" in reasons["pace"][0]
    assert "no zoos are configured" in reasons["metamorphic"][0]
    for study in ("pace", "syp", "alphatrim", "metamorphic"):
        assert not (res / study).exists()
    assert not _skip_lines(proc.stderr, "laf") and not _skip_lines(proc.stderr, "scorecard")


def test_studies_pointed_at_a_clean_only_zoo_say_what_it_lacks(tmp_path):
    studies = {"pace": {"zoo": "clean"}, "syp": {"zoo": "clean"}}
    work = tmp_path / "run"
    proc = run_snakemake(work, "--dry-run", configfile=make_zoo(tmp_path / "cfg", studies),
                         timeout=300)
    pace, syp = _skip_lines(proc.stderr, "pace"), _skip_lines(proc.stderr, "syp")
    assert len(pace) == 1 and "test sets ['pace_mutated', 'pace_generated']" in pace[0]
    assert len(syp) == 1 and "test sets ['syp_ref', 'syp_meta', 'syp_val'" in syp[0]
    assert "results/answer/clean/answer.md" in proc.stdout
