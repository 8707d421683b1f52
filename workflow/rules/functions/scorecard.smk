# Input functions and helpers of `scorecard` (kept apart from its rules, see scorecard.smk).

import fnmatch

# Outputs per zoo, none a paper's (docs/outputs.md): tables extra-<zoo>-<t>, figure
# extra-<zoo>-scorecard; captions in report/scorecard/{tables,figures}/<stem>.rst
SCORECARD_TABLES = ("estimation", "ranking", "fewlabel", "best")
SCORECARD_STEMS = {t: f"extra-{t}" for t in SCORECARD_TABLES}
SCORECARD_FIGURE = "extra-scorecard"
# Every configured zoo, scored or why not: table extra-all-zoos
SCORECARD_COVERAGE = "extra-zoos"


def scorecard_outputs_path(zoo):
    """The label-free methods' outputs of the zoo's scorecard job (not a table: the zoo's
    answer reads them instead of recomputing, labelfree.scorecard.artefacts.MethodOutputs).
    """
    return f"results/scorecard/method-outputs/{zoo}.npz"


def scorecard_zoos():
    """Zoos that get a scorecard: config scorecard.zoos, or every zoo when it is empty, less
    those without a labelled test set (scorecard.smk says which)."""
    return list(SCORECARD_ZOOS)


def scorecard_candidates():
    # default: every zoo (those that cannot be scored get their reason in extra-all-zoos)
    return list(SCORECARD["zoos"]) or list(ZOOS)


def scorecard_coverage_rows():
    """Rows of extra-all-zoos.csv: every zoo of the config, scored or why not (config
    scorecard.zoos lists the candidates; a zoo it leaves out says so)."""
    cands = scorecard_candidates()
    skips = {
        **{z: "not listed in config scorecard.zoos" for z in ZOOS if z not in cands},
        **SCORECARD_SKIPS,
    }
    return scorecard_coverage(
        list(ZOOS),
        {z: scorecard_testsets(z) for z in ZOOS},
        {z: len(zoo_models(z)) for z in ZOOS},
        skips,
    )


def shift_kinds(zoo):
    """Kind of shift of each test set: the zoo's group token it came from (`id` = source); in
    a prediction zoo, `id` is the source and every other set `shifted`."""
    if zoo in PRED_ZOOS:
        return {t: ("source" if t == "id" else "shifted") for t in zoo_testsets(zoo)}
    return {
        t: ("source" if g == "id" else g)
        for g, sets in zoo_groups(zoo).items()
        for t in sets
    }


def scorecard_testsets(zoo):
    """The zoo's test sets the scorecard scores (config scorecard.testsets patterns)."""
    pats = SCORECARD["testsets"]
    names = zoo_labelled(zoo)
    return [
        t for t in names if not pats or any(fnmatch.fnmatchcase(t, p) for p in pats)
    ]


def scorecard_features(zoo):
    """The layer Dispersion and FD read on ``zoo`` (config scorecard.features), or None where
    some model lacks it: a model zoo lists it in `features`, a prediction zoo has its files for
    every model (scan: PredictionZoo.features)."""
    layer = SCORECARD["features"]
    if not layer:
        return None
    if zoo in PRED_ZOOS:
        have = all(layer in PRED_ZOOS[zoo].features[m] for m in zoo_models(zoo))
    else:
        have = layer in ZOOS[zoo]["features"]
    return layer if have else None


def scorecard_inputs(wildcards):
    zoo = wildcards.zoo
    sets = scorecard_testsets(zoo)
    groups = [g for g, members in zoo_groups(zoo).items() if set(members) & set(sets)]
    return {
        "infer": [infer_file(zoo, m, g) for m in zoo_models(zoo) for g in groups],
        "testsets": [testset_path(zoo_dataset(zoo), t) for t in sets],
        "meta": [f"{d}/meta.json" for d in zoo_model_dirs(zoo)],
    }


def scorecard_groups(zoo):
    sets = set(scorecard_testsets(zoo))
    return {
        g: [t for t in m if t in sets]
        for g, m in zoo_groups(zoo).items()
        if sets & set(m)
    }


def scorecard_targets():
    out = [f"results/scorecard/tables/{output_name(SCORECARD_COVERAGE, POOLED)}.csv"]
    for z in scorecard_zoos():
        out += [
            f"results/scorecard/tables/{output_name(SCORECARD_STEMS[t], z)}.csv"
            for t in SCORECARD_TABLES
        ]
        out.append(f"results/scorecard/figures/{output_name(SCORECARD_FIGURE, z)}.png")
    return out
