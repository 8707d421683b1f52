"""labelfree.pace.plan: what the workflow runs for a config, decided at parse time without
numpy (subjects, pools, outputs, checks)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from labelfree.config import ConfigError, validate_config
from labelfree.pace import plan as pace_plan


class Sheet:
    """The part of a zoo sheet (a DataFrame) the plan reads."""

    def __init__(self, rows):
        self.rows = rows

    def to_dict(self, orient):
        assert orient == "records"
        return [dict(r) for r in self.rows]


SHEET = Sheet([
    {"model": "hi", "preprocessing": "scale01", "label_map": ""},
    {"model": "lo", "preprocessing": "scale01", "label_map": ""},
    {"model": "m08", "preprocessing": "center", "label_map": "0:8,8:0"},
])
GROUPS = {"id": ["id"]}


def _config(repo_root, **pace):
    user = yaml.safe_load((repo_root / ".test/config/config.yaml").read_text())
    user["pace"] = {**user["pace"], "attack_model": "hi", **pace}
    return validate_config(user, repo_root / "config" / "schema.yaml")


def test_smoke_plan_subjects_groups_and_targets(repo_root, capsys):
    cfg = _config(repo_root)
    p = pace_plan.plan(cfg, True, {"pace_digits": SHEET}, GROUPS)
    assert [s["name"] for s in p.subjects] == [
        "hi@id", "lo@id", "m08@id", "hi@pace_patch", "lo@pace_patch", "hi@pace_light",
        "lo@pace_light", "hi@pace_fgsm", "hi@pace_bim"]
    assert [s["input_type"] for s in p.subjects].count("mutated") == 4
    assert [s["mutant"] for s in p.subjects][:3] == [False, False, True]
    assert p.subjects[2]["preprocessing"] == "center"
    assert p.testset_groups == {"pace_pool": [], "pace_mutated": ["pace_patch", "pace_light"],
                                "pace_generated": ["pace_fgsm", "pace_bim"],
                                "pace_train": ["pace_train"]}
    assert p.cov_on and p.cov_subjects == ["hi@id", "lo@id", "m08@id"]
    assert not p.cw_on and "cw" not in p.experiment_cfg["attack"]
    assert "css_cov" not in p.experiment_cfg and "cross_dataset_runs" not in p.experiment_cfg
    targets = p.targets()
    assert "results/pace/tables/table12-pace_digits.csv" in targets
    assert "results/pace/tables/table2-5-all-cross_dataset.csv" in targets
    assert "results/pace/figures/fig8-pace_digits.png" in targets
    assert len(targets) == len(pace_plan.TABLES) + len(pace_plan.FIGURES) + 3
    outs = p.report_outputs(lambda path, **kw: (path, kw["subcategory"]))
    assert outs["checks"] == ("results/pace/tables/extra-pace_digits-checks.csv", "tables")
    assert outs["fig4_pdf"] == "results/pace/figures/fig4-pace_digits.pdf"
    assert capsys.readouterr().err == ""


def test_disabled_plan_registers_groups_and_runs_nothing(repo_root):
    p = pace_plan.plan(_config(repo_root), False, {}, GROUPS)
    assert p.subjects == [] and p.targets() == [] and not p.cov_on
    assert p.testset_groups["pace_mutated"] == ["pace_patch", "pace_light"]


@pytest.mark.parametrize("pace, sheets, message", [
    ({"attack_model": "nope"}, {"pace_digits": SHEET}, "pace.attack_model = 'nope'"),
    ({"mutated_models": ["nope"]}, {"pace_digits": SHEET}, "pace.mutated_models lists 'nope'"),
    ({"css_cov": {"models": ["nope"]}}, {"pace_digits": SHEET}, "pace.css_cov.models lists"),
    ({}, {}, "pace.zoo = 'pace_digits' is not a configured zoo"),
])
def test_configurations_the_study_cannot_run_are_refused(repo_root, pace, sheets, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        pace_plan.plan(_config(repo_root, **pace), True, sheets, GROUPS)


def test_the_attack_model_defaults_to_the_first_non_mutant(repo_root):
    cfg = _config(repo_root, attack_model="", attack={"cw": {"enabled": True}})
    p = pace_plan.plan(cfg, True, {"pace_digits": SHEET}, GROUPS)
    assert p.attack_model == "hi" and p.cw_on
    assert [s["name"] for s in p.subjects][-3:] == ["hi@pace_fgsm", "hi@pace_bim", "hi@pace_cw"]


def test_table12_without_the_training_group_is_skipped_in_one_line(repo_root, capsys):
    cfg = _config(repo_root)
    cfg["zoos"]["pace_digits"]["testsets"].remove("pace_train")
    p = pace_plan.plan(cfg, True, {"pace_digits": SHEET}, GROUPS)
    assert not p.cov_on and p.testset_groups["pace_train"] == []
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Table 12 (CSS-COV) skipped" in err


def test_the_plan_imports_no_numpy():
    code = "import sys, labelfree.pace.plan; print('numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_every_planned_experiment_has_its_runner():
    from labelfree.pace.run import KINDS

    assert tuple(KINDS) == pace_plan.EXPERIMENTS
