# Rules of `zoo`: train local models and resolve pretrained/user models into
# results/zoo/{zoo}/{model}/{weights.safetensors,meta.json} (docs/zoo.md).
# The model is the unit of work; the zoo setting `bundle` groups models into jobs:
#   zoo_model                  one job per model (`bundle: model`; generic, wildcards zoo/model)
#   zoo_bundle_<zoo>_<bundle>  one job per bundle (`bundle: zoo` or an integer; one rule each,
#                              since a job of several models lists their files as outputs)
# Each model's files depend on its own row only, so a model is identical whichever job built it.
# Both run workflow/scripts/zoo_bundle.py, zoo_model from `shell:` (common.smk::adapter_shell).
# A job that trains a local model with `train_device: cuda` requests `gpu=1` (docs/cluster.md).


include: "functions/zoo.smk"


rule zoo_model:
    input:
        unpack(zoo_model_inputs),
    output:
        weights="results/zoo/{zoo}/{model}/weights.safetensors",
        meta="results/zoo/{zoo}/{model}/meta.json",
    log:
        "logs/zoo/{zoo}/{model}.log",
    benchmark:
        "benchmarks/zoo/{zoo}/{model}.tsv"
    wildcard_constraints:
        zoo=alternatives(PER_MODEL_ZOOS),
    conda:
        "../../envs/labelfree.yaml"
    threads: lambda w: ZOOS[w.zoo]["threads"]
    resources:
        **HEAVY,
        mem_mb=lambda w: ZOOS[w.zoo]["mem_mb"],
        runtime=lambda w: ZOOS[w.zoo]["runtime"],
        gpu=lambda w: zoo_job_gpus(w.zoo, [w.model]),
    params:
        # one function for what the job builds (Snakemake inspects each callable per job),
        # as JSON: the adapter's argument (common.smk::adapter_shell)
        job=lambda w: json.dumps(zoo_job(w.zoo, [w.model])),
    shell:
        adapter_shell("zoo_bundle.py")


for _zoo, _bundles in ZOO_BUNDLES.items():
    if _zoo in PER_MODEL_ZOOS:
        continue
    _cfg = ZOOS[_zoo]
    for _bundle, _models in _bundles.items():

        rule:
            name:
                rule_name("zoo_bundle", _zoo, _bundle)
            input:
                **zoo_bundle_inputs(_zoo, _models),
            output:
                **zoo_model_files(_zoo, _models),
            log:
                f"logs/zoo/{_zoo}/{_bundle}.log",
            benchmark:
                f"benchmarks/zoo/{_zoo}/{_bundle}.tsv"
            conda:
                "../../envs/labelfree.yaml"
            threads: _cfg["threads"]
            resources:
                **HEAVY,
                mem_mb=_cfg["mem_mb"],
                runtime=_cfg["runtime"],
                gpu=zoo_job_gpus(_zoo, _models),
            params:
                job=zoo_job(_zoo, _models),
            script:
                "../scripts/zoo_bundle.py"
