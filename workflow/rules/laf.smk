# Rules of `laf`: LaF labeling-free model ranking (docs/laf.md).
# Independent analysis jobs per analysed zoo (rule laf_part: every method on a part of the zoo's
# test sets, one part per test-set group or per test set, config laf.jobs), then one job that
# merges each zoo's parts into its raw files (the same files as one job analysing every set)
# and writes every table and figure of the study (rule laf_tables; one process, not one per
# zoo plus one).
# What is analysed (labelfree.laf.plan): config laf.zoos (default: all zoos) with labels and two
# or more models, plus the clone controls of laf.clones, built at analysis time from stored
# predictions (docs/laf.md, reading R13).


from labelfree.laf import plan as laf_plan
from labelfree.laf.plan import partition


include: "functions/laf.smk"


LAF = config["laf"]

try:
    LAF_PLAN = laf_plan.plan(
        LAF,
        list(ZOOS),
        {z: zoo_labelled(z) for z in ZOOS},
        {z: len(zoo_models(z)) for z in ZOOS},
    )
except ConfigError as _err:
    raise WorkflowError(f"Invalid configuration: {_err}") from None
LAF_ZOOS, LAF_CLONES = LAF_PLAN.zoos, LAF_PLAN.clones
if study_enabled("laf"):
    if LAF_PLAN.skip:
        skip_study("laf", LAF_PLAN.skip)
    for _note in LAF_PLAN.notes():
        print(_note, file=sys.stderr)

LAF_RAW = list(laf_plan.RAW_FILES)
# (stem, report subcategory) of every final table and figure; names follow docs/outputs.md
# (laf_plan.name: <id>-all[-<detail>]); captions in report/laf/{tables,figures}/<stem>.rst
LAF_TABLES = list(laf_plan.TABLES.items())
LAF_FIGURES = list(laf_plan.FIGURES.items())


STUDY_TARGETS["laf"] = laf_targets


rule laf_part:
    input:
        unpack(laf_part_inputs),
    output:
        "results/laf/parts/{azoo}/{part}.json.gz",
    log:
        "logs/laf/{azoo}/{part}.log",
    benchmark:
        "benchmarks/laf/{azoo}/{part}.tsv"
    wildcard_constraints:
        azoo=alternatives(laf_analysed()),
        part="[^/]+",
    conda:
        "../../envs/labelfree.yaml"
    threads: LAF["threads"]
    resources:
        **HEAVY,
        mem_mb=LAF["mem_mb"],
        runtime=LAF["runtime"],
    params:
        part=lambda w: laf_part_params(w.azoo, w.part),
        laf=LAF,
        seed=SEED,
    script:
        "../scripts/laf_part.py"


rule laf_tables:
    input:
        parts=[p for z in laf_analysed() for p in laf_part_files(z)],
    output:
        **{
            f"t_{t}".replace("-", "_"): report(
                f"results/laf/tables/{laf_plan.name(t)}.csv",
                caption=f"../report/laf/tables/{t}.rst",
                category="laf",
                subcategory=sub,
            )
            for t, sub in LAF_TABLES
        },
        **{
            f"md_{t}".replace("-", "_"): f"results/laf/tables/{laf_plan.name(t)}.md"
            for t, _ in LAF_TABLES
        },
        **{
            f"f_{f}".replace("-", "_"): report(
                f"results/laf/figures/{laf_plan.name(f)}.png",
                caption=f"../report/laf/figures/{f}.rst",
                category="laf",
                subcategory=sub,
            )
            for f, sub in LAF_FIGURES
        },
        **{
            f"pdf_{f}".replace("-", "_"): f"results/laf/figures/{laf_plan.name(f)}.pdf"
            for f, _ in LAF_FIGURES
        },
        raw=expand("results/laf/raw/{azoo}/{f}", azoo=laf_analysed(), f=LAF_RAW),
    log:
        "logs/laf/tables.log",
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        **LIGHT_RESOURCES,
    params:
        zoos=laf_analysed(),
        # each zoo's part files and its test sets in the order of one job analysing them all
        merges={
            z: {"parts": laf_part_files(z), "order": laf_testsets(z)}
            for z in laf_analysed()
        },
        # results/laf/{raw,tables,figures}, derived from the declared files
        raw_dir=lambda w, output: os.path.dirname(os.path.dirname(output.raw[0])),
        tables_dir=lambda w, output: os.path.dirname(output[0]),
        figures_dir=lambda w, output: os.path.dirname(output.f_fig5),
        laf=LAF,
    script:
        "../scripts/laf_tables.py"
