# Rules of `laf`: LaF labeling-free model ranking (../shared/specs/laf.md).
# Independent analysis jobs per analysed zoo (rule laf_part: every method on a part of the zoo's
# test sets, one part per test-set group or per test set, config laf.jobs), one merge per zoo
# into its raw files (rule laf_zoo; the same files as one job analysing every set, issue 15),
# then one job for every table and figure of the study (rule laf_tables).
# Analysed zoos: config laf.zoos (default: all zoos) plus the clone controls of laf.clones, which
# are built at analysis time from stored predictions (spec section 8).


from labelfree.laf import layout as laf_layout
from labelfree.laf.layout import partition


include: "functions/laf.smk"


LAF = config["laf"]


LAF_CLONES = {c["name"]: c for c in LAF["clones"]}

for _c in LAF_CLONES.values():
    for _key in ("base", "source"):
        if _c[_key] not in ZOOS:
            raise WorkflowError(
                f"Invalid configuration: laf.clones[{_c['name']}].{_key} = {_c[_key]!r} "
                f"is not a configured zoo ({sorted(ZOOS)})"
            )
    if _c["name"] in ZOOS:
        raise WorkflowError(
            f"Invalid configuration: laf.clones name {_c['name']!r} is already a zoo"
        )
for _z in LAF["zoos"]:
    if _z not in ZOOS:
        raise WorkflowError(
            f"Invalid configuration: laf.zoos lists {_z!r}, not a configured zoo ({sorted(ZOOS)})"
        )

# LaF's tables score rankings of two or more models against labels: other zoos (one model, or
# a prediction zoo without labels/) are left out, saying so; with none left the study skips.
LAF_ZOOS, _laf_skips = labelled_zoos(
    list(LAF["zoos"]) or list(ZOOS),
    {z: zoo_labelled(z) for z in ZOOS},
    {z: len(zoo_models(z)) for z in ZOOS},
    "laf",
)
for _c in list(LAF_CLONES.values()):
    _bad = [z for z in (_c["base"], _c["source"]) if z in _laf_skips]
    if _bad:
        _laf_skips[_c["name"]] = f"clone control {_c['name']!r} is built from {_bad}"
        del LAF_CLONES[_c["name"]]
if study_enabled("laf"):
    if not LAF_ZOOS and not LAF_CLONES:
        skip_study("laf", "; ".join(_laf_skips.values()) or "no zoo to analyse")
    for _z, _why in _laf_skips.items() if LAF_ZOOS else ():
        print(f"labelfree: laf skips {_z}: {_why}", file=sys.stderr)


LAF_RAW = ["metrics.csv.gz", "testsets.csv", "models.csv", "rq4.csv", "ces_guides.npz"]

# (stem, report subcategory) of every final table and figure, from the library; names follow
# docs/outputs.md (laf_name: <id>-all[-<detail>]); captions in report/laf/{tables,figures}/<stem>.rst
LAF_TABLES = list(laf_layout.TABLES.items())
LAF_FIGURES = list(laf_layout.FIGURES.items())


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
        mem_mb=LAF["mem_mb"],
        runtime=LAF["runtime"],
    params:
        spec=lambda w: laf_part_params(w.azoo, w.part),
        laf=LAF,
        seed=SEED,
    script:
        "../scripts/laf_part.py"


rule laf_zoo:
    input:
        parts=laf_part_files,
    output:
        expand("results/laf/raw/{{azoo}}/{f}", f=LAF_RAW),
    log:
        "logs/laf/{azoo}.log",
    wildcard_constraints:
        azoo=alternatives(laf_analysed()),
    localrule: True
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        mem_mb=LAF["mem_mb"],
        runtime=30,
    params:
        order=lambda w: laf_testsets(w.azoo),
        out_dir=lambda w, output: os.path.dirname(output[0]),
    script:
        "../scripts/laf_zoo.py"


rule laf_tables:
    input:
        raw=expand("results/laf/raw/{azoo}/{f}", azoo=laf_analysed(), f=LAF_RAW),
    output:
        **{
            f"t_{t}".replace("-", "_"): report(
                f"results/laf/tables/{laf_layout.name(t)}.csv",
                caption=f"../report/laf/tables/{t}.rst",
                category="laf",
                subcategory=sub,
            )
            for t, sub in LAF_TABLES
        },
        **{
            f"md_{t}".replace("-", "_"): f"results/laf/tables/{laf_layout.name(t)}.md"
            for t, _ in LAF_TABLES
        },
        **{
            f"f_{f}".replace("-", "_"): report(
                f"results/laf/figures/{laf_layout.name(f)}.png",
                caption=f"../report/laf/figures/{f}.rst",
                category="laf",
                subcategory=sub,
            )
            for f, sub in LAF_FIGURES
        },
        **{
            f"pdf_{f}".replace(
                "-", "_"
            ): f"results/laf/figures/{laf_layout.name(f)}.pdf"
            for f, _ in LAF_FIGURES
        },
    log:
        "logs/laf/tables.log",
    conda:
        "../../envs/labelfree.yaml"
    threads: 1
    resources:
        mem_mb=LAF["mem_mb"],
        runtime=30,
    params:
        zoos=laf_analysed(),
        # results/laf/{raw,tables,figures}, derived from the declared files
        raw_dir=lambda w, input: os.path.dirname(os.path.dirname(input.raw[0])),
        tables_dir=lambda w, output: os.path.dirname(output[0]),
        figures_dir=lambda w, output: os.path.dirname(output.f_fig5),
        laf=LAF,
    script:
        "../scripts/laf_tables.py"
