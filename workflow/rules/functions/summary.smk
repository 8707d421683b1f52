# Input functions and helpers of `summary` (kept apart from its rules, see summary.smk).


def summary_checks():
    """label -> checks table of every enabled study (alphatrim: one per experiment)."""
    out = {}
    if study_enabled("laf"):
        out["laf"] = "results/laf/tables/checks.csv"
    if study_enabled("pace"):
        out["pace"] = "results/pace/tables/pace_checks.csv"
    if study_enabled("syp"):
        out["syp"] = "results/syp/tables/checks.csv"
    if study_enabled("alphatrim"):
        for e, o in AT_OUTPUTS.items():
            if "checks" in o["tables"]:
                out[f"alphatrim/{e}"] = f"results/alphatrim/tables/{e}-checks.csv"
    if study_enabled("metamorphic"):
        out["metamorphic"] = "results/metamorphic/tables/checks.csv"
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
    return {z: f"results/scorecard/tables/{z}-best.csv" for z in scorecard_zoos()}
