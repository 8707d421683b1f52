# Input functions and helpers of `pace` (kept apart from its rules, see pace.smk).


def pace_sheet():
    return ZOO_SHEETS[PACE_ZOO]


def pace_models(mutants):
    """Model ids of the pace zoo with (True) or without (False) a label_map."""
    sheet = pace_sheet()
    has_map = sheet["label_map"].astype(str).str.len() > 0
    return sheet.loc[has_map == mutants, "model"].tolist()


def pace_attack_model():
    name = PACE["attack_model"] or (pace_models(False) or [""])[0]
    if name not in zoo_models(PACE_ZOO):
        raise WorkflowError(
            f"Invalid configuration: pace.attack_model = {name!r} is not a model of zoo "
            f"{PACE_ZOO!r}"
        )
    return name


def pace_subject_specs():
    """Classification subjects (PACE paper, Section 4): every model on the pool; non-mutant models
    on the mutated pools; the attack model on the generated pools."""
    sheet = pace_sheet().set_index("model")
    mutants = set(pace_models(True))
    tsets = zoo_testsets(PACE_ZOO)
    for need in [
        PACE_POOL,
        *TESTSET_GROUPS["pace_mutated"],
        *TESTSET_GROUPS["pace_generated"],
    ]:
        if need not in tsets:
            raise WorkflowError(
                f"Invalid configuration: zoo {PACE_ZOO!r} must list test set {need!r} "
                "(groups pace_pool, pace_mutated, pace_generated) in its `testsets`"
            )
    for bad in PACE["mutated_models"]:
        if bad not in sheet.index:
            raise WorkflowError(
                f"Invalid configuration: pace.mutated_models lists {bad!r}, not a model of "
                f"zoo {PACE_ZOO!r}"
            )
    mutated = PACE["mutated_models"] or pace_models(False)
    subjects = []

    def add(model, testset, itype):
        subjects.append(
            {
                "name": f"{model}@{testset}",
                "model": model,
                "testset": testset,
                "input_type": itype,
                "mutant": model in mutants,
                "preprocessing": str(sheet.loc[model, "preprocessing"]),
            }
        )

    for m in zoo_models(PACE_ZOO):
        add(m, PACE_POOL, "original")
    for t in TESTSET_GROUPS["pace_mutated"]:
        for m in mutated:
            add(m, t, "mutated")
    for t in TESTSET_GROUPS["pace_generated"]:
        add(pace_attack_model(), t, "generated")
    return subjects


def pace_table(stem, ext="csv", scope=None):
    """results/pace/tables/<name>.<ext>, <name> from the stem and the pace zoo (docs/outputs.md)."""
    return f"results/pace/tables/{output_name(stem, scope or PACE_ZOO)}.{ext}"


def pace_figure(stem, ext="png"):
    """results/pace/figures/<name>.<ext> (docs/outputs.md)."""
    return f"results/pace/figures/{output_name(stem, PACE_ZOO)}.{ext}"


def pace_cov_models():
    """Models whose pool subject gets CSS-COV (Table 12): pace.css_cov.models, else all."""
    models = PACE_COV["models"] or zoo_models(PACE_ZOO)
    bad = [m for m in models if m not in zoo_models(PACE_ZOO)]
    if bad:
        raise WorkflowError(
            f"Invalid configuration: pace.css_cov.models lists {bad}, not models of zoo "
            f"{PACE_ZOO!r}"
        )
    return models


def pace_report_outputs():
    out = {}
    for key, stem in PACE_TABLES.items():
        out[key] = report(
            pace_table(stem),
            caption=f"../report/pace/tables/{stem}.rst",
            category="pace",
            subcategory="tables",
        )
        out[f"{key}_md"] = pace_table(stem, "md")
    for key, stem in PACE_FIGURES.items():
        out[key] = report(
            pace_figure(stem),
            caption=f"../report/pace/figures/{stem}.rst",
            category="pace",
            subcategory="figures",
        )
        out[f"{key}_pdf"] = pace_figure(stem, "pdf")
    return out


def pace_cross_inputs():
    """This run's cross-dataset rows first, then those of every run in cross_dataset_runs."""
    others = [
        os.path.join(os.path.abspath(d), "results/pace/raw/cross_rows.csv")
        for d in PACE["cross_dataset_runs"]
    ]
    return ["results/pace/raw/cross_rows.csv", *others]


def pace_targets():
    if not PACE_ON:
        return []
    return [
        *(pace_table(s) for s in PACE_TABLES.values()),
        pace_table(PACE_CROSS_STEM, scope=POOLED),
        *(pace_figure(s) for s in PACE_FIGURES.values()),
        pace_table(PACE_SUBJECTS_STEM),
        *([pace_table(PACE_CSS_COV_STEM)] if PACE_COV_ON else []),
    ]
