# Rules of `answer`: one answer per zoo from its inference artefacts (src/labelfree/answer.py):
# LaF ranking, label-free accuracy estimates by the estimator chosen on the zoo's other labelled
# sets, with split-conformal prediction intervals, true accuracy where labelled, and
# the inputs PACE would have a person label, and the zoo's scorecard in one paragraph (or why it
# has none). Listed first in the HTML report.


from labelfree.outputs import output_name


include: "functions/answer.smk"


ANSWER = config["answer"]

for _z in ANSWER["zoos"]:
    if _z not in ZOOS:
        raise WorkflowError(
            f"Invalid configuration: answer.zoos lists {_z!r}, not a configured zoo "
            f"({sorted(ZOOS)})"
        )
for _z, _t in ANSWER["headline"].items():
    if _z not in ZOOS:
        raise WorkflowError(
            f"Invalid configuration: answer.headline names zoo {_z!r}, not a configured zoo "
            f"({sorted(ZOOS)})"
        )
    if _t not in zoo_testsets(_z):
        raise WorkflowError(
            f"Invalid configuration: answer.headline.{_z} is {_t!r}, not a test set of zoo "
            f"{_z!r} ({zoo_testsets(_z)})"
        )


rule answer:
    input:
        unpack(answer_inputs),
    output:
        md=report(
            "results/answer/{zoo}/answer.md",
            caption="../report/answer/answer.rst",
            category="0 answers",
            subcategory="{zoo}",
        ),
        csv="results/answer/{zoo}/answer.csv",
        plan="results/answer/{zoo}/label-these.csv",
        png=report(
            "results/answer/{zoo}/answer.png",
            caption="../report/answer/figure.rst",
            category="0 answers",
            subcategory="{zoo}",
        ),
        pdf="results/answer/{zoo}/answer.pdf",
    log:
        "logs/answer/{zoo}.log",
    benchmark:
        "benchmarks/answer/{zoo}.tsv"
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        **HEAVY,
        mem_mb=4000,
        runtime=30,
    params:
        zoo=lambda w: w.zoo,
        models=lambda w: zoo_models(w.zoo),
        groups=lambda w: zoo_groups(w.zoo),
        testsets=lambda w: zoo_testsets(w.zoo),
        budget=ANSWER["budget"],
        bootstrap=ANSWER["bootstrap"],
        source=ANSWER["source"],
        kinds=lambda w: shift_kinds(w.zoo),
        level=ANSWER["level"],
        max_mae=ANSWER["max_mae"],
        estimators=ANSWER["estimators"],
        headline=lambda w: ANSWER["headline"].get(w.zoo, ""),
        seed=SEED,
        scorecard_note=lambda w: answer_scorecard_note(w.zoo),
    script:
        "../scripts/answer_zoo.py"


if ANSWER["enabled"]:
    STUDY_TARGETS["answer"] = answer_targets
