# Rules of `pace`: PACE accuracy estimation (../shared/specs/pace.md) on the small-scale digits
# subjects of spec section 7. Jobs: the study's input pools as test sets (pace_pool,
# pace_mutated_inputs, pace_generated_inputs; inference runs the pace zoo on them), one job
# gathering every subject (pace_subjects, also trains the rotation regressor), one job per
# experiment (pace_experiment: main, features, alpha, dims, reducers, variants), one job
# writing every table and figure (pace_report) and, for Table 12, the training split as test
# set `pace_train` (pace_train_set; inference writes its LHL activations) and one job computing
# LSA and CSS-COV (pace_css_cov).


from labelfree.outputs import POOLED, output_name


include: "functions/pace.smk"


PACE = config["pace"]
PACE_ON = study_enabled("pace")
PACE_ZOO = PACE["zoo"]
PACE_POOL = "id" if PACE["pool_shifts"] == 0 else "pace_shifted"
# main: Tables 2-8; features: Fig. 4; alpha: Fig. 5; dims: Fig. 6; reducers: Fig. 7; variants: Fig. 8
PACE_EXPERIMENTS = ["main", "features", "alpha", "dims", "reducers", "variants"]

# Test-set groups a zoo may list (the pace zoo lists all three).
TESTSET_GROUPS["pace_pool"] = [] if PACE_POOL == "id" else [PACE_POOL]
TESTSET_GROUPS["pace_mutated"] = ["pace_patch", "pace_light"]
PACE_CW = dict(PACE["attack"].get("cw") or {})
PACE_CW_ON = bool(PACE_CW.pop("enabled", False))
# the attack parameters name C&W only when it is on: runs without it keep their old params
PACE_ATTACK = {k: v for k, v in PACE["attack"].items() if k != "cw"} | (
    {"cw": PACE_CW} if PACE_CW_ON else {}
)
TESTSET_GROUPS["pace_generated"] = ["pace_fgsm", "pace_bim"] + (
    ["pace_cw"] if PACE_CW_ON else []
)

# Table 12 (CSS-COV): LSA needs LHL activations on the training split, which inference writes
# when the zoo lists the group `pace_train`; without it the table is skipped (one line).
PACE_COV = PACE["css_cov"]
PACE_COV_ON = (
    PACE_ON
    and PACE_COV["enabled"]
    and "pace_train" in ZOOS.get(PACE_ZOO, {}).get("testsets", [])
)
if PACE_ON and PACE_COV["enabled"] and not PACE_COV_ON:
    print(
        f"labelfree: pace Table 12 (CSS-COV) skipped: zoo {PACE_ZOO!r} does not list the "
        "test-set group `pace_train` (the training split, for LSA); add it to its testsets "
        "or set pace.css_cov.enabled: false",
        file=sys.stderr,
    )
TESTSET_GROUPS["pace_train"] = ["pace_train"] if PACE_COV_ON else []

if PACE_ON and PACE_ZOO not in ZOO_SHEETS:
    raise WorkflowError(
        f"Invalid configuration: pace.zoo = {PACE_ZOO!r} is not a configured zoo "
        f"({sorted(ZOOS)}); add it under `zoos:` or set pace.enabled: false"
    )


# output key -> stem (docs/outputs.md); the files are pace_table / pace_figure (stem):
# <id>-<pace zoo>[-<detail>]; captions in report/pace/{tables,figures}/<stem>.rst
PACE_TABLES = {
    "table2_3": "table2-3",
    "best": "table2-3-best_counts",
    "table4": "table4",
    "table5": "table5",
    "table6": "table6",
    "table7": "table7",
    "table8": "table8-time",
    "table9": "table9",
    "table11": "table11",
    "fig4_table": "fig4",
    "fig5_table": "fig5",
    "fig6_table": "fig6",
    "fig7_table": "fig7",
    "fig8_table": "fig8",
    "conclusions": "extra-conclusions",
    "checks": "extra-checks",
}
PACE_FIGURES = {
    "fig_main": "table2-3",
    "fig4": "fig4",
    "fig5": "fig5",
    "fig6": "fig6",
    "fig7": "fig7",
    "fig8": "fig8",
}
# Table 1 (the subjects) and the cross-dataset table (Tables 2-5 over every run's zoo: scope all)
PACE_SUBJECTS_STEM = "table1"
PACE_CROSS_STEM = "table2-5-cross_dataset"
PACE_CSS_COV_STEM = "table12"


