# Input functions and helpers of `answer` (kept apart from its rules, see answer.smk).


def answer_zoos():
    """Zoos that get an answer: config answer.zoos, or every zoo when it is empty."""
    return list(ANSWER["zoos"]) or list(ZOOS)


def answer_inputs(wildcards):
    zoo = wildcards.zoo
    return {
        "infer": [
            infer_file(zoo, m, g) for m in zoo_models(zoo) for g in zoo_groups(zoo)
        ],
        "testsets": [testset_path(zoo_dataset(zoo), t) for t in zoo_testsets(zoo)],
        **(
            {
                "best": f"results/scorecard/tables/{output_name('extra-best', zoo)}.csv",
                "method_outputs": scorecard_outputs_path(zoo),
            }
            if SCORECARD["enabled"] and zoo in SCORECARD_ZOOS
            else {}
        ),
    }


def answer_scorecard_note(zoo):
    """Why the zoo's answer has no scorecard summary (empty when it has one)."""
    if not SCORECARD["enabled"]:
        return (
            "The scorecard is off in this run (config scorecard.enabled, or skipped)."
        )
    if zoo in SCORECARD_ZOOS:
        return ""
    return SCORECARD_SKIPS.get(zoo, "not listed in config scorecard.zoos")


def answer_targets():
    return [
        f"results/answer/{z}/{name}"
        for z in answer_zoos()
        for name in ("answer.md", "answer.csv", "label-these.csv", "answer.png")
    ]
