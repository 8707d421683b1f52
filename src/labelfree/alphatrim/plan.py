"""What the `alphatrim` study runs for a config, decided while Snakemake parses the workflow:
each experiment's zoos, seed-block jobs, tables and figures (:func:`plan`, which also checks the
experiments), whether the study can run at all (:func:`skip_reason`), and the output names.

Standard library only: parsing the Snakefile imports this module for every `snakemake`
invocation, so it must not pull in numpy, torch (labelfree.zoo.batched) or matplotlib
(:mod:`.figures`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from labelfree.config import ConfigError
from labelfree.outputs import output_name

#: seed regimes (paper Section V; docs/alphatrim.md, reading R8)
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
    "extra-checks": "Checks (docs/alphatrim.md, reading R11)",
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

    The score is the logit gap m+ - m- of a two-class model (paper Section II-A), so own zoos must
    be binary. ``zoo_classes``: spine zoo -> (its dataset, the number of classes its config gives,
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
                "is the logit gap m+ - m-, paper Section II-A): use a two-class dataset, e.g. digits "
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
    """Whether the experiment's training jobs run on a GPU, so must request one: arch
    ``cnn`` with ``model.device: cuda``. MLPs train on the CPU
    whatever the device (labelfree.alphatrim.run.train_models), and source ``zoos`` trains
    nothing here."""
    m = cfg["model"]
    return (cfg["data"]["source"] != "zoos" and m.get("arch") == "cnn"
            and str(m.get("device", "cpu")).startswith("cuda"))


def block_name(zoo: str, start: int, stop: int) -> str:
    """File stem of a shard: ``{zoo}-{start:05d}-{stop:05d}`` (start inclusive, stop exclusive)."""
    return f"{zoo}-{start:05d}-{stop:05d}"


def skip_reason(
    cfg: Mapping[str, Any], user: Mapping[str, Any], prediction_zoos: Collection[str]
) -> str | None:
    """Why the enabled study cannot run on this config (one line), or None.

    ``cfg``: the validated config; ``user``: the study's section as the user wrote it (unused:
    the study names no default zoo); ``prediction_zoos``: names of the prediction zoos. The
    study trains its own seed-varied zoos, so it needs experiments, and zoos with weights.
    """
    del user
    exps = cfg["alphatrim"]["experiments"]
    if not exps:
        return ("no experiments are configured (alphatrim.experiments); the study trains its "
                "own seed-varied zoos (config/config.yaml has examples)")
    for name, e in exps.items():
        data = e.get("data", {})
        used = [data.get("zoo", "")] + list((data.get("zoos") or {}).values())
        bad = [z for z in used if z in prediction_zoos]
        if bad:
            return (f"experiment {name!r} uses prediction zoo(s) {bad}: the study needs models "
                    "trained with known seeds (and a backbone's weights), not arrays")
    return None


@dataclass(frozen=True)
class Plan:
    """The study's jobs for a config: ``experiments`` (name -> its config; none when the study
    is disabled), ``outputs`` (name -> {"tables": keys, "figures": keys}, :func:`experiment_outputs`)
    and ``blocks`` (name -> its seed-block shards, :func:`experiment_blocks`)."""

    experiments: dict[str, Any]
    outputs: dict[str, dict[str, list[str]]]
    blocks: dict[str, list[tuple[str, int, int]]]


def plan(
    experiments: Mapping[str, Any], zoos: Mapping[str, Any], datasets: Mapping[str, Any],
    prediction_zoos: Collection[str], num_classes: Callable[[Mapping[str, Any]], int | None],
) -> Plan:
    """The :class:`Plan` of the enabled study's ``experiments`` (``alphatrim.experiments``).

    ``zoos``, ``datasets``: the config's sections; ``num_classes``: the class count a dataset's
    config entry gives, or None when only the data knows
    (:func:`labelfree.data.registry.known_num_classes`, passed in so that this module stays free
    of numpy). Raises :class:`labelfree.config.ConfigError` for an experiment that cannot be
    planned, and for a spine zoo (source ``zoos``) trained on a dataset that is not two-class
    (the alphatrim_zoo job checks what only the data says).
    """
    try:
        outputs = {e: experiment_outputs(c) for e, c in experiments.items()}
        blocks = {e: experiment_blocks(c) for e, c in experiments.items()}
    except ValueError as err:
        raise ConfigError(f"alphatrim.experiments: {err}") from None
    for e, c in experiments.items():
        classes = {
            z: (zoos[z]["dataset"], num_classes(datasets[zoos[z]["dataset"]]))
            for z in spine_zoos(c).values()
            if z in zoos and z not in prediction_zoos and zoos[z]["dataset"] in datasets
        }
        for msg in non_binary_zoos(e, c, classes):
            raise ConfigError(msg)
    return Plan(dict(experiments), outputs, blocks)
