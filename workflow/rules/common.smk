# Glue shared by the whole workflow: validated config, zoo sheets, test-set groups, paths.
# Layer and study files stay declarative; their own helpers live in workflow/rules/functions/.

import copy
import gc
import hashlib
import json
import os
import re
import sys
from pathlib import Path

_SRC = str(Path(workflow.basedir) / "src")
if _SRC not in sys.path:
    sys.path.insert(0, _SRC)
# Scripts run in subprocesses: let them import the library even without `pip install -e .`.
os.environ.update(
    PYTHONPATH=os.pathsep.join(p for p in (_SRC, os.environ.get("PYTHONPATH", "")) if p)
)

# The graph of a large zoo is millions of small objects (jobs, their files, params) that live
# until Snakemake exits. With Python's default thresholds (700, 10, 10) the cyclic garbage
# collector runs thousands of times while Snakemake builds it and rescans the survivors each
# time; collecting young objects every 50,000 allocations instead cuts most of that work
# (docs/architecture.md, "Graph cost"). Only the Snakemake process is affected: jobs run in their
# own.
gc.set_threshold(50_000, 20, 10)

from snakemake.exceptions import WorkflowError
from snakemake_interface_executor_plugins.settings import DeploymentMethod

from labelfree.config import ConfigError, check_zoos, validate_config_cached
from labelfree.laf.plan import labelled_zoos
from labelfree.skips import fixed_zoo_skips
from labelfree.syp.plan import autocast as syp_autocast
from labelfree.syp.plan import feature_dtype as syp_feature_dtype
from labelfree.zoo.bundle import BundleError, assign_bundles
from labelfree.zoo.predictions import PredictionZooError, scan_cached
from labelfree.zoo.sheet import ZooError, build_sheet

# The config as the user wrote it, before defaults: which keys were given (a prediction zoo's
# `testsets`, a study's zoo; labelfree.skips).
USER_CONFIG = copy.deepcopy(dict(config))

try:
    # Validated once per config and schema: later parses (a rerun, a dry run) read the result
    # from .snakemake/ (labelfree.config.validate_config_cached).
    config.update(
        validate_config_cached(
            config,
            Path(workflow.basedir) / "config" / "schema.yaml",
            cache=Path(".snakemake", "labelfree", "config.json"),
        )
    )
    check_zoos(config)
    # Relative paths in a config resolve against its file's folder (the last --configfile;
    # config/ for the default run): sheets and prediction folders here, checkpoints against
    # their sheet's folder.
    CONFIG_DIR = (
        Path(workflow.config_settings.configfiles[-1]).resolve().parent
        if workflow.config_settings.configfiles
        else Path(workflow.basedir) / "config"
    )
    # Prediction zoos (docs/your-zoo.md): every file validated now, before any job; the scan
    # is cached under .snakemake/ so later parses only stat the files.
    PRED_ZOOS = {}
    _problems = []
    for _zoo, _zcfg in config["zoos"].items():
        if not _zcfg["predictions"]:
            continue
        _root = Path(_zcfg["predictions"]).expanduser()
        _given = "testsets" in ((USER_CONFIG.get("zoos") or {}).get(_zoo) or {})
        try:
            PRED_ZOOS[_zoo] = scan_cached(
                _root if _root.is_absolute() else CONFIG_DIR / _root,
                _zcfg["kind"],
                _zcfg["testsets"] if _given else None,
                _zcfg["features"],
                cache=Path(".snakemake", "labelfree", f"predictions-{_zoo}.json"),
            )
        except PredictionZooError as _err:
            _problems.append(f"prediction zoo '{_zoo}': {_err}")
    if _problems:
        raise ConfigError("; ".join(_problems))
    for _zoo, _pz in PRED_ZOOS.items():  # the zoo's test sets are its folder's
        config["zoos"][_zoo]["testsets"] = list(_pz.testsets)
    ZOO_SHEETS = {
        name: build_sheet(name, zcfg, CONFIG_DIR)
        for name, zcfg in config["zoos"].items()
        if name not in PRED_ZOOS
    }
    # Model ids in sheet (prediction zoos: folder) order; each sheet model's row as a plain
    # dict (NaN -> None), built once: per-model jobs look their row up here instead of
    # filtering a DataFrame (graph cost).
    ZOO_MODELS = {
        z: (PRED_ZOOS[z].models if z in PRED_ZOOS else ZOO_SHEETS[z]["model"].tolist())
        for z in config["zoos"]
    }
    ZOO_ROWS = {
        z: {
            r["model"]: {k: (None if v is None or v != v else v) for k, v in r.items()}
            for r in s.to_dict("records")
        }
        for z, s in ZOO_SHEETS.items()
    }
    # Bundles (docs/zoo.md): bundle name -> model ids; `bundle: model` zoos use generic rules.
    # ZOO_BUNDLES: sheet zoos (trained or resolved, then inference); PRED_BUNDLES: import jobs.
    ZOO_BUNDLES = {
        z: assign_bundles(z, ZOO_MODELS[z], config["zoos"][z]["bundle"])
        for z in ZOO_SHEETS
    }
    PRED_BUNDLES = {
        z: assign_bundles(z, ZOO_MODELS[z], config["zoos"][z]["bundle"])
        for z in PRED_ZOOS
    }
