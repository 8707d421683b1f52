# Rules of `inference`: every model of a zoo on every test-set group of the zoo, one file per
# model and group (results/infer/{zoo}/{model}/{group}.npz), then the zoo's accuracy table and
# heatmap (rule accuracy_table, or the zoo's one inference job where one job infers it whole). Jobs follow the zoo's `bundle` setting (docs/zoo.md):
#   inference_model                           one job per model and group (`bundle: model`)
#   inference_bundle_<zoo>_<bundle>           one job per bundle, every group in turn (otherwise;
#                                             `inference.jobs: bundle`, the default)
#   inference_bundle_<zoo>_<bundle>_<group>   one job per bundle and group (`inference.jobs: group`)
# One job per bundle starts torch once for all the zoo's groups (about 2 s of CPU per start,
# docs/pipeline.md); with `group`, a study that adds a group to a zoo runs inference on it alone.
# Both run workflow/scripts/inference_run.py, inference_model from `shell:`
# (common.smk::adapter_shell).
# A per-model job lists a group of several sets through one stand-in file (rule
# testset_group, results/testsets/{dataset}/groups/{group}.tsv), which keeps the graph of a
# large zoo small; bundle jobs are few and list the sets themselves.
# Included last in the Snakefile, so test-set groups registered by studies are known here.
# With `inference.device: cuda` each job requests `gpu=1`; profiles/slurm maps it to --gpus=1.
# A prediction zoo (docs/your-zoo.md) enters here too: its import writes the same artefacts,
# one file per model holding every test set, with the model's meta.json, by bundle:
#   inference_import                          one job per model (`bundle: model`)
#   inference_import_<zoo>_<bundle>           one job per bundle (otherwise)
#   inference_import_labels_<zoo>             the zoo's test sets: labels where given


from labelfree.store import write_group_manifest


include: "functions/inference.smk"


INFER = config["inference"]


localrules:
    testset_group,


rule testset_group:
    input:
        lambda w: [testset_path(w.dataset, t) for t in group_sets(w.group)],
    output:
        group_manifest("{dataset}", "{group}"),
    log:
        "logs/testsets/{dataset}/groups/{group}.log",
    wildcard_constraints:
        group=alternatives(multi_set_groups()),
    threads: 1
    resources:
        mem_mb=200,
        runtime=5,
    params:
        sets=lambda w: group_sets(w.group),
    run:
        # in the scheduler's process: a job this small is not worth a fresh Python
        write_group_manifest(output[0], dict(zip(params.sets, input)), log=log[0])


rule inference_model:
    input:
        unpack(inference_model_inputs),
    output:
        "results/infer/{zoo}/{model}/{group}.npz",
    log:
        "logs/inference/{zoo}/{model}/{group}.log",
    benchmark:
        "benchmarks/inference/{zoo}/{model}/{group}.tsv"
    wildcard_constraints:
        zoo=alternatives(PER_MODEL_ZOOS),
    conda:
        "../../envs/labelfree.yaml"
    threads: INFER["threads"]
    resources:
        **HEAVY,
        mem_mb=INFER["mem_mb"],
        runtime=INFER["runtime"],
        gpu=1 if INFER["device"] == "cuda" else 0,
    params:
        # one function for what the job runs (Snakemake inspects each callable per job),
        # as JSON: the adapter's argument (common.smk::adapter_shell)
        job=lambda w: json.dumps(inference_job(w.zoo, [w.model], w.group)),
    shell:
        adapter_shell("inference_run.py")


for _zoo, _bundles in ZOO_BUNDLES.items():
    if _zoo in PER_MODEL_ZOOS:
        continue
    for _bundle, _models in _bundles.items():
        for _groups in bundle_job_groups(_zoo):

            rule:
                name:
                    rule_name(
                        "inference_bundle", _zoo, _bundle, *bundle_job_tag(_groups)
                    )
                input:
                    weights=[
                        f"{model_dir(_zoo, m)}/weights.safetensors" for m in _models
                    ],
                    meta=[f"{model_dir(_zoo, m)}/meta.json" for m in _models],
                    testsets=bundle_testset_paths(_zoo, _groups),
                output:
                    **accuracy_outputs(_zoo) if accuracy_in_inference(_zoo) else {},
                    infer=[infer_file(_zoo, m, g) for g in _groups for m in _models],
                log:
                    f"logs/inference/{_zoo}/{'/'.join([_bundle, *bundle_job_tag(_groups)])}.log",
                    **accuracy_logs(_zoo) if accuracy_in_inference(_zoo) else {},
                benchmark:
                    f"benchmarks/inference/{_zoo}/{'/'.join([_bundle, *bundle_job_tag(_groups)])}.tsv"
                conda:
                    "../../envs/labelfree.yaml"
                threads: INFER["threads"]
                resources:
                    **HEAVY,
                    mem_mb=INFER["mem_mb"],
                    runtime=INFER["runtime"],
                    gpu=1 if INFER["device"] == "cuda" else 0,
                params:
                    # one job per group, run in turn by one process (inference.jobs)
                    job=[inference_job(_zoo, _models, g) for g in _groups],
                    # then the zoo's accuracy table, where this one job infers the whole zoo
                    accuracy=accuracy_job(_zoo) if accuracy_in_inference(_zoo) else None,
                script:
                    "../scripts/inference_run.py"


