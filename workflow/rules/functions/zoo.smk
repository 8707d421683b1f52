# Input functions and helpers of `zoo` (kept apart from its rules, see zoo.smk).


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
