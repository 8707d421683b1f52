# Input functions and helpers of `inference` (kept apart from its rules, see inference.smk).

import fnmatch


def zoo_model_dirs(zoo):
    return [model_dir(zoo, m) for m in zoo_models(zoo)]


def zoo_infer_files(zoo):
    """Every inference file of a zoo: one per model and test-set group, sheet order."""
    groups = list(zoo_groups(zoo))
    return [infer_file(zoo, m, g) for m in zoo_models(zoo) for g in groups]


def group_testset_paths(zoo, group):
    return [testset_path(zoo_dataset(zoo), t) for t in zoo_groups(zoo)[group]]


def zoo_feature_dtype(zoo):
    """Storage precision of the zoo's features (zoos.<zoo>.feature_dtype; a param, so that a
    change reruns the zoo's inference)."""
    return syp_feature_dtype(config, zoo)


def feature_sets(zoo, group):
    """The sets of a zoo's group whose features the inference files keep (None: every set).

    Features are read by PACE (its pools, mutated and generated sets, `pace_train`), SYP (its
    own groups), alpha-trimming (`alphatrim_train`, `id`) and the scorecard's Dispersion and FD
    (config scorecard.features, on the sets it scores, scorecard.testsets, and the source set);
    of the -C suite (group `corruptions`) only the scorecard reads any, so that group keeps the
    features of the sets the scorecard scores (the default run: severity 5) and no others.
    """
    if group != "corruptions" or not ZOOS[zoo]["features"]:
        return None
    card = config["scorecard"]
    if not card["testsets"]:  # the scorecard scores every set
        return None
    read = (
        [*card["testsets"], card["source"]]
        if card["enabled"] and card["features"]
        else []
    )
    return [
        t
        for t in zoo_groups(zoo)[group]
        if any(fnmatch.fnmatchcase(t, p) for p in read)
    ]


def inference_job(zoo, models, group):
    """What an inference job runs: labelfree.inference.infer_group's arguments (the adapter
    adds its progress file): the models' folders, the group's (test set, path) pairs, one
    output file per model, the features and the `inference` settings.
    """
    return {
        "model_dirs": [model_dir(zoo, m) for m in models],
        "testsets": group_testset_pairs(zoo, group),
        "out_paths": [infer_file(zoo, m, group) for m in models],
        "features": ZOOS[zoo]["features"],
        "feature_dtype": zoo_feature_dtype(zoo),
        "feature_sets": feature_sets(zoo, group),
        "batch_size": INFER["batch_size"],
        "device": INFER["device"],
        "amp": syp_autocast(config, zoo),
        "cache_bytes": INFER["cache_mb"] * 2**20,
    }


def bundle_job_groups(zoo):
    """The groups each bundle job of a zoo runs: all of them in one job (inference.jobs:
    bundle), or one group per job (group)."""
    groups = list(zoo_groups(zoo))
    return [groups] if INFER["jobs"] == "bundle" else [[g] for g in groups]


def bundle_job_tag(groups):
    """The name parts a bundle job adds after its bundle (in its name, log and benchmark
    paths): its group when each group is its own job (inference.jobs: group), else none.
    """
    return groups if INFER["jobs"] == "group" else []


def bundle_testset_paths(zoo, groups):
    """The test sets of ``groups``, each listed once."""
    return list(dict.fromkeys(p for g in groups for p in group_testset_paths(zoo, g)))


def group_testset_pairs(zoo, group):
    """(test set, path) of every set of a zoo's group, as the inference script takes them."""
    return list(zip(zoo_groups(zoo)[group], group_testset_paths(zoo, group)))


def group_manifest(dataset, group):
    """The one file that stands for a test-set group of several sets (rule testset_group)."""
    return f"results/testsets/{dataset}/groups/{group}.tsv"


def group_inputs(zoo, group):
    """What a per-model inference job on ``group`` lists as input: the set itself for a group
    of one, else the group's stand-in, so the graph resolves one input per job instead of one
    per set (docs/architecture.md, "Graph cost").
    """
    sets = zoo_groups(zoo)[group]
    if len(sets) == 1:
        return [testset_path(zoo_dataset(zoo), sets[0])]
    return [group_manifest(zoo_dataset(zoo), group)]


