# Input functions and helpers of `summary` (kept apart from its rules, see summary.smk).


def summary_checks():
    """label -> checks table of every enabled study (alphatrim: one per experiment), named
    extra-<scope>-checks (docs/outputs.md)."""
    out = {}
    if study_enabled("laf"):
        out["laf"] = f"results/laf/tables/{output_name('extra-checks', POOLED)}.csv"
    if study_enabled("pace"):
        out["pace"] = pace_table("extra-checks")
    if study_enabled("syp"):
        out["syp"] = SYP.tables["extra-checks"]
    if study_enabled("alphatrim"):
        for e, o in AT_OUTPUTS.items():
            if "extra-checks" in o["tables"]:
                out[f"alphatrim/{e}"] = at_output_file(
                    e, "extra-checks", "tables", "csv"
                )
    if study_enabled("metamorphic"):
        out["metamorphic"] = (
            f"results/metamorphic/tables/{output_name('extra-checks', POOLED)}.csv"
        )
    return out


def config_file_label():
    files = workflow.config_settings.configfiles
    return (
        os.path.relpath(files[-1], workflow.basedir) if files else "config/config.yaml"
    )


def summary_best():
    """zoo -> the scorecard's which-method-when table, for every scored zoo."""
    if not SCORECARD["enabled"]:
        return {}
    return {
        z: f"results/scorecard/tables/{output_name('extra-best', z)}.csv"
        for z in scorecard_zoos()
    }