STUDY_TARGETS["pace"] = pace_targets


if PACE_ON:
    PACE_DATASET = zoo_dataset(PACE_ZOO)

    if PACE_POOL != "id":

        rule pace_pool:
            input:
                pool=testset_path(PACE_DATASET, "id"),
            output:
                shifted=testset_path(PACE_DATASET, PACE_POOL),
            log:
                "logs/pace/pool.log",
            conda:
                "../../envs/labelfree.yaml"
            threads: 1
            resources:
                mem_mb=PACE["mem_mb"],
                runtime=PACE["runtime"],
            params:
                kind="shifted",
                seed=SEED,
            script:
                "../scripts/pace_testsets.py"

    rule pace_mutated_inputs:
        input:
            pool=testset_path(PACE_DATASET, PACE_POOL),
        output:
            patch=testset_path(PACE_DATASET, "pace_patch"),
            light=testset_path(PACE_DATASET, "pace_light"),
        log:
            "logs/pace/mutated_inputs.log",
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            mem_mb=PACE["mem_mb"],
            runtime=PACE["runtime"],
        params:
            kind="mutated",
            seed=SEED,
            mutation=PACE["mutation"],
        script:
            "../scripts/pace_testsets.py"

    rule pace_generated_inputs:
        input:
            pool=testset_path(PACE_DATASET, PACE_POOL),
            weights=f"{model_dir(PACE_ZOO, pace_attack_model())}/weights.safetensors",
            meta=f"{model_dir(PACE_ZOO, pace_attack_model())}/meta.json",
        output:
            **({"cw": testset_path(PACE_DATASET, "pace_cw")} if PACE_CW_ON else {}),
            fgsm=testset_path(PACE_DATASET, "pace_fgsm"),
            bim=testset_path(PACE_DATASET, "pace_bim"),
        log:
            "logs/pace/generated_inputs.log",
        benchmark:
            "benchmarks/pace/generated_inputs.tsv"
        conda:
            "../../envs/labelfree.yaml"
        threads: PACE["threads"]
        resources:
            mem_mb=PACE["mem_mb"],
            runtime=PACE["runtime"],
        params:
            kind="generated",
            seed=SEED,
            model_dir=lambda w, input: os.path.dirname(input.meta),
            preprocessing=str(
                pace_sheet()
                .set_index("model")
                .loc[pace_attack_model(), "preprocessing"]
            ),
            attack=PACE_ATTACK,
        script:
            "../scripts/pace_testsets.py"

    rule pace_subjects:
        input:
            infer=[
                infer_path(PACE_ZOO, s["testset"], s["model"])
                for s in pace_subject_specs()
            ],
            testsets=[
                testset_path(PACE_DATASET, s["testset"]) for s in pace_subject_specs()
            ],
            train=dataset_split(PACE_DATASET, ZOOS[PACE_ZOO]["train_split"]),
            pool=testset_path(PACE_DATASET, PACE_POOL),
        output:
            npz="results/pace/raw/subjects.npz",
            csv=report(
                pace_table(PACE_SUBJECTS_STEM),
                caption=f"../report/pace/tables/{PACE_SUBJECTS_STEM}.rst",
                category="pace",
                subcategory="tables",
            ),
            md=pace_table(PACE_SUBJECTS_STEM, "md"),
        log:
            "logs/pace/subjects.log",
        benchmark:
            "benchmarks/pace/subjects.tsv"
        conda:
            "../../envs/labelfree.yaml"
        threads: PACE["threads"]
        resources:
            mem_mb=PACE["mem_mb"],
            runtime=PACE["runtime"],
        params:
            subjects=pace_subject_specs(),
            regression=PACE["regression"],
            mutation=PACE["mutation"],
            seed=SEED,
        script:
            "../scripts/pace_subjects.py"

    if PACE_COV_ON:

        rule pace_train_set:
            input:
                split=dataset_split(PACE_DATASET, ZOOS[PACE_ZOO]["train_split"]),
            output:
                train=testset_path(PACE_DATASET, "pace_train"),
            log:
                "logs/pace/train_set.log",
            conda:
                "../../envs/labelfree.yaml"
            threads: 1
            resources:
                mem_mb=PACE["mem_mb"],
                runtime=PACE["runtime"],
            params:
                seed=SEED,
                subsample=PACE_COV["train_subsample"],
            script:
                "../scripts/pace_train_set.py"

        rule pace_css_cov:
            input:
                subjects="results/pace/raw/subjects.npz",
                main="results/pace/raw/main.csv",
                train=[infer_path(PACE_ZOO, "pace_train", m) for m in pace_cov_models()],
            output:
                rows="results/pace/raw/css_cov-{zoo}.csv",
                strata="results/pace/raw/css_cov_strata-{zoo}.csv",
                csv=report(
                    "results/pace/tables/table12-{zoo}.csv",  # PACE_CSS_COV_STEM
                    caption=f"../report/pace/tables/{PACE_CSS_COV_STEM}.rst",
                    category="pace",
                    subcategory="tables",
                ),
                md="results/pace/tables/table12-{zoo}.md",
            log:
                "logs/pace/css_cov_{zoo}.log",
            benchmark:
                "benchmarks/pace/css_cov_{zoo}.tsv"
            wildcard_constraints:
                zoo=PACE_ZOO,
            conda:
                "../../envs/labelfree.yaml"
            threads: PACE["threads"]
            resources:
                mem_mb=PACE["mem_mb"],
                runtime=PACE["runtime"],
            params:
                subjects=[f"{m}@{PACE_POOL}" for m in pace_cov_models()],
                var_threshold=PACE_COV["var_threshold"],
                cfg={k: PACE[k] for k in ("budgets", "reps", "ces", "css")},
                seed=SEED,
            script:
                "../scripts/pace_css_cov.py"

    rule pace_experiment:
        input:
            subjects="results/pace/raw/subjects.npz",
        output:
            rows="results/pace/raw/{experiment}.csv",
            timings="results/pace/raw/{experiment}_timings.json",
        log:
            "logs/pace/experiment_{experiment}.log",
        benchmark:
            "benchmarks/pace/experiment_{experiment}.tsv"
        wildcard_constraints:
            experiment="main|features|alpha|dims|reducers|variants",
        conda:
            "../../envs/labelfree.yaml"
        threads: PACE["threads"]
        resources:
            mem_mb=PACE["mem_mb"],
            runtime=PACE["runtime"],
        params:
            # without the keys added since (report-only, Table 12's, C&W off): old runs keep
            # their params
            cfg={
                k: PACE_ATTACK if k == "attack" else v
                for k, v in PACE.items()
                if k not in ("cross_dataset_runs", "css_cov")
            },
            seed=SEED,
        script:
            "../scripts/pace_experiment.py"

    rule pace_report:
        input:
            rows=expand("results/pace/raw/{e}.csv", e=PACE_EXPERIMENTS),
            timings=expand("results/pace/raw/{e}_timings.json", e=PACE_EXPERIMENTS),
            meta=pace_table(PACE_SUBJECTS_STEM),
        output:
            **pace_report_outputs(),
            errors="results/pace/raw/errors.csv",
            cross_rows="results/pace/raw/cross_rows.csv",
        log:
            "logs/pace/report.log",
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            mem_mb=PACE["mem_mb"],
            runtime=PACE["runtime"],
        params:
            zoo=PACE_ZOO,
            dataset=PACE_DATASET,
        script:
            "../scripts/pace_report.py"

    rule pace_cross_dataset:
        input:
            rows=pace_cross_inputs(),
        output:
            csv=report(
                pace_table(PACE_CROSS_STEM, scope=POOLED),
                caption=f"../report/pace/tables/{PACE_CROSS_STEM}.rst",
                category="pace",
                subcategory="tables",
            ),
            md=pace_table(PACE_CROSS_STEM, "md", scope=POOLED),
        log:
            "logs/pace/cross_dataset.log",
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            mem_mb=PACE["mem_mb"],
            runtime=PACE["runtime"],
        script:
            "../scripts/pace_cross_dataset.py"
