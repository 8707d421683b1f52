# Input functions and helpers of `laf` (kept apart from its rules, see laf.smk).


def laf_zoos():
    """Analysed stored zoos: laf.zoos (default: every zoo) with a labelled test set."""
    return list(LAF_ZOOS)


def laf_analysed():
    """Names of every analysed zoo: stored zoos, then clone controls."""
    return laf_zoos() + list(LAF_CLONES)


def laf_base(azoo):
    return LAF_CLONES[azoo]["base"] if azoo in LAF_CLONES else azoo


def laf_testsets(azoo):
    """Test sets of an analysed zoo (for a clone control: those of base and source both)."""
    if azoo not in LAF_CLONES:
        return [t for t in zoo_testsets(azoo) if t in zoo_labelled(azoo)]
    src = set(zoo_labelled(LAF_CLONES[azoo]["source"]))
    base = laf_base(azoo)
    return [t for t in zoo_testsets(base) if t in src and t in zoo_labelled(base)]


def laf_zoo_inputs(wildcards):
    azoo = wildcards.azoo
    base = laf_base(azoo)
    ts = laf_testsets(azoo)
    inputs = {
        # one file per model and test-set group: list each once
        "infer": list(dict.fromkeys(p for t in ts for p in infer_paths(base, t))),
        "labels": [testset_path(zoo_dataset(base), t) for t in ts],
    }
    if azoo in LAF_CLONES:
        src = LAF_CLONES[azoo]["source"]
        inputs["source"] = list(
            dict.fromkeys(p for t in ts for p in infer_paths(src, t))
        )
    return inputs


def laf_zoo_params(azoo):
    base = laf_base(azoo)
    ts = laf_testsets(azoo)
    spec = {
        "zoo": azoo,
        "dataset": zoo_dataset(base),
        "models": zoo_models(base),
        "testsets": [
            {
                "name": t,
                "infer": infer_paths(base, t),
                "labels": testset_path(zoo_dataset(base), t),
                "origin": testset_group(base, t),
            }
            for t in ts
        ],
    }
    if azoo in LAF_CLONES:
        c = LAF_CLONES[azoo]
        spec["clone"] = dict(
            c,
            source_infer=[infer_paths(c["source"], t) for t in ts],
            source_models=zoo_models(c["source"]),
        )
    return spec


def laf_targets():
    out = [f"results/laf/tables/{t}.csv" for t, _ in LAF_TABLES]
    out += [f"results/laf/tables/{t}.md" for t, _ in LAF_TABLES]
    out += [f"results/laf/figures/{f}.png" for f, _ in LAF_FIGURES]
    out += [f"results/laf/figures/{f}.pdf" for f, _ in LAF_FIGURES]
    return out
