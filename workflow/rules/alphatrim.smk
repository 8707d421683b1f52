# Rules of `alphatrim`: training variability measured with the robust (trimmed) KS test and the
# alpha-trimming level (../shared/specs/alpha-trimming.md). Jobs per experiment of
# `alphatrim.experiments`: alphatrim_zoo (data + every seed-regime zoo, trained together by
# labelfree.zoo.batched), alphatrim_analyse (alpha-hat, churn, ECE, ensembles); then one
# alphatrim_report job writing Tables I-V and Figs. 4-16 of every experiment.

from labelfree.alphatrim.pipeline import FIGURES as AT_FIGURES
from labelfree.alphatrim.pipeline import TABLES as AT_TABLES
from labelfree.alphatrim.pipeline import experiment_outputs as at_experiment_outputs
from labelfree.alphatrim.pipeline import spine_zoos as at_spine_zoos

AT = config["alphatrim"]
AT_EXPS = AT["experiments"] if study_enabled("alphatrim") else {}
AT_RAW = "results/alphatrim/raw/{experiment}"

# Train-split features for frozen-backbone experiments (data.source: backbone): a zoo lists
# `alphatrim_train` in its testsets and inference writes its features on the training split.
TESTSET_GROUPS["alphatrim_train"] = ["alphatrim-train"]

try:
    AT_OUTPUTS = {e: at_experiment_outputs(c) for e, c in AT_EXPS.items()}
except ValueError as _err:
    raise WorkflowError(
        f"Invalid configuration: alphatrim.experiments: {_err}"
    ) from None


def at_alternatives(names):
    return "|".join(names) if names else "(?!)"


def at_zoo_inputs(wildcards):
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


# Snakemake's parser reads a line starting with `report` as its keyword: call it via an alias.
at_report = report


def at_report_outputs():
    """Every table (csv + md) and figure (png + pdf) of every experiment, report()-wrapped."""
    out = []
    for exp, o in AT_OUTPUTS.items():
        for key in o["tables"]:
            base = f"results/alphatrim/tables/{exp}-{key}"
            out += [
                at_report(
                    f"{base}.csv",
                    caption=f"../report/alphatrim/{key}.rst",
                    category="alphatrim",
                    subcategory=exp,
                ),
                f"{base}.md",
            ]
        for key in o["figures"]:
            base = f"results/alphatrim/figures/{exp}-{key}"
            out += [
                at_report(
                    f"{base}.png",
                    caption=f"../report/alphatrim/{key}.rst",
                    category="alphatrim",
                    subcategory=exp,
                ),
                f"{base}.pdf",
            ]
    return out


def alphatrim_targets():
    return [
        f"results/alphatrim/tables/{e}-{k}.csv"
        for e, o in AT_OUTPUTS.items()
        for k in o["tables"]
    ] + [
        f"results/alphatrim/figures/{e}-{k}.png"
        for e, o in AT_OUTPUTS.items()
        for k in o["figures"]
    ]


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
    threads: 1
    resources:
        mem_mb=AT["mem_mb"],
        runtime=AT["runtime"],
    script:
        "../scripts/alphatrim_train_testset.py"


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
    threads: 1
    resources:
        mem_mb=AT["mem_mb"],
        runtime=AT["runtime"],
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
    threads: AT["threads"]
    resources:
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
        threads: 1
        resources:
            mem_mb=AT["mem_mb"],
            runtime=AT["runtime"],
        params:
            experiments=AT_EXPS,
            study={k: v for k, v in AT.items() if k != "experiments"},
        script:
            "../scripts/alphatrim_report.py"
