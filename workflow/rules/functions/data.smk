# Input functions and helpers of `data` (kept apart from its rules, see data.smk).


def _data_alternatives(names):
    """A wildcard regex matching exactly ``names`` (and nothing when it is empty)."""
    return "|".join(names) if names else "(?!)"


def data_manifest(dataset):
    return f"resources/manifests/{dataset}.json"


def data_prepare_inputs(dataset):
    """The verified-download manifest for downloaded sources; nothing otherwise."""
    return [data_manifest(dataset)] if dataset in DATA_DOWNLOADS else []


def data_test_split(wildcards):
    """The split of a dataset that becomes its `id` test set (datasets.<name>.test_split)."""
    return dataset_split(wildcards.dataset, DATASETS[wildcards.dataset]["test_split"])