except (ConfigError, ZooError, BundleError) as _err:
    raise WorkflowError(f"Invalid configuration: {_err}") from None

SEED = config["seed"]
DATASETS = config["datasets"]
ZOOS = config["zoos"]
PER_MODEL_ZOOS = [z for z in ZOO_SHEETS if ZOOS[z]["bundle"] == "model"]
PER_MODEL_PRED_ZOOS = [z for z in PRED_ZOOS if ZOOS[z]["bundle"] == "model"]
# The one test-set group of a prediction zoo: its import writes one file per model.
PRED_GROUP = "predictions"


# Studies that cannot run on the configured zoos say so in one line and are skipped
# (labelfree.skips); laf and scorecard skip zoos without labels in their own files.
def skip_study(study, reason):
    """Disable ``study`` for this run, saying why in one line (stderr, once per parse)."""
    config[study]["enabled"] = False
    print(f"labelfree: {study} skipped: {reason}", file=sys.stderr)


for _study, _reason in fixed_zoo_skips(config, USER_CONFIG, set(PRED_ZOOS)).items():
    skip_study(_study, _reason)
    if _study == "metamorphic":  # its rules are built per zoo even when it is disabled
        config["metamorphic"]["zoos"] = {}

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
    group=r"[A-Za-z0-9][A-Za-z0-9_.+-]*",


# Resource requests (docs/cluster.md, "Sizing jobs"). A job with heavy work (training,
# inference, downloading or preparing a dataset, a study's computation) asks for what its config
# sizes it to and says so with `**HEAVY` among its resources. Every other job (a copy, a table,
# a figure, a report, bookkeeping) asks for at most LIGHT_RESOURCES, never a study's runtime or
# memory; a copy of a split holds the split, so it asks for its dataset's memory instead.
LIGHT_RESOURCES = {"mem_mb": 2000, "runtime": 30}
# The mark of a heavy job: a resource no scheduler limits unless told to (`--resources heavy=N`
# would run at most N heavy jobs at once); the resource test reads it from a dry run.
HEAVY = {"heavy": 1}


