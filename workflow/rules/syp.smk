# Rules of `syp` (docs/syp.md; README section `syp`).
#   syp_testsets      meta-sets, validation sets, the train-split copy and rotated copies, as test
#                     sets of the zoo's dataset (one job)
#   (spine)           inference runs every model on them: logits + penultimate features
#   syp_oracle        per classifier (one job each, a log per step): six indicators + baseline
#                     scores and predictions, then every oracle variant (Tables 1-5), all seeds
#   syp_tables        Tables 1-5, tau selection, predictions and figures (one job)
#
# labelfree.syp.plan: names, outputs and checks, import-light (parsing imports it on every run).
from labelfree.syp import plan as syp_plan

try:
    SYP = syp_plan.workflow_plan(
        config["syp"],
        ZOOS,
        DATASETS,
        TESTSET_GROUPS,
        zoo_testsets,
        study_enabled("syp"),
    )
except syp_plan.StudyConfigError as _err:
    raise WorkflowError(f"Invalid configuration: {_err}") from None

STUDY_TARGETS["syp"] = SYP.targets

if SYP.zoo in ZOOS:
    _SYP_DS = zoo_dataset(SYP.zoo)
    _SYP_MODELS = zoo_models(SYP.zoo)

    rule syp_testsets:
        input:
            # holdout: null carves the holdout out of the source split (splits.holdout_share)
            unpack(
                lambda w: {
                    k: dataset_split(_SYP_DS, SYP.cfg["splits"][k])
                    for k in ("train", "source", "holdout")
                    if SYP.cfg["splits"].get(k)
                }
            ),
        output:
            sets=[
                testset_path(_SYP_DS, n)
                for names in SYP.groups.values()
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
            **HEAVY,
            mem_mb=SYP.cfg["mem_mb"],
            runtime=SYP.cfg["runtime"],
        params:
            cfg=SYP.parts["testsets"],
            seed=SEED,
            out_dir=lambda w, output: os.path.dirname(output.sets[0]),
        script:
            "../scripts/syp_testsets.py"

    rule syp_oracle:
        input:
            infer=lambda w: [infer_path(SYP.zoo, n, w.model) for n in SYP.infer_sets],
            testsets=[testset_path(_SYP_DS, n) for n in SYP.kinds],
            id_infer=lambda w: infer_path(SYP.zoo, "id", w.model),
            id_testset=testset_path(_SYP_DS, "id"),
        output:
            npz=f"{SYP.raw}/{{model}}/indicators.npz",
            indicators_json=f"{SYP.raw}/{{model}}/indicators.json",
            baselines=f"{SYP.raw}/{{model}}/baselines.csv",
            baselines_md=f"{SYP.raw}/{{model}}/baselines.md",
            q=[f"{SYP.raw}/{{model}}/oracle_{v}.npz" for v in SYP.variants],
            weights=[
                f"{SYP.raw}/{{model}}/oracle_{v}.safetensors" for v in SYP.variants
            ],
            json=[f"{SYP.raw}/{{model}}/oracle_{v}.json" for v in SYP.variants],
        log:
            indicators="logs/syp/indicators_{model}.log",
            oracle="logs/syp/oracle_{model}.log",
        benchmark:
            "benchmarks/syp/oracle_{model}.tsv"
        wildcard_constraints:
            model=syp_plan.alternatives(_SYP_MODELS),
        conda:
            "../../envs/labelfree.yaml"
        threads: SYP.cfg["threads"]
        resources:
            **HEAVY,
            mem_mb=SYP.cfg["mem_mb"],
            runtime=SYP.cfg["runtime"],
        params:
            indicators=SYP.parts["indicators"],
            cfg=SYP.parts["oracle"],
            names=SYP.infer_sets,
            kinds=SYP.kinds,
            variants=SYP.variants,
            seeds=SYP.cfg["seeds"],
            seed=SEED,
        script:
            "../scripts/syp_oracle.py"

    rule syp_tables:
        input:
            indicators=expand(f"{SYP.raw}/{{model}}/indicators.npz", model=_SYP_MODELS),
            baselines=expand(f"{SYP.raw}/{{model}}/baselines.csv", model=_SYP_MODELS),
            oracle=expand(
                f"{SYP.raw}/{{model}}/oracle_{{variant}}.npz",
                model=_SYP_MODELS,
                variant=SYP.variants,
            ),
            oracle_json=expand(
                f"{SYP.raw}/{{model}}/oracle_{{variant}}.json",
                model=_SYP_MODELS,
                variant=SYP.variants,
            ),
            info=f"results/syp/raw/testsets_{_SYP_DS}.json",
        output:
            table1=report(
                SYP.tables["table1"],
                caption="../report/syp/tables/table1.rst",
                category="syp",
                subcategory="Table 1",
            ),
            table2=report(
                SYP.tables["table2"],
                caption="../report/syp/tables/table2.rst",
                category="syp",
                subcategory="Table 2",
            ),
            table3=report(
                SYP.tables["table3"],
                caption="../report/syp/tables/table3.rst",
                category="syp",
                subcategory="Table 3",
            ),
            table4=report(
                SYP.tables["table4"],
                caption="../report/syp/tables/table4.rst",
                category="syp",
                subcategory="Table 4",
            ),
            table5=report(
                SYP.tables["table5"],
                caption="../report/syp/tables/table5.rst",
                category="syp",
                subcategory="Table 5",
            ),
            tau=report(
                SYP.tables["extra-tau_selection"],
                caption="../report/syp/tables/extra-tau_selection.rst",
                category="syp",
                subcategory="threshold",
            ),
            predictions=report(
                SYP.tables["extra-predictions"],
                caption="../report/syp/tables/extra-predictions.rst",
                category="syp",
                subcategory="predictions",
            ),
            meta_fit=report(
                SYP.tables["fig4-5"],
                caption="../report/syp/tables/fig4-5.rst",
                category="syp",
                subcategory="figures",
            ),
            fig10=report(
                SYP.tables["fig10"],
                caption="../report/syp/tables/fig10.rst",
                category="syp",
                subcategory="figures",
            ),
            checks=report(
                SYP.tables["extra-checks"],
                caption="../report/syp/tables/extra-checks.rst",
                category="syp",
                subcategory="checks",
            ),
            fig_fig10=report(
                SYP.figures["fig10"],
                caption="../report/syp/figures/fig10.rst",
                category="syp",
                subcategory="figures",
            ),
            fig_scatter=report(
                SYP.figures["extra-scatter_val"],
                caption="../report/syp/figures/extra-scatter_val.rst",
                category="syp",
                subcategory="figures",
            ),
            fig_meta=report(
                SYP.figures["fig4-5"],
                caption="../report/syp/figures/fig4-5.rst",
                category="syp",
                subcategory="figures",
            ),
            fig_val=report(
                SYP.figures["fig6-7"],
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
            **LIGHT_RESOURCES,
        params:
            cfg=SYP.parts["tables"],
            models=_SYP_MODELS,
            variants=SYP.variants,
        script:
            "../scripts/syp_tables.py"
