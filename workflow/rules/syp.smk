# Rules of `syp` (spec ../shared/specs/syp.md; README section `syp`).
#   syp_testsets      meta-sets, validation sets, the train-split copy and rotated copies, as test
#                     sets of the zoo's dataset (one job)
#   (spine)           inference_<zoo> runs every model on them: logits + penultimate features
#   syp_indicators    six indicators + baseline scores and predictions, per classifier (one job each)
#   syp_oracle        every oracle variant (Tables 1-5), all seeds, per classifier (one job each)
#   syp_tables        Tables 1-5, tau selection, predictions and figures (one job)

import re

from labelfree.syp import experiment as syp_exp
from labelfree.syp import study as syp_study

SYP = config["syp"]
SYP_ZOO = SYP["zoo"]
SYP_GROUPS = syp_study.testset_names(SYP)
SYP_VARIANTS = list(syp_exp.variant_specs(SYP))
SYP_RAW = f"results/syp/raw/{SYP_ZOO}"

# Registered even when the study is disabled, so zoo sheets naming the groups stay valid.
for _group, _names in SYP_GROUPS.items():
    TESTSET_GROUPS[_group] = _names


def syp_check():
    """Refuse a configuration the study cannot run, naming the key at fault."""
    if SYP_ZOO not in ZOOS:
        raise WorkflowError(f"syp.zoo: zoo {SYP_ZOO!r} is not configured under zoos")
    if "penultimate" not in ZOOS[SYP_ZOO]["features"]:
        raise WorkflowError(
            f"zoos.{SYP_ZOO}.features must include 'penultimate' for syp"
        )
    ds = zoo_dataset(SYP_ZOO)
    if DATASETS[ds]["test_split"] != SYP["splits"]["source"]:
        raise WorkflowError(
            f"datasets.{ds}.test_split is {DATASETS[ds]['test_split']!r}; syp needs it to be "
            f"syp.splits.source ({SYP['splits']['source']!r}), the meta-set source"
        )
    have = set(zoo_testsets(SYP_ZOO))
    missing = [g for g, names in SYP_GROUPS.items() if names and not set(names) <= have]
    if missing or "id" not in have:
        raise WorkflowError(
            f"zoos.{SYP_ZOO}.testsets must list id and {missing or list(SYP_GROUPS)} for syp"
        )


if study_enabled("syp"):
    syp_check()


def syp_part(*keys):
    """The config keys a rule depends on (so unrelated syp keys do not rerun it)."""
    return {k: SYP[k] for k in keys}


def syp_alternatives(names):
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def syp_sets():
    """Every syp test set the indicators read, name -> kind (meta-sets first)."""
    kinds = {n: "meta" for n in SYP_GROUPS["syp_meta"]}
    kinds.update({n: "val" for n in SYP_GROUPS["syp_val"]})
    return kinds


def syp_indicator_inputs(wildcards):
    ds = zoo_dataset(SYP_ZOO)
    names = SYP_GROUPS["syp_ref"] + list(syp_sets()) + SYP_GROUPS["syp_rot"]
    return {
        "infer": [infer_path(SYP_ZOO, n, wildcards.model) for n in names],
        "testsets": [testset_path(ds, n) for n in syp_sets()],
        "id_infer": infer_path(SYP_ZOO, "id", wildcards.model),
        "id_testset": testset_path(ds, "id"),
    }


def syp_tables_out():
    tables = {
        k: f"results/syp/tables/{k}.csv"
        for k in (
            "table1_methods",
            "table2_configurations",
            "table3_indicators",
            "table4_capacity",
            "table5_normalisation",
            "tau_selection",
            "predictions",
            "fig4-5_meta_fit",
        )
    }
    figs = {
        k: f"results/syp/figures/{k}.png"
        for k in ("scatter_val", "fig4-5_meta_bars", "fig6-7_val_bars")
    }
    return tables, figs


def syp_targets():
    tables, figs = syp_tables_out()
    return list(tables.values()) + list(figs.values())


