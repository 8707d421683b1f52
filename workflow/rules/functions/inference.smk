# Input functions and helpers of `inference` (kept apart from its rules, see inference.smk).


def zoo_model_dirs(zoo):
    return [model_dir(zoo, m) for m in zoo_models(zoo)]


def zoo_infer_files(zoo):
    """Every inference file of a zoo: one per model and test-set group, sheet order."""
    groups = list(zoo_groups(zoo))
    return [infer_file(zoo, m, g) for m in zoo_models(zoo) for g in groups]


def group_testset_paths(zoo, group):
    return [testset_path(zoo_dataset(zoo), t) for t in zoo_groups(zoo)[group]]


def inference_model_inputs(wildcards):
    """Inputs of one model's job on one group (zoos with `bundle: model`)."""
    d = model_dir(wildcards.zoo, wildcards.model)
    return {
        "weights": f"{d}/weights.safetensors",
        "meta": f"{d}/meta.json",
        "testsets": group_testset_paths(wildcards.zoo, wildcards.group),
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
