"""Nothing heavy at parse time (issue 23, item 4): a dry run of the workflow imports no deep-
learning, plotting or scikit-learn module.

Parsing the Snakefile runs every rule file; each `from labelfree... import` there is paid by every
`snakemake` invocation (dry runs, no-op reruns, every cluster job). The rule files must take what
they need at parse time (test-set names, output lists, config checks) from import-light modules
(the studies' plan modules, labelfree.shifts.released, labelfree.zoo.sheet and
labelfree.zoo.bundle). Before that split a dry run imported torch (via labelfree.syp.oracle
and labelfree.zoo.batched), scikit-learn (labelfree.syp.baselines) and matplotlib (labelfree.syp
.figures, labelfree.alphatrim.figures, labelfree.shifts.corruptions): about 3 s CPU of a 6 s dry
run (bench/results/graph_cost.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.workflow.runner import REPO, snakemake_cmd

#: top-level packages no dry run may import (each costs 0.1-2.5 s CPU to import)
HEAVY = ("torch", "torchvision", "sklearn", "matplotlib", "scipy")



def _modules_after_dry_run(workdir: Path, configfile: Path) -> set[str]:
    """Every module a dry run imports, read from ``python -X importtime`` (one stderr line per
    first import, also for imports made inside functions while the DAG is built)."""
    args = snakemake_cmd(workdir, "--dry-run", "--quiet", configfile=configfile)[1:]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "snakemake", *args],
        capture_output=True, text=True, timeout=600, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.mark.parametrize("configfile", [".test/config/config.yaml", "config/config.yaml"])
def test_dry_run_imports_nothing_heavy(tmp_path, configfile):
    mods = _modules_after_dry_run(tmp_path, REPO / configfile)
    assert "labelfree.config" in mods  # the probe saw the Snakefile being parsed
    loaded = sorted(m for m in mods if m.split(".")[0] in HEAVY)
    assert not loaded, (
        f"a dry run on {configfile} imported {sorted({m.split('.')[0] for m in loaded})} "
        f"(e.g. {loaded[:5]}); import them inside the functions that need them"
    )


#: Job scripts that read artefacts and never run a model: their imports must not pull torch
#: (about 2.5 s CPU per job start; the smoke run starts 10 accuracy jobs, 4 SYP and 4
#: alpha-trimming jobs of this kind). A top-level `import torch` in labelfree.accuracy,
#: labelfree.syp.run's chain (oracle, baselines) or labelfree.alphatrim.run's chain
#: (zoo.batched) fails this.
TORCH_FREE_SCRIPTS = (
    "inference_accuracy", "syp_tables", "syp_oracle", "syp_testsets", "alphatrim_analyse",
    "alphatrim_report", "laf_part", "laf_tables", "pace_experiment", "scorecard_zoo",
    "answer_zoo", "summary",
)


@pytest.mark.parametrize("script", TORCH_FREE_SCRIPTS)
def test_artefact_reading_jobs_do_not_import_torch(script):
    """Run the script's import statements alone (its body needs Snakemake's job object)."""
    probe = (
        "import ast, sys\n"
        f"tree = ast.parse(open({str(REPO / 'workflow' / 'scripts' / (script + '.py'))!r}).read())\n"
        "exec(compile(ast.Module([n for n in tree.body if isinstance(n, (ast.Import, "
        "ast.ImportFrom))], []), 'imports', 'exec'))\n"
        "print(' '.join(m for m in ('torch', 'torchvision', 'sklearn') if m in sys.modules))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == "", f"workflow/scripts/{script}.py imports {proc.stdout.strip()}"
