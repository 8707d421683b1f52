# Rules of `alphatrim`: training variability measured with the robust (trimmed) KS test and the
# alpha-trimming level (docs/alphatrim.md). Jobs per experiment of `alphatrim.experiments`
# (planned by labelfree.alphatrim.plan): alphatrim_zoo (data + every seed-regime zoo, trained
# together by labelfree.zoo.batched; with `models_per_job`, one alphatrim_zoo_block job per seed
# block and alphatrim_zoo merges them), alphatrim_analyse (alpha-hat, churn, ECE, ensembles);
# then one alphatrim_report job writing Tables I-V and Figs. 4-16 of every experiment.


include: "functions/alphatrim.smk"


from labelfree.alphatrim import plan as at_plan
from labelfree.alphatrim.plan import ENSEMBLE_ZOO as AT_ENSEMBLE_ZOO
from labelfree.alphatrim.plan import REGIMES as AT_REGIMES
from labelfree.alphatrim.plan import block_name as at_block_name
from labelfree.alphatrim.plan import output_file as at_output_file
from labelfree.alphatrim.plan import spine_zoos as at_spine_zoos
from labelfree.alphatrim.plan import trains_on_gpu as at_trains_on_gpu
from labelfree.data.registry import known_num_classes

AT = config["alphatrim"]
AT_RAW = "results/alphatrim/raw/{experiment}"

# Train-split features for frozen-backbone experiments (data.source: backbone): a zoo lists
# `alphatrim_train` in its testsets and inference writes its features on the training split.
TESTSET_GROUPS["alphatrim_train"] = ["alphatrim-train"]

try:
    AT_PLAN = at_plan.plan(
        AT["experiments"] if study_enabled("alphatrim") else {},
        ZOOS,
        DATASETS,
        PRED_ZOOS,
        known_num_classes,
    )
except ConfigError as _err:
    raise WorkflowError(f"Invalid configuration: {_err}") from None
# experiment -> its config, its outputs, its seed-block shards [(zoo, start, stop), ...]
AT_EXPS, AT_OUTPUTS, AT_BLOCKS = AT_PLAN.experiments, AT_PLAN.outputs, AT_PLAN.blocks


# Snakemake's parser reads a line starting with `report` as its keyword: call it via an alias.
at_report = report


STUDY_TARGETS["alphatrim"] = alphatrim_targets


rule alphatrim_train_testset:
    input:
        dataset_split("{dataset}", "train"),
    output:
        testset_path("{dataset}", "alphatrim-train"),
    log:
        "logs/alphatrim/{dataset}_train_testset.log",
    wildcard_constraints:
        dataset=at_alternatives(list(DATASETS)),
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        # a copy of the split: its dataset's memory, a light job's runtime (common.smk)
        mem_mb=lambda wc: DATASETS[wc.dataset]["mem_mb"],
        runtime=LIGHT_RESOURCES["runtime"],
    script:
        "../scripts/alphatrim_train_testset.py"


rule alphatrim_zoo_block:
    input:
        unpack(at_data_inputs),
    output:
        f"{AT_RAW}/blocks/{{zoo}}-{{start}}-{{stop}}.npz",
    log:
        "logs/alphatrim/{experiment}_zoo_{zoo}-{start}-{stop}.log",
    benchmark:
        "benchmarks/alphatrim/{experiment}_zoo_{zoo}-{start}-{stop}.tsv"
    wildcard_constraints:
        experiment=at_alternatives([e for e in AT_EXPS if AT_BLOCKS[e]]),
        zoo=at_alternatives([*AT_REGIMES, AT_ENSEMBLE_ZOO]),
        start=r"\d{5}",
        stop=r"\d{5}",
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        **HEAVY,
        mem_mb=AT["mem_mb"],
        runtime=AT["runtime"],
        gpu=lambda wc: int(at_trains_on_gpu(AT_EXPS[wc.experiment])),
    params:
        name=lambda wc: wc.experiment,
        # what a block's models depend on: growing a zoo (regimes, ensembles) reruns no
        # finished block
        cfg=lambda wc: {
            k: AT_EXPS[wc.experiment][k] for k in ("kind", "data", "model", "curves")
        },
        seed=AT["seed"],
        zoo=lambda wc: wc.zoo,
        start=lambda wc: int(wc.start),
        stop=lambda wc: int(wc.stop),
    script:
        "../scripts/alphatrim_zoo_block.py"


rule alphatrim_zoo:
    input:
        unpack(at_zoo_inputs),
    output:
        zoo=f"{AT_RAW}/zoo.npz",
        runs=f"{AT_RAW}/runs.csv",
        runs_md=f"{AT_RAW}/runs.md",
    log:
        "logs/alphatrim/{experiment}_zoo.log",
    benchmark:
        "benchmarks/alphatrim/{experiment}_zoo.tsv"
    wildcard_constraints:
        experiment=at_alternatives(list(AT_EXPS)),
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        **HEAVY,
        mem_mb=AT["mem_mb"],
        runtime=AT["runtime"],
        # merging shards needs no GPU
        gpu=lambda wc: int(
            at_trains_on_gpu(AT_EXPS[wc.experiment]) and not AT_BLOCKS[wc.experiment]
        ),
    params:
        name=lambda wc: wc.experiment,
        cfg=lambda wc: AT_EXPS[wc.experiment],
        seed=AT["seed"],
        sheets=lambda wc: at_sheets(wc.experiment),
    script:
        "../scripts/alphatrim_zoo.py"


rule alphatrim_analyse:
    input:
        zoo=f"{AT_RAW}/zoo.npz",
    output:
        per_model=f"{AT_RAW}/per_model.csv",
        per_model_md=f"{AT_RAW}/per_model.md",
        ensembles=f"{AT_RAW}/ensembles.csv",
        ensembles_md=f"{AT_RAW}/ensembles.md",
        raw=f"{AT_RAW}/analysis.npz",
        summary=f"{AT_RAW}/summary.json",
    log:
        "logs/alphatrim/{experiment}_analyse.log",
    benchmark:
        "benchmarks/alphatrim/{experiment}_analyse.tsv"
    wildcard_constraints:
        experiment=at_alternatives(list(AT_EXPS)),
    conda:
        "../../envs/labelfree.yaml"
    threads: AT["threads"]
    resources:
        **HEAVY,
        mem_mb=AT["mem_mb"],
        runtime=AT["runtime"],
    params:
        name=lambda wc: wc.experiment,
        cfg=lambda wc: AT_EXPS[wc.experiment],
        study={k: v for k, v in AT.items() if k != "experiments"},
    script:
        "../scripts/alphatrim_analyse.py"


if AT_EXPS:

    rule alphatrim_report:
        input:
            zoo=expand(f"{AT_RAW}/zoo.npz", experiment=list(AT_EXPS)),
            per_model=expand(f"{AT_RAW}/per_model.csv", experiment=list(AT_EXPS)),
            ensembles=expand(f"{AT_RAW}/ensembles.csv", experiment=list(AT_EXPS)),
            raw=expand(f"{AT_RAW}/analysis.npz", experiment=list(AT_EXPS)),
            summary=expand(f"{AT_RAW}/summary.json", experiment=list(AT_EXPS)),
        output:
            at_report_outputs(),
        log:
            "logs/alphatrim/report.log",
        benchmark:
            "benchmarks/alphatrim/report.tsv"
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            **LIGHT_RESOURCES,
        params:
            experiments=AT_EXPS,
            study={k: v for k, v in AT.items() if k != "experiments"},
        script:
            "../scripts/alphatrim_report.py"
