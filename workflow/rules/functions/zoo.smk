# Input functions and helpers of `zoo` (kept apart from its rules, see zoo.smk).


def rule_name(*parts):
    """A rule name from zoo, bundle and group names (characters outside [A-Za-z0-9_] -> _)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", "_".join(parts))


def zoo_model_files(zoo, models):
    return {
        "weights": [f"{model_dir(zoo, m)}/weights.safetensors" for m in models],
        "meta": [f"{model_dir(zoo, m)}/meta.json" for m in models],
    }


def zoo_job(zoo, models):
    """What a training/resolving job builds: labelfree.zoo.local.build_bundle's arguments
    (the adapter adds its progress file), input paths as zoo_bundle_inputs lists them.
    """
    inputs = zoo_bundle_inputs(zoo, models)
    return {
        "zoo": zoo,
        "rows": [ZOO_ROWS[zoo][m] for m in models],
        "out_dirs": [model_dir(zoo, m) for m in models],
        "train_path": inputs.get("train"),
        "idset_path": inputs.get("idset"),
        "val_fraction": ZOOS[zoo]["val_fraction"],
        "base_seed": SEED,
        "device": ZOOS[zoo]["train_device"],
    }


def zoo_bundle_inputs(zoo, models):
    """Inputs of a bundle: the training split for local rows, the `id` set (input shape and
    classes) for pretrained and checkpoint rows, and every checkpoint file."""
    rows = [ZOO_ROWS[zoo][m] for m in models]
    inputs = {}
    if any(r["source"] == "local" for r in rows):
        inputs["train"] = dataset_split(zoo_dataset(zoo), ZOOS[zoo]["train_split"])
    if any(r["source"] != "local" for r in rows):
        inputs["idset"] = testset_path(zoo_dataset(zoo), "id")
        inputs["checkpoints"] = [
            r["weights"] for r in rows if r["source"] == "checkpoint"
        ]
    return inputs


def zoo_model_inputs(wildcards):
    """Inputs of one model's job (zoos with `bundle: model`)."""
    return zoo_bundle_inputs(wildcards.zoo, [wildcards.model])


def zoo_job_gpus(zoo, models):
    """GPUs a training/resolving job asks for: 1 when it trains a local model and the zoo's
    `train_device` is `cuda` (`auto` asks for none: it uses a GPU only where one is present);
    resolving pretrained or checkpoint rows runs no training."""
    trains = any(ZOO_ROWS[zoo][m]["source"] == "local" for m in models)
    return int(trains and ZOOS[zoo]["train_device"] == "cuda")
