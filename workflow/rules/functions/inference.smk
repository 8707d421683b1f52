# Input functions and helpers of `inference` (kept apart from its rules, see inference.smk).


def zoo_model_dirs(zoo):
    return [model_dir(zoo, m) for m in zoo_models(zoo)]


def zoo_infer_grid(zoo):
    """Output paths as a (models x test sets) grid, in sheet order and zoo_testsets order."""
    return [[infer_path(zoo, t, m) for t in zoo_testsets(zoo)] for m in zoo_models(zoo)]
