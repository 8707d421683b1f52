# Rules of `zoo`: train local models and resolve pretrained/user models into
# results/zoo/{zoo}/{model}/{weights.safetensors,meta.json} (docs/zoo.md).
# One job per zoo trains all its local models (tiny jobs must not become many jobs); one job
# per zoo resolves its torchvision/hub/checkpoint rows. Rules are named per zoo
# (zoo_train_<zoo>, zoo_resolve_<zoo>) because each has its own list of outputs.


def zoo_rows(zoo, local):
    """Sheet rows of a zoo as plain dicts: local (trained) or not (resolved)."""
    sheet = ZOO_SHEETS[zoo]
    sel = sheet[(sheet["source"] == "local") == local]
    return [
        {k: (None if v is None or v != v else v) for k, v in r.items()}
        for r in sel.to_dict("records")
    ]


def zoo_model_files(zoo, rows):
    return {
        "weights": [f"{model_dir(zoo, r['model'])}/weights.safetensors" for r in rows],
        "meta": [f"{model_dir(zoo, r['model'])}/meta.json" for r in rows],
    }


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
