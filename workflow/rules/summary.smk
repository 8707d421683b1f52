# Rule `summary`: every enabled study's checks table in one place, with the machine, commit and
# config that produced it (src/labelfree/summary.py). README embeds results/summary.md between
# its summary markers (`python -m labelfree.summary results/summary.md README.md`).


from labelfree.outputs import POOLED, output_name


include: "functions/summary.smk"


rule summary:
    input:
        unpack(lambda w: {**summary_checks(), **summary_best()}),
    output:
        csv=report(
            "results/summary.csv",
            caption="../report/summary.rst",
            category="0 summary",
        ),
        md="results/summary.md",
        methods="results/summary-methods.csv",
    log:
        "logs/summary.log",
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        checks=summary_checks(),
        best=summary_best(),
        config_name=config_file_label(),
        digest=config_digest(),
        repo=workflow.basedir,
    script:
        "../scripts/summary.py"


STUDY_TARGETS["summary"] = lambda: ["results/summary.md"] if summary_checks() else []
