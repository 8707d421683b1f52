# Rules of `metamorphic` (spec ../shared/specs/metamorphic.md; README section `metamorphic`).
#   mm_testsets_<dataset>  DigitScenes sources, MR-1/MR-2 follow-ups and counterfactual re-renders
#                          as test sets of every dataset whose zoos list an mm_* group (one job)
#   (spine)                inference runs every model on them (one job per bundle and group)
#   mm_verdicts_<zoo>      oracles + majority vote per model, base and colour set (one job per zoo)
#   mm_report              tables, figures and checks A-H for RQ1-RQ6 (one job)


include: "functions/metamorphic.smk"


from labelfree.data.digitscenes import DigitScenesError

# import-light (no scipy, torch or matplotlib): parse time needs only names and checks
from labelfree.metamorphic import layout as mm_layout
from labelfree.outputs import POOLED, output_name
from labelfree.metamorphic.followups import FollowupError

MM = config["metamorphic"]
MM_BASES = MM["testsets"]

try:
    mm_layout.check_config(MM, ZOOS, DATASETS)
except (mm_layout.ExperimentError, DigitScenesError, FollowupError) as _err:
    raise WorkflowError(f"Invalid configuration: {_err}") from None

# Test-set groups (registered even when the study is disabled, so zoo sheets stay valid).
for _group, _names in mm_layout.group_testsets(MM_BASES).items():
    TESTSET_GROUPS[_group] = _names


# stems (docs/outputs.md) of labelfree.metamorphic.tables.TABLES / FIGURES; every output pools
# the study's zoos: <id>-all[-<detail>]; captions in report/metamorphic/{tables,figures}/<stem>.rst
MM_TABLES = [
    "table1-3",
    "table4",
    "table5-6",
    "fig6",
    "fig8",
    "table7-8",
    "table7-wilcoxon",
    "fig9",
    "fig10",
    "extra-bias_calibration",
    "extra-mr2_recall",
    "table1-3-annotation_sizes",
    "fig7",
    "extra-checks",
]
MM_FIGURES = [
    "fig6",
    "fig8",
    "fig9",
    "fig10",
    "fig7",
    "fig1-5-gallery",
]
MM_UNBIASED = next((z for z, c in MM["zoos"].items() if c["role"] == "unbiased"), None)


STUDY_TARGETS["metamorphic"] = metamorphic_targets


for _ds in DATASETS:
    if not mm_dataset_bases(_ds):
        continue

    rule:
        name:
            f"mm_testsets_{_ds}"
        input:
            [
                dataset_split(_ds, MM_BASES[b]["split"])
                for b in mm_dataset_bases(_ds)
                if MM_BASES[b]["split"]
            ],
            mm_originals_meta(_ds),
        output:
            mm_dataset_outputs(_ds),
        log:
            f"logs/metamorphic/testsets_{_ds}.log",
        benchmark:
            f"benchmarks/metamorphic/testsets_{_ds}.tsv"
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            mem_mb=MM["mem_mb"],
            runtime=30,
        params:
            dataset=_ds,
            bases={b: MM_BASES[b] for b in mm_dataset_bases(_ds)},
            mm=MM,
            seed=SEED,
            out_dir=lambda w, output: os.path.dirname(output[0]),
            split_paths={
                b: dataset_split(_ds, MM_BASES[b]["split"])
                for b in mm_dataset_bases(_ds)
                if MM_BASES[b]["split"]
            },
            meta_paths={
                b: f"results/data/{_ds}/meta.json"
                for b in mm_dataset_bases(_ds)
                if MM_BASES[b]["split"]
            },
        script:
            "../scripts/metamorphic_testsets.py"


for _zoo, _zc in MM["zoos"].items():

    rule:
        name:
            f"mm_verdicts_{_zoo}"
        input:
            bases=[mm_base_path(zoo_dataset(_zoo), b) for b in mm_zoo_bases(_zoo)],
            infer=[p for _, _, p in mm_zoo_infer(_zoo)],
        output:
            summary=mm_raw(_zoo, "summary.csv"),
            verdicts=mm_raw(_zoo, "verdicts.csv.gz"),
        log:
            f"logs/metamorphic/verdicts_{_zoo}.log",
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            mem_mb=MM["mem_mb"],
            runtime=30,
        params:
            zoo=_zoo,
            role=_zc["role"],
            sheet=ZOO_SHEETS[_zoo][["model", "width", "epochs", "seed"]].to_dict(
                "records"
            ),
            bases={b: MM_BASES[b] for b in mm_zoo_bases(_zoo)},
            base_paths={
                b: mm_base_path(zoo_dataset(_zoo), b) for b in mm_zoo_bases(_zoo)
            },
            infer=mm_zoo_infer(_zoo),
            mm=MM,
        script:
            "../scripts/metamorphic_verdicts.py"


rule mm_report:
    input:
        summaries=[mm_raw(z, "summary.csv") for z in MM["zoos"]],
        verdicts=[mm_raw(z, "verdicts.csv.gz") for z in MM["zoos"]],
        gallery=list(mm_gallery_inputs().values()),
    output:
        tables=[
            report(
                f"results/metamorphic/tables/{output_name(t, POOLED)}.csv",
                caption=f"../report/metamorphic/tables/{t}.rst",
                category="metamorphic",
                subcategory="tables",
            )
            for t in MM_TABLES
        ],
        md=[
            f"results/metamorphic/tables/{output_name(t, POOLED)}.md"
            for t in MM_TABLES
        ],
        figures=[
            report(
                f"results/metamorphic/figures/{output_name(f, POOLED)}.png",
                caption=f"../report/metamorphic/figures/{f}.rst",
                category="metamorphic",
                subcategory="figures",
            )
            for f in MM_FIGURES
        ],
        pdf=[
            f"results/metamorphic/figures/{output_name(f, POOLED)}.pdf"
            for f in MM_FIGURES
        ],
        checks="results/metamorphic/raw/checks.json",
        annotation="results/metamorphic/annotation/rq1_sample.csv",
    log:
        "logs/metamorphic/report.log",
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        mem_mb=MM["mem_mb"],
        runtime=30,
    params:
        mm=MM,
        gallery=mm_gallery_inputs(),
        out_dir=lambda w, output: os.path.dirname(os.path.dirname(output.checks)),
    script:
        "../scripts/metamorphic_report.py"