def multi_set_groups():
    """Every registered group token that stands for more than one test set."""
    return sorted(g for g in TESTSET_GROUPS if len(group_sets(g)) > 1)


def group_sets(group):
    return list(dict.fromkeys(TESTSET_GROUPS[group]))


def inference_model_inputs(wildcards):
    """Inputs of one model's job on one group (zoos with `bundle: model`)."""
    d = model_dir(wildcards.zoo, wildcards.model)
    return {
        "weights": f"{d}/weights.safetensors",
        "meta": f"{d}/meta.json",
        "testsets": group_inputs(wildcards.zoo, wildcards.group),
    }


def pred_import_inputs(zoo, models):
    """Every file a prediction zoo's import job reads for ``models``: predictions, features."""
    pz = PRED_ZOOS[zoo]
    return [pz.files[m][t] for m in models for t in pz.testsets] + [
        str(pz.feature_file(m, t, layer))
        for m in models
        for layer in pz.features[m]
        for t in pz.testsets
    ]


def pred_import_models(zoo, models):
    """What the import job needs per model (files, kind, feature files), from the parse-time
    scan, so the job reads only its own models' files."""
    pz = PRED_ZOOS[zoo]
    return [
        {
            "model": m,
            "files": dict(pz.files[m]),
            "kind": pz.kind[m],
            "features": {
                layer: {t: str(pz.feature_file(m, t, layer)) for t in pz.testsets}
                for layer in pz.features[m]
            },
        }
        for m in models
    ]


def pred_import_outputs(zoo, models):
    return {
        "infer": [infer_file(zoo, m, PRED_GROUP) for m in models],
        "meta": [f"{model_dir(zoo, m)}/meta.json" for m in models],
    }


def accuracy_in_inference(zoo):
    """Whether one inference job infers the whole of ``zoo`` (a model zoo of one bundle,
    `inference.jobs: bundle`): that job then writes the zoo's accuracy table too, which rule
    accuracy_table writes for every other zoo."""
    return (
        zoo not in PER_MODEL_ZOOS
        and len(ZOO_BUNDLES.get(zoo, {})) == 1
        and INFER["jobs"] == "bundle"
    )


def accuracy_outputs(zoo):
    """The accuracy table and heatmap of ``zoo`` (a name or the `{zoo}` wildcard; each path a
    plain literal, as the rule files spell their outputs)."""
    return {
        "csv": report(
            "results/infer/{zoo}/accuracy.csv".format(zoo=zoo),
            caption="../report/inference/accuracy_table.rst",
            category="spine",
            subcategory="accuracy",
        ),
        "md": "results/infer/{zoo}/accuracy.md".format(zoo=zoo),
        "png": report(
            "results/infer/{zoo}/accuracy.png".format(zoo=zoo),
            caption="../report/inference/accuracy_heatmap.rst",
            category="spine",
            subcategory="accuracy",
        ),
        "pdf": "results/infer/{zoo}/accuracy.pdf".format(zoo=zoo),
    }


def accuracy_logs(zoo):
    """The accuracy step's own log (the same path whichever job writes the table)."""
    return {"accuracy": f"logs/inference/{zoo}_accuracy.log"}


def accuracy_job(zoo):
    """labelfree.accuracy.write_accuracy_table's inputs, as rule accuracy_table passes them
    (the outputs come from the job's `output:`)."""
    sets = zoo_testsets(zoo)
    return {
        "zoo": zoo,
        "models": zoo_models(zoo),
        "testsets": sets,
        "groups": {t: testset_group(zoo, t) for t in sets},
        "infer_pattern": infer_file(zoo, "{model}", "{group}"),
        "label_paths": [testset_path(zoo_dataset(zoo), t) for t in sets],
        "meta_paths": [f"{d}/meta.json" for d in zoo_model_dirs(zoo)],
    }
