# Rules of `scorecard`: every registered label-free and few-label method scored on one zoo's
# inference artefacts (src/labelfree/scorecard; docs/methods.md): the zoo's
# inference files and labelled test sets (config scorecard.testsets picks which); no new inference.


from labelfree.outputs import POOLED, output_name
from labelfree.scorecard.plan import scorecard_coverage
from labelfree.scorecard.plan import scorecard_zoos as scorecard_plan


include: "functions/scorecard.smk"


SCORECARD = config["scorecard"]

for _z in SCORECARD["zoos"]:
    if _z not in ZOOS:
        raise WorkflowError(
            f"Invalid configuration: scorecard.zoos lists {_z!r}, not a configured zoo "
            f"({sorted(ZOOS)})"
        )

# The scorecard scores methods against labels, per kind of shift: every zoo with a labelled test
# set to score; a zoo of one model on accuracy estimation alone (ranking and model selection are
# not applicable), a zoo with the source set only on its sanity rows. A zoo without a model or a
# labelled set is left out, saying why in results/scorecard/tables/extra-all-zoos.csv, and on
# stderr when the user named it in scorecard.zoos (with `zoos: []`, every zoo, the table alone
# says it, so that every parse of the default config stays quiet); a zoo whose labelled sets
# turn out multi-label has its reason written by its scorecard job; with no zoo left the
# scorecard is skipped.
SCORECARD_ZOOS, SCORECARD_SKIPS = scorecard_plan(
    scorecard_candidates(),
    {z: scorecard_testsets(z) for z in ZOOS},
    {z: len(zoo_models(z)) for z in ZOOS},
    SCORECARD["source"],
)
if SCORECARD["enabled"] and SCORECARD_ZOOS and SCORECARD["zoos"]:
    for _z, _why in SCORECARD_SKIPS.items():
        print(
            f"labelfree: scorecard skips {_z}: {_why} (scored test sets: labelled ones "
            f"matching scorecard.testsets {SCORECARD['testsets'] or '(all)'})",
            file=sys.stderr,
        )
if SCORECARD["enabled"] and not SCORECARD_ZOOS:
    skip_study(
        "scorecard",
        "; ".join(SCORECARD_SKIPS.values())
        or "no zoo with a model and a labelled test set to score",
    )


rule scorecard_zoo_list:
    input:
        best=lambda w: [
            f"results/scorecard/tables/{output_name(SCORECARD_STEMS['best'], z)}.csv"
            for z in scorecard_zoos()
        ],
    output:
        csv=report(
            f"results/scorecard/tables/{output_name(SCORECARD_COVERAGE, POOLED)}.csv",
            caption=f"../report/scorecard/tables/{SCORECARD_COVERAGE}.rst",
            category="2 scorecard",
        ),
        md=f"results/scorecard/tables/{output_name(SCORECARD_COVERAGE, POOLED)}.md",
    log:
        "logs/scorecard/zoos.log",
    benchmark:
        "benchmarks/scorecard/zoos.tsv"
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        rows=lambda w: scorecard_coverage_rows(),
        scored=lambda w: scorecard_zoos(),
    script:
        "../scripts/scorecard_zoos.py"


rule scorecard:
    input:
        unpack(scorecard_inputs),
    output:
        **{
            t: report(
                f"results/scorecard/tables/{output_name(SCORECARD_STEMS[t], '{zoo}')}.csv",
                caption=f"../report/scorecard/tables/{SCORECARD_STEMS[t]}.rst",
                category="2 scorecard",
                subcategory="{zoo}",
            )
            for t in SCORECARD_TABLES
        },
        png=report(
            f"results/scorecard/figures/{output_name(SCORECARD_FIGURE, '{zoo}')}.png",
            caption=f"../report/scorecard/figures/{SCORECARD_FIGURE}.rst",
            category="2 scorecard",
            subcategory="{zoo}",
        ),
        pdf=f"results/scorecard/figures/{output_name(SCORECARD_FIGURE, '{zoo}')}.pdf",
        method_outputs=scorecard_outputs_path("{zoo}"),
    log:
        "logs/scorecard/{zoo}.log",
    benchmark:
        "benchmarks/scorecard/{zoo}.tsv"
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        **HEAVY,
        mem_mb=6000,
        runtime=60,
    params:
        zoo=lambda w: w.zoo,
        models=lambda w: zoo_models(w.zoo),
        groups=lambda w: scorecard_groups(w.zoo),
        testsets=lambda w: scorecard_testsets(w.zoo),
        kinds=lambda w: shift_kinds(w.zoo),
        features=lambda w: scorecard_features(w.zoo),
        budgets=SCORECARD["budgets"],
        runs=SCORECARD["runs"],
        source=SCORECARD["source"],
        exclude=SCORECARD["exclude"],
        seed=SEED,
    script:
        "../scripts/scorecard_zoo.py"


if SCORECARD["enabled"]:
    STUDY_TARGETS["scorecard"] = scorecard_targets
