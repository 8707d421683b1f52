"""What the `alphatrim` rule file needs while Snakemake parses it: the experiments' zoos, tables
and figures (spec 3.4, 4, 5).

Import-light on purpose (standard library only): parsing the Snakefile imports this module for
every `snakemake` invocation, so it must not pull in torch (labelfree.zoo.batched) or matplotlib
(.figures) (issue 23, item 4; tests/workflow/test_parse_imports.py). :mod:`.pipeline` and
:mod:`.experiment` re-export these names.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from labelfree.outputs import output_name

#: seed regimes (spec 3.1)
REGIMES = ("S_init", "S_batch", "S_all")
ENSEMBLE_ZOO = "E1_all"  # the separate S_all zoo of the ensemble block

#: table / figure stems (docs/outputs.md) -> paper numbering; the files are
#: ``results/alphatrim/{tables,figures}/<id>-<experiment>[-<detail>]`` (:func:`output_file`),
#: captions ``workflow/report/alphatrim/{tables,figures}/<stem>.rst``
TABLES = {
    "table1": "Table I",
    "table2": "Table II",
    "table3": "Table III",
    "table4": "Table IV",
    "table5": "Table V",
    "extra-checks": "Checks (spec 6)",
}
FIGURES = {
    "fig4": "Fig. 4",
    "fig5": "Fig. 5",
    "fig6": "Fig. 6",
    "fig7": "Fig. 7",
    "fig8": "Fig. 8",
    "fig9": "Fig. 9",
    "fig10": "Fig. 10",
    "fig11": "Fig. 11",
    "fig12": "Fig. 12",
    "fig13": "Fig. 13",
    "fig14": "Fig. 14",
    "fig15": "Fig. 15",
    "fig16": "Fig. 16",
}


def output_file(experiment: str, stem: str, kind: str, ext: str) -> str:
    """``results/alphatrim/<kind>/<id>-<experiment>[-<detail>].<ext>`` (docs/outputs.md)."""
    return f"results/alphatrim/{kind}/{output_name(stem, experiment)}.{ext}"


def spine_zoos(cfg: Mapping[str, Any]) -> dict[str, str]:
    """Source ``zoos``: study zoo name (regime or E1_all) -> spine zoo name, in study order."""
    names = cfg["data"].get("zoos", {}) or {}
    out = {r: names[r] for r in REGIMES if names.get(r)}
    if names.get("ensemble"):
        out[ENSEMBLE_ZOO] = names["ensemble"]
    return out


def non_binary_zoos(
    name: str, cfg: Mapping[str, Any], zoo_classes: Mapping[str, tuple[str, int | None]],
) -> list[str]:
    """Source ``zoos``: one message per spine zoo whose dataset is not two-class.

    The score is the logit gap m+ - m- of a two-class model (spec 2.1), so own zoos must be
    binary. ``zoo_classes``: spine zoo -> (its dataset, the number of classes its config gives,
    or None when only the data knows; those are checked in the alphatrim_zoo job).
    """
    out = []
    for study_zoo, zoo in spine_zoos(cfg).items():
        if zoo not in zoo_classes:
            continue
        dataset, k = zoo_classes[zoo]
        if k is not None and k != 2:
            key = "ensemble" if study_zoo == ENSEMBLE_ZOO else study_zoo
            out.append(
                f"alphatrim.experiments.{name}.data.zoos.{key}: zoo {zoo!r} is trained on "
                f"dataset {dataset!r} with {k} classes; the study needs binary zoos (the score "
                "is the logit gap m+ - m-, spec 2.1): use a two-class dataset, e.g. digits "
                "with options.binary: even_odd (docs/alphatrim.md, 'Zoos must be binary')")
    return out


def experiment_zoos(cfg: Mapping[str, Any]) -> dict[str, int]:
    """Zoo name -> number of models trained for an experiment (validated).

    For source ``zoos`` the runs come from spine zoos; sizes are -1 (known from their sheets).
    """
    if cfg["data"]["source"] == "zoos":
        zoos = {z: -1 for z in spine_zoos(cfg)}
        if not zoos:
            raise ValueError("alphatrim experiment: data.source zoos needs data.zoos names")
        if cfg["kind"] == "transfer" and set(zoos) != {"S_all"}:
            raise ValueError("alphatrim experiment of kind `transfer` needs data.zoos.S_all only")
        return zoos
    zoos = {r: int(cfg["regimes"][r]) for r in REGIMES if int(cfg["regimes"][r]) > 0}
    for r, k in zoos.items():
        if k < 3:
            raise ValueError(f"alphatrim experiment: regimes.{r}={k}; use 0 or at least 3 models")
    if cfg["kind"] == "transfer":
        if set(zoos) != {"S_all"}:
            raise ValueError("alphatrim experiment of kind `transfer` needs regimes.S_all > 0 only")
    elif int(cfg["ensembles"]["models"]) > 0:
        if int(cfg["ensembles"]["models"]) < 4:
            raise ValueError("alphatrim experiment: ensembles.models must be 0 or at least 4")
        zoos[ENSEMBLE_ZOO] = int(cfg["ensembles"]["models"])
    if not zoos:
        raise ValueError("alphatrim experiment: no zoo to train (all regimes are 0)")
    return zoos


def experiment_outputs(cfg: Mapping[str, Any]) -> dict[str, list[str]]:
    """The table and figure keys an experiment writes (see TABLES, FIGURES)."""
    zoos = experiment_zoos(cfg)
    if cfg["kind"] == "transfer":
        figs = ["fig13", "fig14"]
        if cfg["ensembles"]["sizes"]:
            figs += ["fig15", "fig16"]
        return {"tables": ["table5", "extra-checks"], "figures": figs}
    tables, figs = [], []
    if ENSEMBLE_ZOO in zoos:
        tables.append("table1")
        figs += ["fig4", "fig5", "fig6", "fig7", "fig8"]
    if any(r in zoos for r in REGIMES):
        tables += ["table2", "table3"]
        figs += ["fig9", "fig10"]
    if "S_all" in zoos:
        tables.append("table4")
        figs += ["fig11", "fig12"]
    return {"tables": tables + ["extra-checks"], "figures": figs}


#: Models a CNN trainer job trains together (labelfree.zoo.batched.train_batched_cnn's
#: ``model_block``). Grouped convolutions of another group count may round differently, so CNN
#: shards hold whole blocks of this many models (below).
CNN_MODEL_BLOCK = 16


def experiment_blocks(cfg: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """The seed-block shards of an experiment: (zoo, start, stop) model ranges, one job each.

    ``models_per_job`` B > 0 cuts every zoo into consecutive blocks of B models (model indices
    ``[start, stop)``, the last block shorter); 0 gives none (the experiment's one alphatrim_zoo
    job trains every model). A model's block depends on its index and B only, so growing a zoo
    reruns its last block and adds new ones. Training is per model (labelfree.zoo.batched), so
    the merged blocks equal one job's result; CNN blocks must be a multiple of
    :data:`CNN_MODEL_BLOCK` so they train the same groups of models as one job does. Source
    ``zoos`` trains nothing here: no blocks.
    """
    size = int(cfg.get("models_per_job", 0) or 0)
    if size <= 0 or cfg["data"]["source"] == "zoos":
        return []
    if cfg["model"]["arch"] == "cnn" and size % CNN_MODEL_BLOCK:
        raise ValueError(
            f"alphatrim experiment: models_per_job = {size}; CNN experiments need a multiple of "
            f"{CNN_MODEL_BLOCK} (the models the CNN trainer groups together), so that the merged "
            "shards equal one job's result"
        )
    return [(zoo, start, min(start + size, k))
            for zoo, k in experiment_zoos(cfg).items() for start in range(0, k, size)]


def trains_on_gpu(cfg: Mapping[str, Any]) -> bool:
    """Whether the experiment's training jobs run on a GPU, so must request one (issue 16,
    alpha-trimming bullet 1): arch ``cnn`` with ``model.device: cuda``. MLPs train on the CPU
    whatever the device (labelfree.alphatrim.pipeline.train_models), and source ``zoos`` trains
    nothing here."""
    m = cfg["model"]
    return (cfg["data"]["source"] != "zoos" and m.get("arch") == "cnn"
            and str(m.get("device", "cpu")).startswith("cuda"))


def block_name(zoo: str, start: int, stop: int) -> str:
    """File stem of a shard: ``{zoo}-{start:05d}-{stop:05d}`` (start inclusive, stop exclusive)."""
    return f"{zoo}-{start:05d}-{stop:05d}"
