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
    }


def answer_targets():
    return [
        f"results/answer/{z}/{name}"
        for z in answer_zoos()
        for name in ("answer.md", "answer.csv", "label-these.csv", "answer.png")
    ]
