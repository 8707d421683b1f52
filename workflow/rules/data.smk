# Rules of the `data` layer (docs/data.md): checksummed downloads into resources/, every split of
# every configured dataset as results/data/{dataset}/{split}.npz (+ meta.json), and the
# in-distribution test set results/testsets/{dataset}/id.npz (a copy of its test split).
# data_prepare is one job per dataset; its rules are named per dataset (data_prepare_<dataset>)
# because each has its own list of split outputs. It writes the `id` test set too (one process
# fewer) where a zoo runs it; a study that asks for another dataset's gets it from testset_id.


include: "functions/data.smk"


from labelfree.data.base import DataError
from labelfree.data.corrupted import RELEASES as DATA_C_RELEASES
from labelfree.data.registry import plan_datasets

# Split names per dataset, the datasets to download; `local` folders and ImageNet/COCO file
# options made absolute (relative to the config file that sets them).
try:
    DATA_SPLITS, DATA_DOWNLOADS = plan_datasets(DATASETS, workflow.configfiles)
except DataError as _err:
    raise WorkflowError(f"Invalid configuration: {_err}") from None

# Datasets whose `id` test set a trained or resolved zoo runs: data_prepare writes it.
DATA_ID_IN_PREPARE = {
    ZOOS[z]["dataset"] for z in ZOO_SHEETS if "id" in ZOOS[z]["testsets"]
}


rule data_download:
    output:
        data_manifest("{dataset}"),
    log:
        "logs/data/download_{dataset}.log",
    wildcard_constraints:
        dataset=_data_alternatives(DATA_DOWNLOADS),
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        **HEAVY,
        mem_mb=lambda wc: DATASETS[wc.dataset]["mem_mb"],
        runtime=lambda wc: DATASETS[wc.dataset]["runtime"],
    params:
        name=lambda wc: wc.dataset,
        cfg=lambda wc: DATASETS[wc.dataset],
    script:
        "../scripts/data_download.py"


rule data_download_corrupted:
    output:
        "resources/manifests/corrupted/{release}.json",
    log:
        "logs/data/download_corrupted_{release}.log",
    wildcard_constraints:
        release=_data_alternatives(list(DATA_C_RELEASES)),
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        **HEAVY,
        mem_mb=500,
        runtime=120,
    params:
        release=lambda wc: wc.release,
        root="resources/data",
    script:
        "../scripts/data_download_corrupted.py"


for _ds, _dcfg in DATASETS.items():

    rule:
        name:
            f"data_prepare_{_ds}"
        input:
            data_prepare_inputs(_ds),
        output:
            splits=[dataset_split(_ds, _s) for _s in DATA_SPLITS[_ds]],
            meta=f"results/data/{_ds}/meta.json",
            id=[testset_path(_ds, "id")] if _ds in DATA_ID_IN_PREPARE else [],
        log:
            f"logs/data/prepare_{_ds}.log",
        benchmark:
            f"benchmarks/data/prepare_{_ds}.tsv"
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            **HEAVY,
            mem_mb=_dcfg["mem_mb"],
            runtime=_dcfg["runtime"],
        params:
            name=_ds,
            cfg=_dcfg,
            seed=SEED,
            out_dir=lambda w, output: os.path.dirname(output.meta),
            # the split that becomes the `id` test set (datasets.<name>.test_split)
            test_split=_dcfg["test_split"],
        script:
            "../scripts/data_prepare.py"


rule testset_id:
    input:
        data_test_split,
    output:
        testset_path("{dataset}", "id"),
    log:
        "logs/data/testset_id_{dataset}.log",
    wildcard_constraints:
        dataset=_data_alternatives(sorted(set(DATASETS) - DATA_ID_IN_PREPARE)),
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        mem_mb=lambda wc: DATASETS[wc.dataset]["mem_mb"],
        runtime=LIGHT_RESOURCES["runtime"],
    script:
        "../scripts/data_testset_id.py"
