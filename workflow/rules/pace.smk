# Rules of `pace`: PACE accuracy estimation (Chen et al., TOSEM 2020; docs/pace.md) on small-scale
# digits subjects. Jobs: the shifted pool when not `id` (pace_pool); the study's input pools and,
# for Table 12, the training split `pace_train` as test sets in one job (pace_testsets: mutated,
# then generated on the trained pace zoo, then the split; inference runs the pace zoo on all of
# them); the subjects (also the rotation regressor) and the six experiments in one job
# (pace_experiments, `pace.jobs: study`) or one subjects job and one job per experiment
# (pace_subjects, pace_experiment); and one job writing every table and figure, the
# cross-dataset table and Table 12 (LSA and CSS-COV) in turn (pace_report). Each step of a job
# keeps its own log.
# What runs for the config (subjects, pools, outputs, checks) is labelfree.pace.plan's.


from labelfree.pace import plan as pace_plan

try:
    PACE = pace_plan.plan(config, study_enabled("pace"), ZOO_SHEETS, TESTSET_GROUPS)
except ConfigError as _err:
    raise WorkflowError(f"Invalid configuration: {_err}") from None
# Registered even when the study is off, so zoo sheets naming the groups stay valid.
TESTSET_GROUPS.update(PACE.testset_groups)
STUDY_TARGETS["pace"] = PACE.targets
pace_table = PACE.table  # the other rule files name the study's tables with it


