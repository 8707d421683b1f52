# Input functions and helpers of `scorecard` (kept apart from its rules, see scorecard.smk).

SCORECARD_TABLES = ("estimation", "ranking", "fewlabel", "best")


def scorecard_zoos():
    """Zoos that get a scorecard: config scorecard.zoos, or every zoo when it is empty."""
    return list(SCORECARD["zoos"]) or list(ZOOS)


def shift_kinds(zoo):
    """Kind of shift of each test set: the zoo's group token it came from (`id` = source)."""
    return {
        t: ("source" if g == "id" else g)
        for g, sets in zoo_groups(zoo).items()
        for t in sets
    }


def scorecard_targets():
    out = []
    for z in scorecard_zoos():
        out += [f"results/scorecard/tables/{z}-{t}.csv" for t in SCORECARD_TABLES]
        out.append(f"results/scorecard/figures/{z}.png")
    return out
