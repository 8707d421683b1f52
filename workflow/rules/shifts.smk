# Rules of the `shifts` layer (docs/shifts.md): from each dataset's `id` test set, the -C
# corruption suite and the natural-shift sets. `shifts.jobs: dataset` (the default run): one job
# per dataset writes them all (rule shifts_testsets; one Python start instead of sixteen);
# `corruption` (the schema default): one job per dataset x corruption, writing all its
# severities (shifts_corruption), and one per dataset for the natural shifts (shifts_natural). Released -C archives replace regeneration where
# `shifts.released` names one for the dataset (docs/shifts.md,
# readings R1-R4).


from labelfree.outputs import output_name


include: "functions/shifts.smk"


import re

from labelfree.shifts.released import release_name as shifts_release_name

SHIFTS = config["shifts"]

# Zoos list `natural` in their `testsets` to run these; `corruptions` is registered in common.smk.
TESTSET_GROUPS["natural"] = list(SHIFTS["natural"])


if SHIFTS["jobs"] == "dataset" and (SHIFTS["corruptions"] or SHIFTS["natural"]):

    # the datasets a zoo tests on: the job draws their example figure too (one process
    # fewer per dataset); a study's other shifted datasets: shifts_testsets_sets, no figure
    rule shifts_testsets:
        input:
            unpack(shifts_corruption_inputs),
        output:
            sets=shifts_testset_outputs(),
            png=report(
                f"results/shifts/figures/{output_name(SHIFTS_EXAMPLES, '{dataset}')}.png",
                caption=f"../report/shifts/figures/{SHIFTS_EXAMPLES}.rst",
                category="shifts",
                subcategory="test sets",
            ),
            pdf=f"results/shifts/figures/{output_name(SHIFTS_EXAMPLES, '{dataset}')}.pdf",
        log:
            "logs/shifts/{dataset}/testsets.log",
            examples="logs/shifts/{dataset}/examples.log",
        benchmark:
            "benchmarks/shifts/{dataset}/testsets.tsv"
        wildcard_constraints:
            dataset=shifts_alternatives(shifts_example_datasets()),
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            **HEAVY,
            mem_mb=SHIFTS["mem_mb"],
            runtime=SHIFTS["runtime"],
        params:
            **shifts_testsets_params(),
            index=SHIFTS["example_index"],
        script:
            "../scripts/shifts_testsets.py"

    rule shifts_testsets_sets:
        input:
            unpack(shifts_corruption_inputs),
        output:
            sets=shifts_testset_outputs(),
        log:
            "logs/shifts/{dataset}/testsets.log",
        benchmark:
            "benchmarks/shifts/{dataset}/testsets.tsv"
        wildcard_constraints:
            dataset=shifts_alternatives(
                sorted(set(DATASETS) - set(shifts_example_datasets()))
            ),
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            **HEAVY,
            mem_mb=SHIFTS["mem_mb"],
            runtime=SHIFTS["runtime"],
        params:
            **shifts_testsets_params(),
        script:
            "../scripts/shifts_testsets.py"

else:

    rule shifts_corruption:
        input:
            unpack(shifts_corruption_inputs),
        output:
            expand(
                "results/testsets/{{dataset}}/{{corruption}}-{severity}.npz",
                severity=SHIFTS["severities"],
            ),
        log:
            "logs/shifts/{dataset}/{corruption}.log",
        benchmark:
            "benchmarks/shifts/{dataset}/{corruption}.tsv"
        wildcard_constraints:
            dataset=shifts_alternatives(list(DATASETS)),
            corruption=shifts_alternatives(SHIFTS["corruptions"]),
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            **HEAVY,
            mem_mb=SHIFTS["mem_mb"],
            runtime=SHIFTS["runtime"],
        params:
            dataset=lambda wc: wc.dataset,
            corruption=lambda wc: wc.corruption,
            severities=SHIFTS["severities"],
            seed=SEED,
            table=SHIFTS["params"],
            released=lambda wc: SHIFTS["released"].get(wc.dataset, ""),
            single_level_severity=SHIFTS["released_single_level_severity"],
            fallback=SHIFTS["released_fallback"],
        script:
            "../scripts/shifts_corruption.py"

    if SHIFTS["natural"]:

        rule shifts_natural:
            input:
                id=testset_path("{dataset}", "id"),
            output:
                [testset_path("{dataset}", name) for name in SHIFTS["natural"]],
            log:
                "logs/shifts/{dataset}/natural.log",
            benchmark:
                "benchmarks/shifts/{dataset}/natural.tsv"
            wildcard_constraints:
                dataset=shifts_alternatives(list(DATASETS)),
            conda:
                "../../envs/labelfree.yaml"
            threads: 1
            resources:
                **HEAVY,
                mem_mb=SHIFTS["mem_mb"],
                runtime=SHIFTS["runtime"],
            params:
                dataset=lambda wc: wc.dataset,
                names=SHIFTS["natural"],
                seed=SEED,
            script:
                "../scripts/shifts_natural.py"


# The example figures are the layer's report items (final targets of the run); with
# `shifts.jobs: dataset` rule shifts_testsets draws them.
STUDY_TARGETS["shifts"] = shifts_example_targets


if SHIFTS["jobs"] != "dataset":

    rule shifts_examples:
        input:
            id=testset_path("{dataset}", "id"),
            corrupted=lambda wc: [
                testset_path(wc.dataset, f"{c}-{s}")
                for c in SHIFTS["corruptions"]
                for s in SHIFTS["severities"]
            ],
            natural=lambda wc: [testset_path(wc.dataset, n) for n in SHIFTS["natural"]],
        output:
            png=report(
                f"results/shifts/figures/{output_name(SHIFTS_EXAMPLES, '{dataset}')}.png",
                caption=f"../report/shifts/figures/{SHIFTS_EXAMPLES}.rst",
                category="shifts",
                subcategory="test sets",
            ),
            pdf=f"results/shifts/figures/{output_name(SHIFTS_EXAMPLES, '{dataset}')}.pdf",
        log:
            "logs/shifts/{dataset}/examples.log",
        wildcard_constraints:
            dataset=shifts_alternatives(list(DATASETS)),
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            **LIGHT_RESOURCES,
        params:
            corruptions=SHIFTS["corruptions"],
            severities=SHIFTS["severities"],
            natural=SHIFTS["natural"],
            index=SHIFTS["example_index"],
        script:
            "../scripts/shifts_examples.py"
