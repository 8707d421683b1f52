# Input functions and helpers of `shifts` (kept apart from its rules, see shifts.smk).


def shifts_alternatives(names):
    """A wildcard regex matching exactly ``names`` (and nothing when it is empty)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def shifts_corruption_inputs(wildcards):
    """The id test set, plus the data layer's download manifest for a named release."""
    inputs = {"id": testset_path(wildcards.dataset, "id")}
    source = SHIFTS["released"].get(wildcards.dataset, "")
    if source and shifts_release_name(source):
        inputs["release"] = f"resources/manifests/corrupted/{source}.json"
    return inputs


def shifts_example_datasets():
    """Datasets whose zoos run the `corruptions` or `natural` group."""
    groups = {"corruptions", "natural"}
    return sorted(
        {
            zoo_dataset(z)
            for z in ZOOS
            if z not in PRED_ZOOS and groups & set(ZOOS[z]["testsets"])
        }
    )


# the example figure of a dataset, extra-<dataset>-examples (docs/outputs.md; it stands for LaF
# Fig. 2, but the shifts layer is no paper's study)
SHIFTS_EXAMPLES = "extra-examples"


def shifts_example_targets():
    if not (SHIFTS["corruptions"] or SHIFTS["natural"]):
        return []
    return [
        f"results/shifts/figures/{output_name(SHIFTS_EXAMPLES, ds)}.png"
        for ds in shifts_example_datasets()
    ]


def shifts_testset_outputs():
    """Every shifted test set of a dataset, corruptions (severity-minor) then natural shifts:
    the sets of rules shifts_testsets and shifts_testsets_sets, in the order their script
    writes them."""
    return [
        testset_path("{dataset}", name)
        for name in TESTSET_GROUPS["corruptions"] + SHIFTS["natural"]
    ]


def shifts_testsets_params():
    """The parameters of the one-job-per-dataset shifts rules."""
    return {
        "dataset": lambda wc: wc.dataset,
        "corruptions": SHIFTS["corruptions"],
        "severities": SHIFTS["severities"],
        "natural": SHIFTS["natural"],
        "seed": SEED,
        "table": SHIFTS["params"],
        "released": lambda wc: SHIFTS["released"].get(wc.dataset, ""),
        "single_level_severity": SHIFTS["released_single_level_severity"],
        "fallback": SHIFTS["released_fallback"],
    }
