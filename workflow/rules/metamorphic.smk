# Rules of `metamorphic` (docs/metamorphic.md; planning in labelfree.metamorphic.plan).
#   metamorphic_testsets_<dataset>  DigitScenes sources, MR-1/MR-2 follow-ups and counterfactual
#                                   re-renders as test sets of every dataset whose zoos list a
#                                   metamorphic_* group (one job)
#   (spine)                         inference runs every model on them (one job per bundle and group)
#   metamorphic_verdicts            oracles + majority vote per model, base and colour set, every
#                                   zoo in turn (one job; a log per zoo)
#   metamorphic_report              tables, figures and checks A-H for RQ1-RQ6 (one job)


include: "functions/metamorphic.smk"


from labelfree.metamorphic import plan as metamorphic_plan
from labelfree.outputs import POOLED, output_name

METAMORPHIC = config["metamorphic"]
METAMORPHIC_BASES = METAMORPHIC["testsets"]
# The plan call: checks the configuration, registers the study's test-set groups (also when the
# study is disabled, so zoo sheets that list them stay valid).
TESTSET_GROUPS.update(metamorphic_plan.checked_groups(METAMORPHIC, ZOOS, DATASETS))


# stems (docs/outputs.md) of labelfree.metamorphic.plan.TABLES / FIGURES; every output pools
# the study's zoos: <id>-all[-<detail>]; captions in report/metamorphic/{tables,figures}/<stem>.rst
METAMORPHIC_TABLES = [
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
METAMORPHIC_FIGURES = [
    "fig6",
    "fig8",
    "fig9",
    "fig10",
    "fig7",
    "fig1-5-gallery",
]


STUDY_TARGETS["metamorphic"] = metamorphic_targets


for _ds in DATASETS:
    if not metamorphic_dataset_bases(_ds):
        continue

    rule:
        name:
            f"metamorphic_testsets_{_ds}"
        input:
            [
                dataset_split(_ds, METAMORPHIC_BASES[b]["split"])
                for b in metamorphic_dataset_bases(_ds)
                if METAMORPHIC_BASES[b]["split"]
            ],
            metamorphic_originals_meta(_ds),
        output:
            metamorphic_dataset_outputs(_ds),
        log:
            f"logs/metamorphic/testsets_{_ds}.log",
        benchmark:
            f"benchmarks/metamorphic/testsets_{_ds}.tsv"
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            **HEAVY,
            mem_mb=METAMORPHIC["mem_mb"],
            runtime=30,
        params:
            dataset=_ds,
            bases={b: METAMORPHIC_BASES[b] for b in metamorphic_dataset_bases(_ds)},
            metamorphic=METAMORPHIC,
            seed=SEED,
            out_dir=lambda w, output: os.path.dirname(output[0]),
            split_paths={
                b: dataset_split(_ds, METAMORPHIC_BASES[b]["split"])
                for b in metamorphic_dataset_bases(_ds)
                if METAMORPHIC_BASES[b]["split"]
            },
            meta_paths={
                b: f"results/data/{_ds}/meta.json"
                for b in metamorphic_dataset_bases(_ds)
                if METAMORPHIC_BASES[b]["split"]
            },
        script:
            "../scripts/metamorphic_testsets.py"


if METAMORPHIC["zoos"]:

    rule metamorphic_verdicts:
        input:
            bases=sorted(
                {
                    metamorphic_base_path(zoo_dataset(z), b)
                    for z in METAMORPHIC["zoos"]
                    for b in metamorphic_zoo_bases(z)
                }
            ),
            infer=[
                p for z in METAMORPHIC["zoos"] for _, _, p in metamorphic_zoo_infer(z)
            ],
        output:
            summary=[metamorphic_raw(z, "summary.csv") for z in METAMORPHIC["zoos"]],
            verdicts=[
                metamorphic_raw(z, "verdicts.csv.gz") for z in METAMORPHIC["zoos"]
            ],
        log:
            [f"logs/metamorphic/verdicts_{z}.log" for z in METAMORPHIC["zoos"]],
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            **HEAVY,
            mem_mb=METAMORPHIC["mem_mb"],
            runtime=30,
        params:
            zoos=[metamorphic_verdicts_params(z) for z in METAMORPHIC["zoos"]],
            metamorphic=METAMORPHIC,
        script:
            "../scripts/metamorphic_verdicts.py"


rule metamorphic_report:
    input:
        summaries=[metamorphic_raw(z, "summary.csv") for z in METAMORPHIC["zoos"]],
        verdicts=[metamorphic_raw(z, "verdicts.csv.gz") for z in METAMORPHIC["zoos"]],
        gallery=list(metamorphic_gallery_inputs().values()),
    output:
        tables=[
            report(
                f"results/metamorphic/tables/{output_name(t, POOLED)}.csv",
                caption=f"../report/metamorphic/tables/{t}.rst",
                category="metamorphic",
                subcategory="tables",
            )
            for t in METAMORPHIC_TABLES
        ],
        md=[
            f"results/metamorphic/tables/{output_name(t, POOLED)}.md"
            for t in METAMORPHIC_TABLES
        ],
        figures=[
            report(
                f"results/metamorphic/figures/{output_name(f, POOLED)}.png",
                caption=f"../report/metamorphic/figures/{f}.rst",
                category="metamorphic",
                subcategory="figures",
            )
            for f in METAMORPHIC_FIGURES
        ],
        pdf=[
            f"results/metamorphic/figures/{output_name(f, POOLED)}.pdf"
            for f in METAMORPHIC_FIGURES
        ],
        checks="results/metamorphic/raw/checks.json",
        annotation="results/metamorphic/annotation/rq1_sample.csv",
    log:
        "logs/metamorphic/report.log",
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        **LIGHT_RESOURCES,
    params:
        metamorphic=METAMORPHIC,
        gallery=metamorphic_gallery_inputs(),
        out_dir=lambda w, output: os.path.dirname(os.path.dirname(output.checks)),
    script:
        "../scripts/metamorphic_report.py"
