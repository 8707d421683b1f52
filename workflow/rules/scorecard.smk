# Rules of `scorecard`: every registered label-free and few-label method scored on one zoo's
# inference artefacts (src/labelfree/scorecard; ../shared/specs/scorecard.md): the zoo's
# inference files and labelled test sets (config scorecard.testsets picks which); no new inference.


from labelfree.outputs import output_name


include: "functions/scorecard.smk"


SCORECARD = config["scorecard"]

for _z in SCORECARD["zoos"]:
    if _z not in ZOOS:
        raise WorkflowError(
            f"Invalid configuration: scorecard.zoos lists {_z!r}, not a configured zoo "
            f"({sorted(ZOOS)})"
        )

# The scorecard compares methods on two or more models against labels: a zoo with one model,
# or none of whose scored test sets is labelled, is left out, saying so; with none left the
# scorecard is skipped.
SCORECARD_ZOOS, _sc_skips = labelled_zoos(
    scorecard_candidates(),
    {z: scorecard_testsets(z) for z in ZOOS},
    {z: len(zoo_models(z)) for z in ZOOS},
    "scorecard",
)
if SCORECARD["enabled"] and SCORECARD_ZOOS:
    for _z, _why in _sc_skips.items():
        print(
            f"labelfree: scorecard skips {_z}: {_why} (scored test sets: labelled ones "
            f"matching scorecard.testsets {SCORECARD['testsets'] or '(all)'})",
            file=sys.stderr,
        )
if SCORECARD["enabled"] and not SCORECARD_ZOOS:
    skip_study(
        "scorecard",
        "; ".join(_sc_skips.values())
        or "no zoo with two or more models and a labelled test set to score",
    )


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
    log:
        "logs/scorecard/{zoo}.log",
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
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
