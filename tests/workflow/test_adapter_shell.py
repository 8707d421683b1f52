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
import shutil
import subprocess
from pathlib import Path

import yaml

from tests.workflow.runner import SMOKE_CONFIG, run_snakemake, snakemake_cmd

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


def test_editing_an_adapter_reruns_its_jobs_and_moving_the_repository_does_not(tmp_path):
    """Snakemake's code trigger for a `shell:` rule compares the command's text with the one
    recorded when the job ran (snakemake/persistence::_code): after one model of the digits zoo
    is trained, a copy of the workflow elsewhere plans nothing (the command names no absolute
    path), and the same copy with one more line in zoo_bundle.py plans that model's training
    again, as a `script:` rule's newer script would."""
    cfg = yaml.safe_load(SMOKE_CONFIG.read_text())
    cfg["zoos"]["digits"].update(
        bundle="model", testsets=["id"],
        grid=[{"arch": "mlp", "width": 16, "epochs": 8, "batch_size": 32, "seed": 0}],
    )
    cfg_path = tmp_path / "cfg.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    work, target = tmp_path / "run", f"results/zoo/digits/{MODEL}/meta.json"
    run_snakemake(work, target, configfile=cfg_path)

    tree = tmp_path / "moved"  # copies keep their mtimes: no `script:` rule looks edited
    tree.mkdir()
    shutil.copy2(REPO / "Snakefile", tree / "Snakefile")
    for name in ("workflow", "src", "config", "envs"):
        shutil.copytree(REPO / name, tree / name, ignore=shutil.ignore_patterns("__pycache__"))

    def dry_run() -> str:
        cmd = snakemake_cmd(work, target, "--dry-run", configfile=cfg_path)
        cmd[cmd.index("--snakefile") + 1] = str(tree / "Snakefile")
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
        return proc.stdout + proc.stderr

    assert "Nothing to be done" in dry_run()
    adapter = tree / "workflow" / "scripts" / "zoo_bundle.py"
    adapter.write_text(adapter.read_text() + "# an edit\n")
    out = dry_run()
    assert re.search(r"^rule zoo_model:", out, flags=re.M), out[-3000:]
    assert "Code has changed since last execution" in out, out[-3000:]
