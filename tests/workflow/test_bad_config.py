"""Reliability: bad configurations stop before any job with one line naming the culprit.

Each case edits the smoke configuration, runs a dry run of the real workflow, and checks the
message and that nothing was written under results/. Job-level failures (corrupt artefacts,
NaN logits, ...) are in test_bad_inputs.py.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.workflow.runner import SMOKE_CONFIG, run_snakemake

SMOKE = yaml.safe_load(SMOKE_CONFIG.read_text())
FIRST_ZOO = next(iter(SMOKE["zoos"]))
FIRST_DATASET = next(iter(SMOKE["datasets"]))


def _set(cfg: dict, dotted: str, value) -> None:
    *parents, last = dotted.split(".")
    node = cfg
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = value


def _delete(cfg: dict, dotted: str) -> None:
    *parents, last = dotted.split(".")
    node = cfg
    for p in parents:
        node = node[p]
    del node[last]


CASES = [
    # (id, edits {dotted key: value} (None deletes), expected fragment of the message)
    ("unknown-top-key", {"sede": 1}, "unknown config key(s) ['sede']"),
    ("unknown-nested-key", {"inference.batchsize": 8}, "unknown config key(s) ['batchsize']"),
    ("seed-wrong-type", {"seed": "zero"}, "'seed': value 'zero' has type str"),
    ("seed-negative", {"seed": -1}, "'seed': value -1 must be >= 0"),
    ("batch-size-zero", {"inference.batch_size": 0}, "'inference.batch_size': value 0 must be >= 1"),
    ("device-unknown", {"inference.device": "tpu"}, "'inference.device': value 'tpu' is not one of"),
    ("dataset-source-unknown", {f"datasets.{FIRST_DATASET}.source": "imagenet21k"},
     f"'datasets.{FIRST_DATASET}.source': value 'imagenet21k' is not one of"),
    ("no-datasets", {"datasets": {}}, "'datasets'"),
    ("zoo-unknown-dataset", {f"zoos.{FIRST_ZOO}.dataset": "nosuchdata"},
     f"'zoos.{FIRST_ZOO}.dataset': value 'nosuchdata' is not a configured dataset"),
    ("zoo-empty", {f"zoos.{FIRST_ZOO}.grid": [], f"zoos.{FIRST_ZOO}.sheet": ""},
     f"zoo '{FIRST_ZOO}': give either 'sheet'"),
    ("zoo-sheet-missing", {f"zoos.{FIRST_ZOO}.sheet": "nosuch/zoo.tsv"}, "sheet file"),
    ("zoo-unknown-column", {f"zoos.{FIRST_ZOO}.grid": [{"arch": "mlp", "colour": "red"}],
                            f"zoos.{FIRST_ZOO}.sheet": ""}, "unknown column(s) ['colour']"),
    ("zoo-bad-fraction", {f"zoos.{FIRST_ZOO}.grid": [{"arch": "mlp", "data_fraction": 1.5}],
                          f"zoos.{FIRST_ZOO}.sheet": ""}, "data_fraction=1.5 not in (0, 1]"),
    ("zoo-duplicate-ids", {f"zoos.{FIRST_ZOO}.grid": [{"model": "m"}, {"model": "m"}],
                           f"zoos.{FIRST_ZOO}.sheet": ""}, "duplicate model ids ['m']"),
    ("zoo-missing-checkpoint",
     {f"zoos.{FIRST_ZOO}.grid": [{"source": "checkpoint", "weights": "nosuch.safetensors"}],
      f"zoos.{FIRST_ZOO}.sheet": ""}, "nosuch.safetensors not found"),
    ("zoo-no-testsets", {f"zoos.{FIRST_ZOO}.testsets": []}, f"'zoos.{FIRST_ZOO}.testsets'"),
    ("zoo-unknown-feature", {f"zoos.{FIRST_ZOO}.features": ["logits2"]},
     f"'zoos.{FIRST_ZOO}.features.0': value 'logits2' is not one of"),
    ("severity-out-of-range", {"shifts.severities": [6]}, "'shifts.severities.0': value 6 must be <= 5"),
    ("corruption-unknown", {"shifts.corruptions": ["rain"]}, "'shifts.corruptions.0': value 'rain'"),
    ("study-not-an-object", {"laf": "yes"}, "'laf': value 'yes' has type str"),
    ("answer-headline-unknown-zoo", {"answer.headline": {"nosuchzoo": "id"}},
     "answer.headline names zoo 'nosuchzoo'"),
    ("answer-headline-unknown-set", {"answer.headline": {FIRST_ZOO: "nosuchset"}},
     f"answer.headline.{FIRST_ZOO} is 'nosuchset', not a test set"),
]


@pytest.mark.parametrize(("edits", "fragment"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_config_stops_with_one_clear_line(tmp_path: Path, edits, fragment):
    cfg = copy.deepcopy(SMOKE)
    for key, value in edits.items():
        if value is None:
            _delete(cfg, key)
        else:
            _set(cfg, key, value)
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = run_snakemake(tmp_path / "run", "--dry-run", configfile=path, check=False, timeout=120)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"bad config was accepted:\n{out[-2000:]}"
    lines = [ln for ln in out.splitlines() if fragment in ln]
    assert lines, f"expected a line containing {fragment!r}; got:\n{out[-3000:]}"
    assert not (tmp_path / "run" / "results").exists(), "a failed config left outputs behind"
