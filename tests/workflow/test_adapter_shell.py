"""Per-model rules run their adapter from `shell:` (workflow/rules/common.smk::adapter_shell):
the command a dry run prints names the adapter, carries the job as one JSON argument equal to
what the bundle rules pass as `params.job` (functions/zoo.smk::zoo_job,
functions/inference.smk::inference_job), the log and the threads, and carries the adapter's
content digest (so that editing the adapter changes the command, Snakemake's code trigger)."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path

import yaml

from tests.workflow.runner import SMOKE_CONFIG, run_snakemake

REPO = Path(__file__).resolve().parents[2]
MODEL = "mlp-w16-adam-e8-f1-s0"


def _commands(tmp_path: Path) -> dict[str, list[str]]:
    """Rule -> the shell commands a dry run prints for the digits zoo at one model per job."""
    cfg = yaml.safe_load(SMOKE_CONFIG.read_text())
    cfg["zoos"]["digits"].update(bundle="model", testsets=["id"])
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    proc = run_snakemake(
        tmp_path / "run", "results/infer/digits/accuracy.csv", "--dry-run", "--printshellcmds",
        configfile=path,
    )
    out: dict[str, list[str]] = {}
    rule = None
    for line in proc.stdout.splitlines():
        if m := re.match(r"^(?:local)?rule (\w+):", line):
            rule = m.group(1)
        elif line.startswith("Shell command: ") and rule:
            out.setdefault(rule, []).append(line.removeprefix("Shell command: "))
    return out


def _digest(script: str) -> str:
    return hashlib.sha256((REPO / "workflow" / "scripts" / script).read_bytes()).hexdigest()[:16]


def test_per_model_rules_run_their_adapter_from_shell(tmp_path):
    commands = _commands(tmp_path)
    train = [c for c in commands["zoo_model"] if f"logs/zoo/digits/{MODEL}.log" in c]
    assert len(train) == 1
    digest, python, script, job, log, threads = shlex.split(train[0])
    assert digest == f"LABELFREE_ADAPTER_SHA256={_digest('zoo_bundle.py')}"
    assert (python, script) == ("$LABELFREE_PYTHON", "$LABELFREE_SCRIPTS/zoo_bundle.py")
    assert (log, threads) == (f"logs/zoo/digits/{MODEL}.log", "1")
    job = json.loads(job)
    assert job["out_dirs"] == [f"results/zoo/digits/{MODEL}"]
    assert [r["model"] for r in job["rows"]] == [MODEL]
    assert job["train_path"] == "results/data/digits/train.npz" and job["idset_path"] is None
    assert set(job) == {"zoo", "rows", "out_dirs", "train_path", "idset_path", "val_fraction",
                        "base_seed", "device"}

    infer = [c for c in commands["inference_model"] if f"{MODEL}/id.log" in c]
    assert len(infer) == 1
    digest, python, script, job, log, threads = shlex.split(infer[0])
    assert digest == f"LABELFREE_ADAPTER_SHA256={_digest('inference_run.py')}"
    assert (python, script) == ("$LABELFREE_PYTHON", "$LABELFREE_SCRIPTS/inference_run.py")
    job = json.loads(job)
    assert job["out_paths"] == [f"results/infer/digits/{MODEL}/id.npz"]
    assert job["testsets"] == [["id", "results/testsets/digits/id.npz"]]
    assert job["model_dirs"] == [f"results/zoo/digits/{MODEL}"]
