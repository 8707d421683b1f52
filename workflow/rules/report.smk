# Provenance for `snakemake --report report.html`: the validated config and software versions.


include: "functions/report.smk"


rule report_provenance:
    output:
        config=report(
            "results/report/config.yaml",
            caption="../report/spine/config.rst",
            category="run",
        ),
        software=report(
            "results/report/software.csv",
            caption="../report/spine/software.rst",
            category="run",
        ),
    log:
        "logs/report/provenance.log",
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        mem_mb=500,
        runtime=5,
    params:
        # A digest, not the config: params are echoed to the terminal; a change still reruns.
        digest=config_digest(),
    script:
        "../scripts/report_provenance.py"