STUDY_TARGETS["syp"] = syp_targets

if SYP_ZOO in ZOOS:
    _SYP_DS = zoo_dataset(SYP_ZOO)
    _SYP_MODELS = zoo_models(SYP_ZOO)
    _SYP_TABLES, _SYP_FIGS = syp_tables_out()

    rule syp_testsets:
        input:
            train=dataset_split(_SYP_DS, SYP["splits"]["train"]),
            source=dataset_split(_SYP_DS, SYP["splits"]["source"]),
            holdout=dataset_split(_SYP_DS, SYP["splits"]["holdout"]),
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
        threads: 1
        resources:
            mem_mb=SYP["mem_mb"],
            runtime=SYP["runtime"],
        params:
            cfg=syp_part("meta_sets", "validation", "rotation"),
            seed=SEED,
            out_dir=f"results/testsets/{_SYP_DS}",
        script:
            "../scripts/syp_testsets.py"

    rule syp_indicators:
        input:
            unpack(syp_indicator_inputs),
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
            model=syp_alternatives(_SYP_MODELS),
        threads: 1
        resources:
            mem_mb=SYP["mem_mb"],
            runtime=SYP["runtime"],
        params:
            cfg=syp_part("atc_form", "blur_form", "image_form", "rotation"),
            seed=SEED,
            names=lambda wc: SYP_GROUPS["syp_ref"]
            + list(syp_sets())
            + SYP_GROUPS["syp_rot"],
            kinds=syp_sets(),
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
            model=syp_alternatives(_SYP_MODELS),
        threads: SYP["threads"]
        resources:
            mem_mb=SYP["mem_mb"],
            runtime=SYP["runtime"],
        params:
            cfg=syp_part("oracle", "norm_train_scope", "tables"),
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
                _SYP_TABLES["table1_methods"],
                caption="../report/syp/table1.rst",
                category="syp",
                subcategory="Table 1",
            ),
            table2=report(
                _SYP_TABLES["table2_configurations"],
                caption="../report/syp/table2.rst",
                category="syp",
                subcategory="Table 2",
            ),
            table3=report(
                _SYP_TABLES["table3_indicators"],
                caption="../report/syp/table3.rst",
                category="syp",
                subcategory="Table 3",
            ),
            table4=report(
                _SYP_TABLES["table4_capacity"],
                caption="../report/syp/table4.rst",
                category="syp",
                subcategory="Table 4",
            ),
            table5=report(
                _SYP_TABLES["table5_normalisation"],
                caption="../report/syp/table5.rst",
                category="syp",
                subcategory="Table 5",
            ),
            tau=report(
                _SYP_TABLES["tau_selection"],
                caption="../report/syp/tau.rst",
                category="syp",
                subcategory="threshold",
            ),
            predictions=report(
                _SYP_TABLES["predictions"],
                caption="../report/syp/predictions.rst",
                category="syp",
                subcategory="predictions",
            ),
            meta_fit=_SYP_TABLES["fig4-5_meta_fit"],
            fig_scatter=report(
                _SYP_FIGS["scatter_val"],
                caption="../report/syp/scatter.rst",
                category="syp",
                subcategory="figures",
            ),
            fig_meta=report(
                _SYP_FIGS["fig4-5_meta_bars"],
                caption="../report/syp/fig_meta.rst",
                category="syp",
                subcategory="figures",
            ),
            fig_val=report(
                _SYP_FIGS["fig6-7_val_bars"],
                caption="../report/syp/fig_val.rst",
                category="syp",
                subcategory="figures",
            ),
        log:
            "logs/syp/tables.log",
        threads: 1
        resources:
            mem_mb=SYP["mem_mb"],
            runtime=SYP["runtime"],
        params:
            cfg=syp_part("aggregate", "tables", "oracle"),
            models=_SYP_MODELS,
            variants=SYP_VARIANTS,
        script:
            "../scripts/syp_tables.py"
