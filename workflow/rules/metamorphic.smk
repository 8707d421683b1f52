# Rules of `metamorphic` (spec ../shared/specs/metamorphic.md; README section `metamorphic`).
#   mm_testsets_<dataset>  DigitScenes sources, MR-1/MR-2 follow-ups and counterfactual re-renders
#                          as test sets of every dataset whose zoos list an mm_* group (one job)
#   (spine)                inference_<zoo> runs every model on them (one job per zoo)
#   mm_verdicts_<zoo>      oracles + majority vote per model, base and colour set (one job per zoo)
#   mm_report              tables, figures and checks A-H for RQ1-RQ6 (one job)

from labelfree.data.digitscenes import DigitScenesError
from labelfree.metamorphic import experiment as mm_exp
from labelfree.metamorphic.followups import FollowupError

MM = config["metamorphic"]
MM_BASES = MM["testsets"]

try:
    mm_exp.check_config(MM, ZOOS, DATASETS)
except (mm_exp.ExperimentError, DigitScenesError, FollowupError) as _err:
    raise WorkflowError(f"Invalid configuration: {_err}") from None

# Test-set groups (registered even when the study is disabled, so zoo sheets stay valid).
for _group, _names in mm_exp.group_testsets(MM_BASES).items():
    TESTSET_GROUPS[_group] = _names


def mm_dataset_bases(dataset):
    """Bases whose sets some zoo on ``dataset`` runs (union over the dataset's zoos)."""
    bases = []
    for zoo in ZOOS:
        if zoo_dataset(zoo) == dataset:
            for b in mm_exp.zoo_bases(zoo_testsets(zoo), MM_BASES):
                if b not in bases:
                    bases.append(b)
    return bases


def mm_base_path(dataset, base):
    return testset_path(dataset, mm_exp.base_name(base))


def mm_dataset_outputs(dataset):
    out = []
    for b in mm_dataset_bases(dataset):
        out.append(mm_base_path(dataset, b))
        out += [testset_path(dataset, t) for t in mm_exp.base_testsets(b, MM_BASES[b])]
    return out


def mm_zoo_bases(zoo):
    return mm_exp.zoo_bases(zoo_testsets(zoo), MM_BASES)


def mm_zoo_infer(zoo):
    """[test set, model, inference path] for every mm_* test set the zoo runs."""
    out = []
    for b in mm_zoo_bases(zoo):
        for t in mm_exp.base_testsets(b, MM_BASES[b]):
            if t in zoo_testsets(zoo):
                out += [[t, m, infer_path(zoo, t, m)] for m in zoo_models(zoo)]
    return out


def mm_raw(zoo, what):
    return f"results/metamorphic/raw/{zoo}/{what}"


MM_TABLES = [
    "table1-3_oracle_precision",
    "table4_colours",
    "table5-6_prevalence",
    "fig6_frequency",
    "fig8_object_size",
    "table7-8_accuracy",
    "table7_wilcoxon",
    "fig9_training",
    "fig10_accuracy",
    "bias_calibration",
    "mr2_recall",
    "checks",
]
MM_FIGURES = [
    "fig6_frequency",
    "fig8_object_size",
    "fig9_training",
    "fig10_accuracy",
    "gallery",
]
MM_UNBIASED = next((z for z, c in MM["zoos"].items() if c["role"] == "unbiased"), None)


def mm_gallery_inputs():
    """Sources and c3 follow-ups of the RQ1 base in the unbiased zoo's dataset (gallery)."""
    base = MM["rq1"]["base"]
    if MM_UNBIASED is None or base not in mm_zoo_bases(MM_UNBIASED):
        return {}
    if "c3" not in MM_BASES[base]["coloursets"]:
        return {}
    d = zoo_dataset(MM_UNBIASED)
    return {
        "base": mm_base_path(d, base),
        "followups": testset_path(d, mm_exp.followup_name(base, "c3")),
    }


def metamorphic_targets():
    if not MM["zoos"]:
        return []
    return [
        f"results/metamorphic/tables/{t}.{e}" for t in MM_TABLES for e in ("csv", "md")
    ] + [
        f"results/metamorphic/figures/{f}.{e}"
        for f in MM_FIGURES
        for e in ("png", "pdf")
    ]


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
        output:
            mm_dataset_outputs(_ds),
        log:
            f"logs/metamorphic/testsets_{_ds}.log",
        benchmark:
            f"benchmarks/metamorphic/testsets_{_ds}.tsv"
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
                f"results/metamorphic/tables/{t}.csv",
                caption=f"../report/metamorphic/{t}.rst",
                category="metamorphic",
                subcategory="tables",
            )
            for t in MM_TABLES
        ],
        md=[f"results/metamorphic/tables/{t}.md" for t in MM_TABLES],
        figures=[
            report(
                f"results/metamorphic/figures/{f}.png",
                caption=f"../report/metamorphic/{f}.rst",
                category="metamorphic",
                subcategory="figures",
            )
            for f in MM_FIGURES
        ],
        pdf=[f"results/metamorphic/figures/{f}.pdf" for f in MM_FIGURES],
        checks="results/metamorphic/raw/checks.json",
    log:
        "logs/metamorphic/report.log",
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
