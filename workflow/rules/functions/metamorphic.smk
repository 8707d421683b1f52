# Input functions and helpers of `metamorphic` (kept apart from its rules, see metamorphic.smk).


def mm_dataset_bases(dataset):
    """Bases whose sets some zoo on ``dataset`` runs (union over the dataset's zoos)."""
    bases = []
    for zoo in ZOOS:
        if zoo_dataset(zoo) == dataset:
            for b in mm_layout.zoo_bases(zoo_testsets(zoo), MM_BASES):
                if b not in bases:
                    bases.append(b)
    return bases


def mm_originals_meta(dataset):
    """The dataset's meta.json (index of the originals) when a split base fills at original
    resolution (fill_at: original, docs/metamorphic.md); else nothing."""
    if MM["fill_at"] != "original":
        return []
    if any(MM_BASES[b]["split"] for b in mm_dataset_bases(dataset)):
        return [f"results/data/{dataset}/meta.json"]
    return []


def mm_base_path(dataset, base):
    return testset_path(dataset, mm_layout.base_name(base))


def mm_dataset_outputs(dataset):
    out = []
    for b in mm_dataset_bases(dataset):
        out.append(mm_base_path(dataset, b))
        out += [
            testset_path(dataset, t) for t in mm_layout.base_testsets(b, MM_BASES[b])
        ]
    return out


def mm_zoo_bases(zoo):
    return mm_layout.zoo_bases(zoo_testsets(zoo), MM_BASES)


def mm_zoo_infer(zoo):
    """[test set, model, inference path] for every mm_* test set the zoo runs."""
    out = []
    for b in mm_zoo_bases(zoo):
        for t in mm_layout.base_testsets(b, MM_BASES[b]):
            if t in zoo_testsets(zoo):
                out += [[t, m, infer_path(zoo, t, m)] for m in zoo_models(zoo)]
    return out


def mm_raw(zoo, what):
    return f"results/metamorphic/raw/{zoo}/{what}"


def mm_gallery_inputs():
    """Sources and c3 follow-ups of the RQ1 base in the unbiased zoo's dataset (gallery)."""
    base = MM["rq1"]["base"]
    if MM_UNBIASED is None or base not in mm_zoo_bases(MM_UNBIASED):
        return {}
    if "c3" not in MM_BASES[base]["coloursets"]:
        return {}
    d = zoo_dataset(MM_UNBIASED)
    return {
        "base": mm_base_path(d, base),
        "followups": testset_path(
            d, mm_layout.followup_names(base, MM_BASES[base], "c3")[0]
        ),
    }


def metamorphic_targets():
    if not MM["zoos"]:
        return []
    return [
        f"results/metamorphic/tables/{output_name(t, POOLED)}.{e}"
        for t in MM_TABLES
        for e in ("csv", "md")
    ] + [
        f"results/metamorphic/figures/{output_name(f, POOLED)}.{e}"
        for f in MM_FIGURES
        for e in ("png", "pdf")
    ]
