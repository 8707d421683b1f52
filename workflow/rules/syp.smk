# Rules of `syp` (spec ../shared/specs/syp.md; README section `syp`).
#   syp_testsets      meta-sets, validation sets, the train-split copy and rotated copies, as test
#                     sets of the zoo's dataset (one job)
#   (spine)           inference runs every model on them: logits + penultimate features
#   syp_indicators    six indicators + baseline scores and predictions, per classifier (one job each)
#   syp_oracle        every oracle variant (Tables 1-5), all seeds, per classifier (one job each)
#   syp_tables        Tables 1-5, tau selection, predictions and figures (one job)

# parse time needs only names and checks: labelfree.syp.layout is import-light (no torch,
# scikit-learn or matplotlib, tests/workflow/test_parse_imports.py)
from labelfree.outputs import output_name
from labelfree.syp import layout as syp_layout

SYP = config["syp"]
SYP_ZOO = SYP["zoo"]
SYP_GROUPS = syp_layout.testset_names(SYP)
SYP_VARIANTS = list(syp_layout.variant_specs(SYP))
SYP_RAW = f"results/syp/raw/{SYP_ZOO}"
# meta-sets first, then validation sets: the row order of every indicator table
SYP_KINDS = {n: "meta" for n in SYP_GROUPS["syp_meta"]} | {
    n: "val" for n in SYP_GROUPS["syp_val"]
}
SYP_INFER_SETS = SYP_GROUPS["syp_ref"] + list(SYP_KINDS) + SYP_GROUPS["syp_rot"]
# stem -> file, named <id>-<syp zoo>[-<detail>] (docs/outputs.md)
SYP_TABLES = {
    k: f"results/syp/tables/{output_name(k, SYP_ZOO)}.csv"
    for k in syp_layout.TABLE_NAMES
}
SYP_FIGS = {
    k: f"results/syp/figures/{output_name(k, SYP_ZOO)}.png"
    for k in syp_layout.FIGURE_NAMES
}
# the config keys each rule depends on (so unrelated syp keys do not rerun it)
SYP_PART = {
    _step: {k: SYP[k] for k in _keys}
    for _step, _keys in {
        "testsets": ("meta_sets", "validation", "rotation", "splits"),
        "indicators": ("atc_form", "blur_form", "image_form", "rotation", "splits"),
        "oracle": ("oracle", "norm_train_scope", "tables"),
        "tables": ("aggregate", "tables", "oracle"),
    }.items()
}

# Registered even when the study is disabled, so zoo sheets naming the groups stay valid.
for _group, _names in SYP_GROUPS.items():
    TESTSET_GROUPS[_group] = _names

if study_enabled("syp"):
    try:
        syp_layout.check_config(
            SYP,
            ZOOS,
            DATASETS,
            zoo_testsets(SYP_ZOO) if SYP_ZOO in ZOOS else [],
        )
    except syp_layout.StudyConfigError as _err:
        raise WorkflowError(f"Invalid configuration: {_err}") from None

STUDY_TARGETS["syp"] = lambda: list(SYP_TABLES.values()) + list(SYP_FIGS.values())

