# Glue shared by the whole workflow: validated config, zoo sheets, test-set groups, paths.
# Layer and study files stay declarative; their own helpers live in workflow/rules/functions/.

import os
import sys
from pathlib import Path

_SRC = str(Path(workflow.basedir) / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)
# Scripts run in subprocesses: let them import the library even without `pip install -e .`.
os.environ.update(
    PYTHONPATH=os.pathsep.join(p for p in (_SRC, os.environ.get("PYTHONPATH", "")) if p)
)

from snakemake.exceptions import WorkflowError

from labelfree.config import ConfigError, validate_config
from labelfree.zoo.sheet import ZooError, build_sheet

try:
    config.update(
        validate_config(config, Path(workflow.basedir) / "config" / "schema.yaml")
    )
    for _zoo, _zcfg in config["zoos"].items():
        if _zcfg["dataset"] not in config["datasets"]:
            raise ConfigError(
                f"config key 'zoos.{_zoo}.dataset': value {_zcfg['dataset']!r} is not a "
                f"configured dataset; configured: {sorted(config['datasets'])}"
            )
    ZOO_SHEETS = {
        name: build_sheet(name, zcfg, workflow.basedir)
        for name, zcfg in config["zoos"].items()
    }
except (ConfigError, ZooError) as _err:
    raise WorkflowError(f"Invalid configuration: {_err}") from None

SEED = config["seed"]
DATASETS = config["datasets"]
ZOOS = config["zoos"]

# Test-set groups a zoo's `testsets` list may name; layers and studies add their own groups
# (e.g. shifts adds the corruption sets) before inference.smk expands them.
TESTSET_GROUPS: dict[str, list[str]] = {
    "id": ["id"],
    "corruptions": [
        f"{c}-{s}"
        for c in config["shifts"]["corruptions"]
        for s in config["shifts"]["severities"]
    ],
}


wildcard_constraints:
    dataset=r"[A-Za-z0-9_]+",
    zoo=r"[A-Za-z0-9_]+",
    model=r"[A-Za-z0-9][A-Za-z0-9_.+-]*",
    split=r"[A-Za-z0-9_]+",


def zoo_models(zoo):
    """Model ids of a zoo, in sheet order (the column order of every prediction matrix)."""
    return ZOO_SHEETS[zoo]["model"].tolist()


def zoo_dataset(zoo):
    return ZOOS[zoo]["dataset"]


def zoo_testsets(zoo):
    """The zoo's test sets, groups expanded, order kept, duplicates dropped."""
    names = []
    for token in ZOOS[zoo]["testsets"]:
        group = TESTSET_GROUPS.get(token, [token])
        names.extend(n for n in group if n not in names)
    return names


def dataset_split(dataset, split):
    return f"results/data/{dataset}/{split}.npz"


def testset_path(dataset, testset):
    return f"results/testsets/{dataset}/{testset}.npz"


def infer_path(zoo, testset, model):
    return f"results/infer/{zoo}/{zoo_dataset(zoo)}/{testset}/{model}.npz"


def infer_paths(zoo, testset):
    """One inference artefact per model of the zoo on one test set, in sheet order."""
    return [infer_path(zoo, testset, m) for m in zoo_models(zoo)]


def model_dir(zoo, model):
    return f"results/zoo/{zoo}/{model}"


def study_enabled(study):
    return bool(config.get(study, {}).get("enabled", True))


def all_targets():
    """Every final artefact of the configured run: spine tables plus each enabled study's."""
    targets = [
        rules.report_provenance.output.config,
        rules.report_provenance.output.software,
    ]
    for zoo in ZOOS:
        targets += [
            f"results/infer/{zoo}/accuracy.csv",
            f"results/infer/{zoo}/accuracy.png",
        ]
    for study, fn in STUDY_TARGETS.items():
        if study_enabled(study):
            targets += fn()
    return targets


# Each study rule file registers a function returning its final targets.
STUDY_TARGETS = {}