rule inference_import:
    input:
        lambda w: pred_import_inputs(w.zoo, [w.model]),
    output:
        infer=infer_file("{zoo}", "{model}", PRED_GROUP),
        meta="results/zoo/{zoo}/{model}/meta.json",
    log:
        "logs/inference/{zoo}/{model}/import.log",
    wildcard_constraints:
        zoo=alternatives(PER_MODEL_PRED_ZOOS),
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        **HEAVY,
        mem_mb=lambda w: ZOOS[w.zoo]["mem_mb"],
        runtime=10,
    params:
        zoo=lambda w: w.zoo,
        models=lambda w: pred_import_models(w.zoo, [w.model]),
        num_classes=lambda w: PRED_ZOOS[w.zoo].num_classes,
        rows=lambda w: PRED_ZOOS[w.zoo].rows,
    script:
        "../scripts/inference_import.py"


for _zoo, _bundles in PRED_BUNDLES.items():
    if _zoo not in PER_MODEL_PRED_ZOOS:
        for _bundle, _models in _bundles.items():

            rule:
                name:
                    rule_name("inference_import", _zoo, _bundle)
                input:
                    pred_import_inputs(_zoo, _models),
                output:
                    **pred_import_outputs(_zoo, _models),
                log:
                    f"logs/inference/{_zoo}/{_bundle}/import.log",
                conda:
                    "../../envs/labelfree.yaml"
                threads: 1
                resources:
                    **HEAVY,
                    mem_mb=ZOOS[_zoo]["mem_mb"],
                    runtime=10,
                params:
                    zoo=_zoo,
                    models=pred_import_models(_zoo, _models),
                    num_classes=PRED_ZOOS[_zoo].num_classes,
                    rows=PRED_ZOOS[_zoo].rows,
                script:
                    "../scripts/inference_import.py"

    rule:
        name:
            rule_name("inference_import_labels", _zoo)
        input:
            list(PRED_ZOOS[_zoo].label_files.values()),
        output:
            [testset_path(zoo_dataset(_zoo), t) for t in PRED_ZOOS[_zoo].testsets],
        log:
            f"logs/inference/{_zoo}/import_labels.log",
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            **LIGHT_RESOURCES,
        params:
            testsets=PRED_ZOOS[_zoo].testsets,
            label_files=PRED_ZOOS[_zoo].label_files,
            num_classes=PRED_ZOOS[_zoo].num_classes,
            rows=PRED_ZOOS[_zoo].rows,
        script:
            "../scripts/inference_import_labels.py"


# The accuracy table of a zoo that one inference job infers whole (one bundle, `inference.jobs:
# bundle`) is written by that job (one process fewer per zoo); of any other zoo, by this rule.
rule accuracy_table:
    input:
        infer=lambda w: zoo_infer_files(w.zoo),
        testsets=lambda w: [
            testset_path(zoo_dataset(w.zoo), t) for t in zoo_testsets(w.zoo)
        ],
        meta=lambda w: [f"{d}/meta.json" for d in zoo_model_dirs(w.zoo)],
    output:
        **accuracy_outputs("{zoo}"),
    log:
        "logs/inference/{zoo}_accuracy.log",
    wildcard_constraints:
        zoo=alternatives(sorted(z for z in ZOOS if not accuracy_in_inference(z))),
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        models=lambda w: zoo_models(w.zoo),
        testsets=lambda w: zoo_testsets(w.zoo),
        # test set -> group file stem; the file of model m is infer_file(zoo, m, group)
        groups=lambda w: {t: testset_group(w.zoo, t) for t in zoo_testsets(w.zoo)},
        infer_pattern=lambda w: infer_file(w.zoo, "{model}", "{group}"),
    script:
        "../scripts/inference_accuracy.py"
