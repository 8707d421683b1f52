# Rules of `inference`: every model of a zoo on every test set of the zoo, one job per zoo
# (rule inference_<zoo>), then the zoo's accuracy table and heatmap (rule accuracy_table).
# Included last in the Snakefile, so test-set groups registered by studies are known here.
# With `inference.device: cuda` the job requests `gpu=1`; profiles/slurm maps it to --gpus=1.


include: "functions/inference.smk"


INFER = config["inference"]


for _zoo in ZOO_SHEETS:

    rule:
        name:
            f"inference_{_zoo}"
        input:
            weights=[f"{d}/weights.safetensors" for d in zoo_model_dirs(_zoo)],
            meta=[f"{d}/meta.json" for d in zoo_model_dirs(_zoo)],
            testsets=[testset_path(zoo_dataset(_zoo), t) for t in zoo_testsets(_zoo)],
        output:
            [p for row in zoo_infer_grid(_zoo) for p in row],
        log:
            f"logs/inference/{_zoo}.log",
        benchmark:
            f"benchmarks/inference/{_zoo}.tsv"
        conda:
            "../../envs/labelfree.yaml"
        threads: INFER["threads"]
        resources:
            mem_mb=INFER["mem_mb"],
            runtime=INFER["runtime"],
            gpu=1 if INFER["device"] == "cuda" else 0,
        params:
            model_dirs=zoo_model_dirs(_zoo),
            grid=zoo_infer_grid(_zoo),
            features=ZOOS[_zoo]["features"],
            batch_size=INFER["batch_size"],
            device=INFER["device"],
            amp=INFER["amp"],
            cache_mb=INFER["cache_mb"],
        script:
            "../scripts/inference_run.py"


rule accuracy_table:
    input:
        infer=lambda w: [p for row in zoo_infer_grid(w.zoo) for p in row],
        testsets=lambda w: [
            testset_path(zoo_dataset(w.zoo), t) for t in zoo_testsets(w.zoo)
        ],
        meta=lambda w: [f"{d}/meta.json" for d in zoo_model_dirs(w.zoo)],
    output:
        csv=report(
            "results/infer/{zoo}/accuracy.csv",
            caption="../report/inference/accuracy_table.rst",
            category="spine",
            subcategory="accuracy",
        ),
        md="results/infer/{zoo}/accuracy.md",
        png=report(
            "results/infer/{zoo}/accuracy.png",
            caption="../report/inference/accuracy_heatmap.rst",
            category="spine",
            subcategory="accuracy",
        ),
        pdf="results/infer/{zoo}/accuracy.pdf",
    log:
        "logs/inference/{zoo}_accuracy.log",
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        models=lambda w: zoo_models(w.zoo),
        testsets=lambda w: zoo_testsets(w.zoo),
        grid=lambda w: zoo_infer_grid(w.zoo),
    script:
        "../scripts/inference_accuracy.py"