if PACE.enabled:

    if PACE.pool != "id":

        rule pace_pool:
            input:
                pool=testset_path(PACE.dataset, "id"),
            output:
                shifted=testset_path(PACE.dataset, PACE.pool),
            log:
                "logs/pace/pool.log",
            conda:
                "../../envs/labelfree.yaml"
            threads: 1
            resources:
                **HEAVY,
                mem_mb=PACE.cfg["mem_mb"],
                runtime=PACE.cfg["runtime"],
            params:
                kind="shifted",
                seed=SEED,
            script:
                "../scripts/pace_testsets.py"

    rule pace_testsets:
        input:
            **(
                {"split": dataset_split(PACE.dataset, PACE.train_split)}
                if PACE.cov_on
                else {}
            ),
            pool=testset_path(PACE.dataset, PACE.pool),
            weights=f"{model_dir(PACE.zoo, PACE.attack_model)}/weights.safetensors",
            meta=f"{model_dir(PACE.zoo, PACE.attack_model)}/meta.json",
        output:
            **({"cw": testset_path(PACE.dataset, "pace_cw")} if PACE.cw_on else {}),
            **(
                {"train": testset_path(PACE.dataset, "pace_train")}
                if PACE.cov_on
                else {}
            ),
            patch=testset_path(PACE.dataset, "pace_patch"),
            light=testset_path(PACE.dataset, "pace_light"),
            fgsm=testset_path(PACE.dataset, "pace_fgsm"),
            bim=testset_path(PACE.dataset, "pace_bim"),
        log:
            **({"train_set": "logs/pace/train_set.log"} if PACE.cov_on else {}),
            mutated="logs/pace/mutated_inputs.log",
            generated="logs/pace/generated_inputs.log",
        benchmark:
            "benchmarks/pace/testsets.tsv"
        conda:
            "../../envs/labelfree.yaml"
        threads: PACE.cfg["threads"]
        resources:
            **HEAVY,
            mem_mb=max(PACE.cfg["mem_mb"], DATASETS[PACE.dataset]["mem_mb"]),
            runtime=PACE.cfg["runtime"],
        params:
            seed=SEED,
            mutation=PACE.cfg["mutation"],
            model_dir=lambda w, input: os.path.dirname(input.meta),
            preprocessing=PACE.attack_preprocessing,
            attack=PACE.attack,
            subsample=PACE.cov["train_subsample"] if PACE.cov_on else 0,
        script:
            "../scripts/pace_inputs.py"

    SUBJECTS_OUT = {
        "npz": "results/pace/raw/subjects.npz",
        "csv": report(
            PACE.table(pace_plan.SUBJECTS_STEM),
            caption=f"../report/pace/tables/{pace_plan.SUBJECTS_STEM}.rst",
            category="pace",
            subcategory="tables",
        ),
        "md": PACE.table(pace_plan.SUBJECTS_STEM, "md"),
    }
    SUBJECTS_IN = {
        "infer": [
            infer_path(PACE.zoo, s["testset"], s["model"]) for s in PACE.subjects
        ],
        "testsets": [
            testset_path(PACE.dataset, s["testset"]) for s in PACE.subjects
        ],
        "train": dataset_split(PACE.dataset, PACE.train_split),
        "pool": testset_path(PACE.dataset, PACE.pool),
    }
    SUBJECTS_PARAMS = {
        "subjects": PACE.subjects,
        "regression": PACE.cfg["regression"],
        "mutation": PACE.cfg["mutation"],
        "seed": SEED,
    }
    if PACE.cfg["jobs"] == "study":

        rule pace_experiments:
            input:
                **SUBJECTS_IN,
            output:
                **SUBJECTS_OUT,
                rows=expand("results/pace/raw/{e}.csv", e=pace_plan.EXPERIMENTS),
                timings=expand(
                    "results/pace/raw/{e}_timings.json", e=pace_plan.EXPERIMENTS
                ),
            log:
                subjects="logs/pace/subjects.log",
                experiments="logs/pace/experiments.log",
            benchmark:
                "benchmarks/pace/experiments.tsv"
            conda:
                "../../envs/labelfree.yaml"
            threads: PACE.cfg["threads"]
            resources:
                **HEAVY,
                mem_mb=PACE.cfg["mem_mb"],
                runtime=PACE.cfg["runtime"],
            params:
                **SUBJECTS_PARAMS,
                cfg=PACE.experiment_cfg,
                experiments=list(pace_plan.EXPERIMENTS),
            script:
                "../scripts/pace_study.py"

    else:

        rule pace_subjects:
            input:
                **SUBJECTS_IN,
            output:
                **SUBJECTS_OUT,
            log:
                "logs/pace/subjects.log",
            benchmark:
                "benchmarks/pace/subjects.tsv"
            conda:
                "../../envs/labelfree.yaml"
            threads: PACE.cfg["threads"]
            resources:
                **HEAVY,
                mem_mb=PACE.cfg["mem_mb"],
                runtime=PACE.cfg["runtime"],
            params:
                **SUBJECTS_PARAMS,
            script:
                "../scripts/pace_subjects.py"

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
                experiment="|".join(pace_plan.EXPERIMENTS),
            conda:
                "../../envs/labelfree.yaml"
            threads: PACE.cfg["threads"]
            resources:
                **HEAVY,
                mem_mb=PACE.cfg["mem_mb"],
                runtime=PACE.cfg["runtime"],
            params:
                cfg=PACE.experiment_cfg,
                seed=SEED,
            script:
                "../scripts/pace_experiment.py"

    rule pace_report:
        input:
            **(
                {
                    "subjects": "results/pace/raw/subjects.npz",
                    "train": [
                        infer_path(PACE.zoo, "pace_train", m) for m in PACE.cov_models
                    ],
                }
                if PACE.cov_on
                else {}
            ),
            rows=expand("results/pace/raw/{e}.csv", e=pace_plan.EXPERIMENTS),
            timings=expand("results/pace/raw/{e}_timings.json", e=pace_plan.EXPERIMENTS),
            meta=PACE.table(pace_plan.SUBJECTS_STEM),
            cross_others=PACE.cross_inputs()[1:],
        output:
            **PACE.report_outputs(report),
            **(
                {
                    "cov_rows": f"results/pace/raw/css_cov-{PACE.zoo}.csv",
                    "cov_strata": f"results/pace/raw/css_cov_strata-{PACE.zoo}.csv",
                    "cov_csv": report(
                        PACE.table(pace_plan.CSS_COV_STEM),
                        caption=f"../report/pace/tables/{pace_plan.CSS_COV_STEM}.rst",
                        category="pace",
                        subcategory="tables",
                    ),
                    "cov_md": PACE.table(pace_plan.CSS_COV_STEM, "md"),
                }
                if PACE.cov_on
                else {}
            ),
            errors="results/pace/raw/errors.csv",
            cross_rows="results/pace/raw/cross_rows.csv",
            cross_csv=report(
                PACE.table(pace_plan.CROSS_STEM, scope=pace_plan.POOLED),
                caption=f"../report/pace/tables/{pace_plan.CROSS_STEM}.rst",
                category="pace",
                subcategory="tables",
            ),
            cross_md=PACE.table(pace_plan.CROSS_STEM, "md", scope=pace_plan.POOLED),
        log:
            **({"css_cov": f"logs/pace/css_cov_{PACE.zoo}.log"} if PACE.cov_on else {}),
            report="logs/pace/report.log",
            cross_dataset="logs/pace/cross_dataset.log",
        benchmark:
            "benchmarks/pace/report.tsv"
        conda:
            "../../envs/labelfree.yaml"
        threads: PACE.cfg["threads"] if PACE.cov_on else 1
        resources:
            **(HEAVY if PACE.cov_on else {}),
            mem_mb=PACE.cfg["mem_mb"] if PACE.cov_on else LIGHT_RESOURCES["mem_mb"],
            runtime=PACE.cfg["runtime"] if PACE.cov_on else LIGHT_RESOURCES["runtime"],
        params:
            zoo=PACE.zoo,
            dataset=PACE.dataset,
            report_keys=[*PACE.report_outputs(lambda p, **_: p), "errors", "cross_rows"],
            cov_subjects=PACE.cov_subjects,
            var_threshold=PACE.cov["var_threshold"],
            cov_cfg=PACE.css_cov_cfg,
            seed=SEED,
        script:
            "../scripts/pace_report.py"
