# Input functions and helpers of `metamorphic` (kept apart from its rules, see metamorphic.smk).


def metamorphic_dataset_bases(dataset):
    """Bases whose sets some zoo on ``dataset`` runs (union over the dataset's zoos)."""
    bases = []
    for zoo in ZOOS:
        if zoo_dataset(zoo) == dataset:
            for b in metamorphic_plan.zoo_bases(zoo_testsets(zoo), METAMORPHIC_BASES):
                if b not in bases:
                    bases.append(b)
    return bases


def metamorphic_originals_meta(dataset):
    """The dataset's meta.json (index of the originals) when a split base fills at original
    resolution (fill_at: original, docs/metamorphic.md reading R4); else nothing."""
    if METAMORPHIC["fill_at"] != "original":
        return []
    if any(METAMORPHIC_BASES[b]["split"] for b in metamorphic_dataset_bases(dataset)):
        return [f"results/data/{dataset}/meta.json"]
    return []


def metamorphic_base_path(dataset, base):
    return testset_path(dataset, metamorphic_plan.base_name(base))


def metamorphic_dataset_outputs(dataset):
    out = []
    for b in metamorphic_dataset_bases(dataset):
        out.append(metamorphic_base_path(dataset, b))
        out += [
            testset_path(dataset, t)
            for t in metamorphic_plan.base_testsets(b, METAMORPHIC_BASES[b])
        ]
    return out


def metamorphic_zoo_bases(zoo):
    return metamorphic_plan.zoo_bases(zoo_testsets(zoo), METAMORPHIC_BASES)


def metamorphic_zoo_infer(zoo):
    """[test set, model, inference path] for every test set of the study that the zoo runs."""
    out = []
    for b in metamorphic_zoo_bases(zoo):
        for t in metamorphic_plan.base_testsets(b, METAMORPHIC_BASES[b]):
            if t in zoo_testsets(zoo):
                out += [[t, m, infer_path(zoo, t, m)] for m in zoo_models(zoo)]
    return out


def metamorphic_verdicts_params(zoo):
    """What metamorphic_verdicts needs of one zoo (labelfree.metamorphic.run.zoo_verdicts)."""
    zc = METAMORPHIC["zoos"][zoo]
    bases = metamorphic_zoo_bases(zoo)
    return {
        "zoo": zoo,
        "role": zc["role"],
        "sheet": ZOO_SHEETS[zoo][["model", "width", "epochs", "seed"]].to_dict(
            "records"
        ),
        "bases": {b: METAMORPHIC_BASES[b] for b in bases},
        "base_paths": {b: metamorphic_base_path(zoo_dataset(zoo), b) for b in bases},
        "infer": metamorphic_zoo_infer(zoo),
    }


def metamorphic_raw(zoo, what):
    return f"results/metamorphic/raw/{zoo}/{what}"


def metamorphic_gallery_inputs():
    """Sources and c3 follow-ups of the RQ1 base in the unbiased zoo's dataset (gallery)."""
    base = METAMORPHIC["rq1"]["base"]
    unbiased = metamorphic_plan.zoo_of(METAMORPHIC, "unbiased")
    if unbiased is None or base not in metamorphic_zoo_bases(unbiased):
        return {}
    if "c3" not in METAMORPHIC_BASES[base]["coloursets"]:
        return {}
    d = zoo_dataset(unbiased)
    return {
        "base": metamorphic_base_path(d, base),
        "followups": testset_path(
            d, metamorphic_plan.followup_names(base, METAMORPHIC_BASES[base], "c3")[0]
        ),
    }


def metamorphic_targets():
    if not METAMORPHIC["zoos"]:
        return []
    return [
        f"results/metamorphic/tables/{output_name(t, POOLED)}.{e}"
        for t in METAMORPHIC_TABLES
        for e in ("csv", "md")
    ] + [
        f"results/metamorphic/figures/{output_name(f, POOLED)}.{e}"
        for f in METAMORPHIC_FIGURES
        for e in ("png", "pdf")
    ]
