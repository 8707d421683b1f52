# Rules of `pace`: PACE accuracy estimation (Chen et al., TOSEM 2020; docs/pace.md) on small-scale
# digits subjects. Jobs: the study's input pools as test sets (pace_pool, pace_mutated_inputs,
# pace_generated_inputs; inference runs the pace zoo on them), one job gathering every subject
# (pace_subjects, also trains the rotation regressor), one job per experiment (pace_experiment:
# main, features, alpha, dims, reducers, variants), one job writing every table and figure
# (pace_report) and, for Table 12, the training split as test set `pace_train` (pace_train_set;
# inference writes its LHL activations) and one job computing LSA and CSS-COV (pace_css_cov).
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

    rule pace_mutated_inputs:
        input:
            pool=testset_path(PACE.dataset, PACE.pool),
        output:
            patch=testset_path(PACE.dataset, "pace_patch"),
            light=testset_path(PACE.dataset, "pace_light"),
        log:
            "logs/pace/mutated_inputs.log",
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            **HEAVY,
            mem_mb=PACE.cfg["mem_mb"],
            runtime=PACE.cfg["runtime"],
        params:
            kind="mutated",
            seed=SEED,
            mutation=PACE.cfg["mutation"],
        script:
            "../scripts/pace_testsets.py"

    rule pace_generated_inputs:
        input:
            pool=testset_path(PACE.dataset, PACE.pool),
            weights=f"{model_dir(PACE.zoo, PACE.attack_model)}/weights.safetensors",
            meta=f"{model_dir(PACE.zoo, PACE.attack_model)}/meta.json",
        output:
            **({"cw": testset_path(PACE.dataset, "pace_cw")} if PACE.cw_on else {}),
            fgsm=testset_path(PACE.dataset, "pace_fgsm"),
            bim=testset_path(PACE.dataset, "pace_bim"),
        log:
            "logs/pace/generated_inputs.log",
        benchmark:
            "benchmarks/pace/generated_inputs.tsv"
        conda:
            "../../envs/labelfree.yaml"
        threads: PACE.cfg["threads"]
        resources:
            **HEAVY,
            mem_mb=PACE.cfg["mem_mb"],
            runtime=PACE.cfg["runtime"],
        params:
            kind="generated",
            seed=SEED,
            model_dir=lambda w, input: os.path.dirname(input.meta),
            preprocessing=PACE.attack_preprocessing,
            attack=PACE.attack,
        script:
            "../scripts/pace_testsets.py"

    rule pace_subjects:
        input:
            infer=[
                infer_path(PACE.zoo, s["testset"], s["model"]) for s in PACE.subjects
            ],
            testsets=[testset_path(PACE.dataset, s["testset"]) for s in PACE.subjects],
            train=dataset_split(PACE.dataset, PACE.train_split),
            pool=testset_path(PACE.dataset, PACE.pool),
        output:
            npz="results/pace/raw/subjects.npz",
            csv=report(
                PACE.table(pace_plan.SUBJECTS_STEM),
                caption=f"../report/pace/tables/{pace_plan.SUBJECTS_STEM}.rst",
                category="pace",
                subcategory="tables",
            ),
            md=PACE.table(pace_plan.SUBJECTS_STEM, "md"),
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
            subjects=PACE.subjects,
            regression=PACE.cfg["regression"],
            mutation=PACE.cfg["mutation"],
            seed=SEED,
        script:
            "../scripts/pace_subjects.py"

    if PACE.cov_on:

        rule pace_train_set:
            input:
                split=dataset_split(PACE.dataset, PACE.train_split),
            output:
                train=testset_path(PACE.dataset, "pace_train"),
            log:
                "logs/pace/train_set.log",
            conda:
                "../../envs/labelfree.yaml"
            threads: 1
            resources:
                # a subsample of the split: its dataset's memory, a light job's runtime
                mem_mb=DATASETS[PACE.dataset]["mem_mb"],
                runtime=LIGHT_RESOURCES["runtime"],
            params:
                seed=SEED,
                subsample=PACE.cov["train_subsample"],
            script:
                "../scripts/pace_train_set.py"

        rule pace_css_cov:
            input:
                subjects="results/pace/raw/subjects.npz",
                main="results/pace/raw/main.csv",
                train=[infer_path(PACE.zoo, "pace_train", m) for m in PACE.cov_models],
            output:
                rows="results/pace/raw/css_cov-{zoo}.csv",
                strata="results/pace/raw/css_cov_strata-{zoo}.csv",
                csv=report(
                    "results/pace/tables/table12-{zoo}.csv",
                    caption=f"../report/pace/tables/{pace_plan.CSS_COV_STEM}.rst",
                    category="pace",
                    subcategory="tables",
                ),
                md="results/pace/tables/table12-{zoo}.md",
            log:
                "logs/pace/css_cov_{zoo}.log",
            benchmark:
                "benchmarks/pace/css_cov_{zoo}.tsv"
            wildcard_constraints:
                zoo=PACE.zoo,
            conda:
                "../../envs/labelfree.yaml"
            threads: PACE.cfg["threads"]
            resources:
                **HEAVY,
                mem_mb=PACE.cfg["mem_mb"],
                runtime=PACE.cfg["runtime"],
            params:
                subjects=PACE.cov_subjects,
                var_threshold=PACE.cov["var_threshold"],
                cfg=PACE.css_cov_cfg,
                seed=SEED,
            script:
                "../scripts/pace_css_cov.py"

    if PACE.cfg["jobs"] == "study":

        rule pace_experiments:
            input:
                subjects="results/pace/raw/subjects.npz",
            output:
                rows=expand("results/pace/raw/{e}.csv", e=pace_plan.EXPERIMENTS),
                timings=expand(
                    "results/pace/raw/{e}_timings.json", e=pace_plan.EXPERIMENTS
                ),
            log:
                "logs/pace/experiments.log",
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
                cfg=PACE.experiment_cfg,
                seed=SEED,
                experiments=list(pace_plan.EXPERIMENTS),
            script:
                "../scripts/pace_experiment.py"

    else:

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
            rows=expand("results/pace/raw/{e}.csv", e=pace_plan.EXPERIMENTS),
            timings=expand("results/pace/raw/{e}_timings.json", e=pace_plan.EXPERIMENTS),
            meta=PACE.table(pace_plan.SUBJECTS_STEM),
        output:
            **PACE.report_outputs(report),
            errors="results/pace/raw/errors.csv",
            cross_rows="results/pace/raw/cross_rows.csv",
        log:
            "logs/pace/report.log",
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            **LIGHT_RESOURCES,
        params:
            zoo=PACE.zoo,
            dataset=PACE.dataset,
        script:
            "../scripts/pace_report.py"

    rule pace_cross_dataset:
        input:
            rows=PACE.cross_inputs(),
        output:
            csv=report(
                PACE.table(pace_plan.CROSS_STEM, scope=pace_plan.POOLED),
                caption=f"../report/pace/tables/{pace_plan.CROSS_STEM}.rst",
                category="pace",
                subcategory="tables",
            ),
            md=PACE.table(pace_plan.CROSS_STEM, "md", scope=pace_plan.POOLED),
        log:
            "logs/pace/cross_dataset.log",
        conda:
            "../../envs/labelfree.yaml"
        threads: 1
        resources:
            **LIGHT_RESOURCES,
        script:
            "../scripts/pace_cross_dataset.py"
