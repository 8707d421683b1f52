# labelfree: five studies of label-free DNN evaluation as one workflow (README.md).
# The Snakefile is a table of contents: config, validation, rule files, the final targets.

from snakemake.utils import min_version

min_version("9.0")


report: "workflow/report/workflow.rst"


# The default run unless the user names config files (--configfile replaces, not merges).
if not workflow.config_settings.configfiles:

    configfile: f"{workflow.basedir}/config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/shifts.smk"
include: "workflow/rules/zoo.smk"
# Studies may register test-set groups (TESTSET_GROUPS) that inference runs, so they come
# before inference.smk, whose outputs are expanded from those groups at parse time.
include: "workflow/rules/laf.smk"
include: "workflow/rules/pace.smk"
include: "workflow/rules/syp.smk"
include: "workflow/rules/alphatrim.smk"
include: "workflow/rules/metamorphic.smk"
include: "workflow/rules/inference.smk"
include: "workflow/rules/answer.smk"
include: "workflow/rules/scorecard.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/summary.smk"


rule all:
    default_target: True
    input:
        all_targets(),