def alternatives(names):
    """A wildcard constraint matching exactly ``names`` (nothing when empty)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def zoo_models(zoo):
    """Model ids of a zoo, in sheet order (the column order of every prediction matrix)."""
    return ZOO_MODELS[zoo]


def zoo_dataset(zoo):
    """The zoo's dataset; a prediction zoo's test sets (labels only) live under a name of
    their own, `predictions-<zoo>`, which no configured dataset can take (no `-` allowed).
    """
    return f"predictions-{zoo}" if zoo in PRED_ZOOS else ZOOS[zoo]["dataset"]


def zoo_labelled(zoo):
    """The zoo's test sets that have labels: every set of a model zoo (images come with
    labels; the studies' scripts set multi-label ones aside), a prediction zoo's labelled ones.
    """
    return PRED_ZOOS[zoo].labelled if zoo in PRED_ZOOS else zoo_testsets(zoo)


def zoo_groups(zoo):
    """Test-set groups of a zoo: each token of its `testsets` -> the sets it stands for (a
    bare test-set name is a group of one); empty groups left out. One inference file per model
    and group (ARCHITECTURE.md, artefact contracts). A prediction zoo has one group, all its
    test sets: its import writes one file per model."""
    if zoo in PRED_ZOOS:
        return {PRED_GROUP: list(PRED_ZOOS[zoo].testsets)}
    out = {}
    for token in ZOOS[zoo]["testsets"]:
        sets = list(dict.fromkeys(TESTSET_GROUPS.get(token, [token])))
        if sets and token not in out:
            out[token] = sets
    return out


def zoo_testsets(zoo):
    """The zoo's test sets, groups expanded, order kept, duplicates dropped."""
    names = []
    for sets in zoo_groups(zoo).values():
        names.extend(n for n in sets if n not in names)
    return names


def testset_group(zoo, testset):
    """The group whose inference file holds ``testset`` for ``zoo`` (the first that lists it)."""
    for group, sets in zoo_groups(zoo).items():
        if testset in sets:
            return group
    raise WorkflowError(
        f"Invalid configuration: zoo {zoo!r} does not run test set {testset!r}; its groups: "
        f"{zoo_groups(zoo)}"
    )


# Per-model rules (zoo_model, inference_model) run their adapter from `shell:`, not `script:`:
# Snakemake re-reads a `script:` source for every job while it builds the graph, a large share
# of the dry run of a zoo of thousands of one-model jobs (docs/architecture.md, "Graph cost"). The
# command finds the adapter and the Python that `script:` would use (the job's conda env's,
# else Snakemake's own) through environment variables set here at every parse, like PYTHONPATH.
os.environ.update(
    LABELFREE_SCRIPTS=str(Path(workflow.basedir) / "workflow" / "scripts"),
    LABELFREE_PYTHON=(
        "python"
        if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
        else sys.executable
    ),
)


def adapter_shell(script):
    """The `shell:` command of a per-model rule: ``python <script> JOB LOG THREADS``, JOB the
    rule's ``params.job``, a JSON object. Its text (Snakemake's code rerun trigger for `shell:`
    rules) does not depend on where the repository or Python live, and carries the adapter's
    content digest (as a variable of the command, not a trailing comment, which would swallow
    anything Snakemake appends), so editing the adapter reruns its jobs as it would a `script:`
    rule's.
    """
    path = Path(workflow.basedir) / "workflow" / "scripts" / script
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return (
        f"LABELFREE_ADAPTER_SHA256={digest}"
        f' "$LABELFREE_PYTHON" "$LABELFREE_SCRIPTS/{script}" {{params.job:q}} {{log:q}} {{threads}}'
    )


def dataset_split(dataset, split):
    return f"results/data/{dataset}/{split}.npz"


def testset_path(dataset, testset):
    return f"results/testsets/{dataset}/{testset}.npz"


def infer_file(zoo, model, group):
    """Inference artefact of one model on one test-set group (every set of the group)."""
    return f"results/infer/{zoo}/{model}/{group}.npz"


def infer_path(zoo, testset, model):
    """The inference file holding ``model`` on ``testset``; read it with
    labelfree.store.read_logits(path, testset) / read_features(path, layer, testset)."""
    return infer_file(zoo, model, testset_group(zoo, testset))


def infer_paths(zoo, testset):
    """The inference file of every model of the zoo holding ``testset``, in sheet order."""
    group = testset_group(zoo, testset)
    return [infer_file(zoo, m, group) for m in zoo_models(zoo)]


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