if SYP_ZOO in ZOOS:
    _SYP_DS = zoo_dataset(SYP_ZOO)
    _SYP_MODELS = zoo_models(SYP_ZOO)

    rule syp_testsets:
        input:
            # holdout: null carves the holdout out of the source split (splits.holdout_share)
            unpack(
                lambda w: {
                    k: dataset_split(_SYP_DS, SYP["splits"][k])
                    for k in ("train", "source", "holdout")
                    if SYP["splits"].get(k)
                }
            ),
        output:
            sets=[
                testset_path(_SYP_DS, n)
                for names in SYP_GROUPS.values()
                for n in names
            ],
            info=f"results/syp/raw/testsets_{_SYP_DS}.json",
        log:
            f"logs/syp/testsets_{_SYP_DS}.log",
        benchmark:
            f"benchmarks/syp/testsets_{_SYP_DS}.tsv"
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            mem_mb=SYP["mem_mb"],
            runtime=SYP["runtime"],
        params:
            cfg=SYP_PART["testsets"],
            seed=SEED,
            out_dir=lambda w, output: os.path.dirname(output.sets[0]),
        script:
            "../scripts/syp_testsets.py"

    rule syp_indicators:
        input:
            infer=lambda w: [infer_path(SYP_ZOO, n, w.model) for n in SYP_INFER_SETS],
            testsets=[testset_path(_SYP_DS, n) for n in SYP_KINDS],
            id_infer=lambda w: infer_path(SYP_ZOO, "id", w.model),
            id_testset=testset_path(_SYP_DS, "id"),
        output:
            npz=f"{SYP_RAW}/{{model}}/indicators.npz",
            json=f"{SYP_RAW}/{{model}}/indicators.json",
            baselines=f"{SYP_RAW}/{{model}}/baselines.csv",
            baselines_md=f"{SYP_RAW}/{{model}}/baselines.md",
        log:
            "logs/syp/indicators_{model}.log",
        benchmark:
            "benchmarks/syp/indicators_{model}.tsv"
        wildcard_constraints:
            model=syp_layout.alternatives(_SYP_MODELS),
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            mem_mb=SYP["mem_mb"],
            runtime=SYP["runtime"],
        params:
            cfg=SYP_PART["indicators"],
            seed=SEED,
            names=SYP_INFER_SETS,
            kinds=SYP_KINDS,
        script:
            "../scripts/syp_indicators.py"

    rule syp_oracle:
        input:
            f"{SYP_RAW}/{{model}}/indicators.npz",
        output:
            q=[f"{SYP_RAW}/{{model}}/oracle_{v}.npz" for v in SYP_VARIANTS],
            weights=[
                f"{SYP_RAW}/{{model}}/oracle_{v}.safetensors" for v in SYP_VARIANTS
            ],
            json=[f"{SYP_RAW}/{{model}}/oracle_{v}.json" for v in SYP_VARIANTS],
        log:
            "logs/syp/oracle_{model}.log",
        benchmark:
            "benchmarks/syp/oracle_{model}.tsv"
        wildcard_constraints:
            model=syp_layout.alternatives(_SYP_MODELS),
        conda:
            "../../envs/labelfree.yaml"
        threads: SYP["threads"]
        resources:
            mem_mb=SYP["mem_mb"],
            runtime=SYP["runtime"],
        params:
            cfg=SYP_PART["oracle"],
            variants=SYP_VARIANTS,
            seeds=SYP["seeds"],
            seed=SEED,
        script:
            "../scripts/syp_oracle.py"

    rule syp_tables:
        input:
            indicators=expand(f"{SYP_RAW}/{{model}}/indicators.npz", model=_SYP_MODELS),
            baselines=expand(f"{SYP_RAW}/{{model}}/baselines.csv", model=_SYP_MODELS),
            oracle=expand(
                f"{SYP_RAW}/{{model}}/oracle_{{variant}}.npz",
                model=_SYP_MODELS,
                variant=SYP_VARIANTS,
            ),
            oracle_json=expand(
                f"{SYP_RAW}/{{model}}/oracle_{{variant}}.json",
                model=_SYP_MODELS,
                variant=SYP_VARIANTS,
            ),
            info=f"results/syp/raw/testsets_{_SYP_DS}.json",
        output:
            table1=report(
                SYP_TABLES["table1"],
                caption="../report/syp/tables/table1.rst",
                category="syp",
                subcategory="Table 1",
            ),
            table2=report(
                SYP_TABLES["table2"],
                caption="../report/syp/tables/table2.rst",
                category="syp",
                subcategory="Table 2",
            ),
            table3=report(
                SYP_TABLES["table3"],
                caption="../report/syp/tables/table3.rst",
                category="syp",
                subcategory="Table 3",
            ),
            table4=report(
                SYP_TABLES["table4"],
                caption="../report/syp/tables/table4.rst",
                category="syp",
                subcategory="Table 4",
            ),
            table5=report(
                SYP_TABLES["table5"],
                caption="../report/syp/tables/table5.rst",
                category="syp",
                subcategory="Table 5",
            ),
            tau=report(
                SYP_TABLES["extra-tau_selection"],
                caption="../report/syp/tables/extra-tau_selection.rst",
                category="syp",
                subcategory="threshold",
            ),
            predictions=report(
                SYP_TABLES["extra-predictions"],
                caption="../report/syp/tables/extra-predictions.rst",
                category="syp",
                subcategory="predictions",
            ),
            meta_fit=report(
                SYP_TABLES["fig4-5"],
                caption="../report/syp/tables/fig4-5.rst",
                category="syp",
                subcategory="figures",
            ),
            fig10=report(
                SYP_TABLES["fig10"],
                caption="../report/syp/tables/fig10.rst",
                category="syp",
                subcategory="figures",
            ),
            checks=report(
                SYP_TABLES["extra-checks"],
                caption="../report/syp/tables/extra-checks.rst",
                category="syp",
                subcategory="checks",
            ),
            fig_fig10=report(
                SYP_FIGS["fig10"],
                caption="../report/syp/figures/fig10.rst",
                category="syp",
                subcategory="figures",
            ),
            fig_scatter=report(
                SYP_FIGS["extra-scatter_val"],
                caption="../report/syp/figures/extra-scatter_val.rst",
                category="syp",
                subcategory="figures",
            ),
            fig_meta=report(
                SYP_FIGS["fig4-5"],
                caption="../report/syp/figures/fig4-5.rst",
                category="syp",
                subcategory="figures",
            ),
            fig_val=report(
                SYP_FIGS["fig6-7"],
                caption="../report/syp/figures/fig6-7.rst",
                category="syp",
                subcategory="figures",
            ),
        log:
            "logs/syp/tables.log",
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            mem_mb=SYP["mem_mb"],
            runtime=SYP["runtime"],
        params:
            cfg=SYP_PART["tables"],
            models=_SYP_MODELS,
            variants=SYP_VARIANTS,
        script:
            "../scripts/syp_tables.py"
