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
        labelled = set(zoo_labelled(azoo))  # once, not once per test set (parse time)
        return [t for t in zoo_testsets(azoo) if t in labelled]
    src = set(zoo_labelled(LAF_CLONES[azoo]["source"]))
    base = laf_base(azoo)
    labelled = set(zoo_labelled(base))
    return [t for t in zoo_testsets(base) if t in src and t in labelled]


def laf_origin(base, testset):
    """The test-set group a set was made in (labelfree.laf.run.classify_testset). A
    prediction zoo's one group says nothing about its sets: their names do (`natural-*`).
    """
    return "" if base in PRED_ZOOS else testset_group(base, testset)


def laf_parts(azoo):
    """Independent analysis jobs of an analysed zoo: part name -> its test sets, one part per
    test-set group or per test set (laf.jobs; labelfree.laf.plan.partition)."""
    base = laf_base(azoo)
    ts = laf_testsets(azoo)
    return partition(ts, [testset_group(base, t) for t in ts], LAF["jobs"])


def laf_part_files(azoo):
    return [f"results/laf/parts/{azoo}/{p}.json.gz" for p in laf_parts(azoo)]


def laf_part_inputs(wildcards):
    azoo = wildcards.azoo
    base = laf_base(azoo)
    ts = laf_parts(azoo)[wildcards.part]
    inputs = {
        # one file per model and test-set group: list each once
        "infer": list(dict.fromkeys(p for t in ts for p in infer_paths(base, t))),
        "labels": [testset_path(zoo_dataset(base), t) for t in ts],
    }
    if azoo in LAF_CLONES:
        src = LAF_CLONES[azoo]["source"]
        # the source's `id` files too: every part picks the cloned model on them
        ids = ["id"] if "id" in laf_testsets(azoo) else []
        inputs["source"] = list(
            dict.fromkeys(p for t in ids + ts for p in infer_paths(src, t))
        )
    return inputs


def laf_part_params(azoo, part):
    base = laf_base(azoo)
    ts = laf_parts(azoo)[part]
    job = {
        "zoo": azoo,
        "dataset": zoo_dataset(base),
        "models": zoo_models(base),
        "testsets": [
            {
                "name": t,
                "infer": infer_paths(base, t),
                "labels": testset_path(zoo_dataset(base), t),
                "origin": laf_origin(base, t),
            }
            for t in ts
        ],
    }
    if azoo in LAF_CLONES:
        c = LAF_CLONES[azoo]
        job["clone"] = dict(
            c,
            source_infer=[infer_paths(c["source"], t) for t in ts],
            source_models=zoo_models(c["source"]),
        )
        if "id" in laf_testsets(azoo):
            job["clone"]["source_id"] = {
                "infer": infer_paths(c["source"], "id"),
                "labels": testset_path(zoo_dataset(base), "id"),
            }
    return job


def laf_targets():
    out = [
        f"results/laf/tables/{laf_plan.name(t)}.{e}"
        for t, _ in LAF_TABLES
        for e in ("csv", "md")
    ]
    out += [
        f"results/laf/figures/{laf_plan.name(f)}.{e}"
        for f, _ in LAF_FIGURES
        for e in ("png", "pdf")
    ]
    return out
