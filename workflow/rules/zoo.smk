

include: "functions/zoo.smk"


for _zoo in ZOO_SHEETS:
    _cfg = ZOOS[_zoo]
    _local = zoo_rows(_zoo, True)
    _other = zoo_rows(_zoo, False)

    if _local:

        rule:
            name:
                f"zoo_train_{_zoo}"
            input:
                train=dataset_split(zoo_dataset(_zoo), _cfg["train_split"]),
            output:
                **zoo_model_files(_zoo, _local),
            log:
                f"logs/zoo/{_zoo}_train.log",
            benchmark:
                f"benchmarks/zoo/{_zoo}_train.tsv"
            conda:
                "../../envs/labelfree.yaml"
            threads: _cfg["threads"]
            resources:
                mem_mb=_cfg["mem_mb"],
                runtime=_cfg["runtime"],
            params:
                zoo=_zoo,
                rows=_local,
                dirs=[model_dir(_zoo, r["model"]) for r in _local],
                val_fraction=_cfg["val_fraction"],
                seed=SEED,
                device=_cfg["train_device"],
            script:
                "../scripts/zoo_train.py"

    if _other:

        rule:
            name:
                f"zoo_resolve_{_zoo}"
            input:
                idset=testset_path(zoo_dataset(_zoo), "id"),
                checkpoints=[
                    r["weights"] for r in _other if r["source"] == "checkpoint"
                ],
            output:
                **zoo_model_files(_zoo, _other),
            log:
                f"logs/zoo/{_zoo}_resolve.log",
            conda:
                "../../envs/labelfree.yaml"
            threads: 1
            resources:
                mem_mb=_cfg["mem_mb"],
                runtime=_cfg["runtime"],
            params:
                zoo=_zoo,
                rows=_other,
                dirs=[model_dir(_zoo, r["model"]) for r in _other],
            script:
                "../scripts/zoo_resolve.py"
