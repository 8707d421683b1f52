# Input functions and helpers of `alphatrim` (kept apart from its rules, see alphatrim.smk).


def at_alternatives(names):
    return "|".join(names) if names else "(?!)"


def at_zoo_inputs(wildcards):
    """Inputs of alphatrim_zoo: its seed-block shards when the experiment has them (in the
    order merge_blocks checks), else the files of its data source."""
    blocks = AT_BLOCKS[wildcards.experiment]
    if blocks:
        raw = AT_RAW.format(experiment=wildcards.experiment)
        return {"blocks": [f"{raw}/blocks/{at_block_name(*b)}.npz" for b in blocks]}
    return at_data_inputs(wildcards)


def at_data_inputs(wildcards):
    """Input files of an experiment's data source (none for the synthetic task)."""
    data = AT_EXPS[wildcards.experiment]["data"]
    where = f"alphatrim.experiments.{wildcards.experiment}.data"
    if data["source"] == "dataset":
        if data["dataset"] not in DATASETS:
            raise WorkflowError(
                f"Invalid configuration: {where}.dataset = {data['dataset']!r} is not a key "
                f"of `datasets` ({sorted(DATASETS)})"
            )
        return {
            "train": dataset_split(data["dataset"], data["train_split"]),
            "test": dataset_split(data["dataset"], data["test_split"]),
        }
    if data["source"] == "backbone":
        zoo, model = data["zoo"], data["model"]
        if zoo not in ZOO_SHEETS or model not in zoo_models(zoo):
            raise WorkflowError(
                f"Invalid configuration: {where}: zoo {zoo!r} / model {model!r} not configured"
            )
        if "alphatrim-train" not in zoo_testsets(zoo):
            raise WorkflowError(
                f"Invalid configuration: {where}: zoo {zoo!r} must list `alphatrim_train` in "
                "its testsets (and `penultimate` in its features)"
            )
        ds = zoo_dataset(zoo)
        return {
            "train": testset_path(ds, "alphatrim-train"),
            "test": testset_path(ds, "id"),
            "train_feat": infer_path(zoo, "alphatrim-train", model),
            "test_feat": infer_path(zoo, "id", model),
        }
    if data["source"] == "zoos":
        inputs, datasets = {}, set()
        for study_zoo, zoo in at_spine_zoos(AT_EXPS[wildcards.experiment]).items():
            if zoo not in ZOO_SHEETS:
                raise WorkflowError(
                    f"Invalid configuration: {where}.zoos names {zoo!r}, not a key of `zoos`"
                )
            if data["testset"] not in zoo_testsets(zoo):
                raise WorkflowError(
                    f"Invalid configuration: {where}.testset {data['testset']!r} is not a "
                    f"test set of zoo {zoo!r}"
                )
            datasets.add(zoo_dataset(zoo))
            inputs[f"logits_{study_zoo}"] = infer_paths(zoo, data["testset"])
        if len(datasets) != 1:
            raise WorkflowError(
                f"Invalid configuration: {where}.zoos must share one dataset, got {datasets}"
            )
        inputs["labels"] = testset_path(datasets.pop(), data["testset"])
        return inputs
    return {}


def at_sheets(experiment):
    """Source `zoos`: study zoo -> sheet rows (model, seed, batch_seed) of its spine zoo."""
    cfg = AT_EXPS[experiment]
    if cfg["data"]["source"] != "zoos":
        return {}
    return {
        z: ZOO_SHEETS[zoo][["model", "seed", "batch_seed"]].to_dict("records")
        for z, zoo in at_spine_zoos(cfg).items()
    }


def at_report_outputs():
    """Every table (csv + md) and figure (png + pdf) of every experiment, report()-wrapped;
    named <id>-<experiment>[-<detail>] (docs/outputs.md)."""
    out = []
    for exp, o in AT_OUTPUTS.items():
        for kind, key_list, exts in (
            ("tables", o["tables"], ("csv", "md")),
            ("figures", o["figures"], ("png", "pdf")),
        ):
            for key in key_list:
                out += [
                    at_report(
                        at_output_file(exp, key, kind, exts[0]),
                        caption=f"../report/alphatrim/{kind}/{key}.rst",
                        category="alphatrim",
                        subcategory=exp,
                    ),
                    at_output_file(exp, key, kind, exts[1]),
                ]
    return out


def alphatrim_targets():
    return [
        at_output_file(e, k, "tables", "csv")
        for e, o in AT_OUTPUTS.items()
        for k in o["tables"]
    ] + [
        at_output_file(e, k, "figures", "png")
        for e, o in AT_OUTPUTS.items()
        for k in o["figures"]
    ]
