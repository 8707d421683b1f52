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
