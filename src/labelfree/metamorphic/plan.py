"""What the `metamorphic` study runs for a configuration, decided while Snakemake parses the
workflow: the test-set names and groups of its bases, the tables and figures its report writes,
the configuration checks the schema cannot express, and the reason to skip the study.

Parse-time module: it imports no scipy, torch, matplotlib or pandas (every ``snakemake`` call
imports it). Only :func:`weights_geometry` imports torchvision, and only for a zoo whose rows
name torchvision weights (the paper-scale configurations).

``cfg`` is the validated ``metamorphic`` section of the config throughout, as in
:mod:`labelfree.metamorphic.run` and :mod:`labelfree.metamorphic.report`; only
:func:`skip_reason` takes the whole config.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from labelfree.data.digitscenes import check_options
from labelfree.metamorphic.followups import colour_array, resolve_colourset
from labelfree.zoo.geometry import GeometryError, split_geometry

ROLES = ("unbiased", "biased", "shortcut", "multilabel")
#: Where split bases are filled (docs/metamorphic.md, reading R4): at the originals'
#: resolution, or on the stored split.
FILL_AT = ("original", "stored")
#: The data layer's store geometry per lazily indexed source (labelfree.data.imagenet / .coco).
DATA_LAYER_ASPECT = {"imagenet_val": "keep", "coco": "squash"}
#: The test-set group of a base that names none (config/schema/metamorphic.yaml).
DEFAULT_GROUP = "metamorphic_followups"

#: Tables of the report rule (stem -> title), in results/metamorphic/tables/; every output pools
#: the study's zoos, so its file is <stem>-all[-<detail>] (labelfree.outputs, docs/outputs.md).
TABLES = {
    "table1-3": "Tables 1-3 (RQ1): oracle precision of MR-1/MR-2 flags, measured "
    "from the hidden masks of DigitScenes, with the false-positive categories",
    "table4": "Table 4 (RQ2): 3 vs 15 colours, contingency, chi-square (Yates) and Cramer's V",
    "table5-6": "Tables 5-6 (RQ3): unreliable inferences per model, count (ratio to #correct)",
    "fig6": "Fig. 6 (RQ3): share of flagged inputs flagged by exactly n models",
    "fig8": "Fig. 8 (RQ4): flagged-and-correct / all images per object-size bin",
    "table7-8": "Tables 7-8 (RQ5): accuracy of Unreliable / Reliable inferences",
    "table7-wilcoxon": "RQ5: Reliable - Original gain (pp) and exact one-sided Wilcoxon p",
    "fig9": "Fig. 9 (RQ6): accuracy and MR ratios over training epochs",
    "fig10": "Fig. 10 (RQ6): accuracy vs MR ratios across the zoo, Pearson r",
    "extra-bias_calibration": "Bias calibration (docs/metamorphic.md, reading R14): training bias x "
    "test bias -> accuracy and MR ratios",
    "extra-mr2_recall": "Beyond the paper: MR-2 recall against counterfactual ground truth (check H)",
    "table1-3-annotation_sizes": "RQ1 manual check: flags (violated and correct) per model and MR with the "
    "Cochran sample size (z, e, p = 0.5, finite-population correction, rounded up); the sample is "
    "annotation/rq1_sample.csv",
    "fig7": "Fig. 7 (RQ4): the inputs flagged (MR-1 or MR-2, violated and correct) by the "
    "most models of the unbiased zoo, with their object-area ratio",
    "extra-checks": "Checks A-H (docs/metamorphic.md, reading R12; A-F hard, G soft, H reported) and "
    "the paper's conclusions at small scale: check, value, threshold, holds, switch (documented deviation)",
}
#: Figures of the report rule (stem -> paper figure), in results/metamorphic/figures/.
FIGURES = {
    "fig6": "Fig. 6",
    "fig8": "Fig. 8",
    "fig9": "Fig. 9",
    "fig10": "Fig. 10",
    "fig7": "Fig. 7",
    "fig1-5-gallery": "Figs. 1, 2, 4, 5",
}


class ExperimentError(ValueError):
    """Inconsistent study configuration or artefacts; the message names the key or file."""


# --------------------------------------------------------------------------------------------
# names
# --------------------------------------------------------------------------------------------


def base_name(base: str) -> str:
    return f"metamorphic-{base}"


def followup_name(base: str, colourset: str) -> str:
    return f"metamorphic-{base}-{colourset}"


def cf_name(base: str) -> str:
    return f"metamorphic-{base}-cf"


def followup_names(base: str, bcfg: Mapping[str, Any], colourset: str) -> list[str]:
    """Test-set names of a base's follow-ups in one colour set: one, or ``parts`` of them
    (``metamorphic-{base}-{colourset}-partKKK``, each a chunk of sources, inferred separately)."""
    parts = int(bcfg.get("parts", 1))
    if parts <= 1:
        return [followup_name(base, colourset)]
    return [f"{followup_name(base, colourset)}-part{k:03d}" for k in range(parts)]


def base_testsets(base: str, bcfg: Mapping[str, Any]) -> list[str]:
    """The inferable test sets a base contributes: its follow-up sets and counterfactuals."""
    names = [t for cs in bcfg["coloursets"] for t in followup_names(base, bcfg, cs)]
    if int(bcfg["options"].get("counterfactuals", 0)) > 0:
        names.append(cf_name(base))
    return names


def group_testsets(bases: Mapping[str, Mapping[str, Any]]) -> dict[str, list[str]]:
    """TESTSET_GROUPS entries: group name -> test sets of every base in that group."""
    groups: dict[str, list[str]] = {}
    for base, bcfg in bases.items():
        groups.setdefault(bcfg["group"], []).extend(base_testsets(base, bcfg))
    return groups


def zoo_bases(zoo_testsets: Sequence[str], bases: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Bases whose follow-up sets the zoo runs (from the zoo's expanded test-set list)."""
    return [b for b, bcfg in bases.items() if any(t in zoo_testsets for t in base_testsets(b, bcfg))]


def zoo_of(cfg: Mapping[str, Any], role: str) -> str | None:
    """The first zoo of ``metamorphic.zoos`` with ``role``, or None."""
    zs = [z for z, c in cfg["zoos"].items() if c["role"] == role]
    return zs[0] if zs else None


# --------------------------------------------------------------------------------------------
# the rule file's call, the skip reason
# --------------------------------------------------------------------------------------------


def checked_groups(
    cfg: Mapping[str, Any], zoos: Mapping[str, Any], datasets: Mapping[str, Any]
) -> dict[str, list[str]]:
    """The rule file's one call: check the configuration (:func:`check_config`) and return the
    test-set groups it registers (registered even when the study is disabled, so zoo sheets
    that list them stay valid)."""
    check_config(cfg, zoos, datasets)
    return group_testsets(cfg["testsets"])


def skip_reason(
    cfg: Mapping[str, Any], user: Mapping[str, Any], prediction_zoos: Collection[str]
) -> str | None:
    """Why the enabled study cannot run on the configured zoos (one line), or None.

    ``cfg``: the validated config; ``user``: the study's key as the user wrote it (unused: the
    study has no default zoo); ``prediction_zoos``: names of the prediction zoos.
    """
    del user
    zoos = cfg["metamorphic"]["zoos"]
    if not zoos:
        return ("no zoos are configured (metamorphic.zoos); the study runs models on follow-up "
                "images it renders from DigitScenes or annotated datasets")
    bad = [z for z in zoos if z in prediction_zoos]
    if bad:
        return (f"zoo(s) {bad} are prediction zoos: the study runs models on follow-up images "
                "it renders, which needs weights")
    return None


# --------------------------------------------------------------------------------------------
# configuration checks
# --------------------------------------------------------------------------------------------


def _uses(base: str, bcfg: Mapping[str, Any], zcfg: Mapping[str, Any], zoo_cfg: Mapping[str, Any]) -> bool:
    """Whether a zoo runs a base: its main base, or a base whose group the zoo lists."""
    return base == zcfg["main"] or bcfg.get("group", DEFAULT_GROUP) in zoo_cfg.get("testsets", [])


def check_config(cfg: Mapping[str, Any], zoos: Mapping[str, Any], datasets: Mapping[str, Any]) -> None:
    """Parse-time checks the schema cannot express (names across sections, scene options,
    region modes and store geometry of the zoos' annotated datasets)."""
    custom = cfg.get("coloursets", {})
    fill_at = cfg.get("fill_at", "original")
    if fill_at not in FILL_AT:
        raise ExperimentError(f"metamorphic.fill_at: {fill_at!r} is not one of {list(FILL_AT)}")
    for name, cols in custom.items():
        colour_array(cols)
        if len(cols) % 2 == 0:
            raise ExperimentError(f"metamorphic.coloursets.{name}: an odd number of colours is needed")
    for base, bcfg in cfg["testsets"].items():
        if not bcfg.get("split"):
            check_options(bcfg["options"], f"metamorphic.testsets.{base}.options")
        if (bcfg.get("size") or bcfg.get("aspect")) and not (bcfg.get("split") and fill_at == "original"):
            raise ExperimentError(
                f"metamorphic.testsets.{base}: a store geometry (size/aspect) is made from the "
                "originals, so it needs a `split` base and fill_at: original")
        for cs in bcfg["coloursets"]:
            resolve_colourset(cs, custom)
    for zoo, zcfg in cfg["zoos"].items():
        _check_zoo(zoo, zcfg, cfg, zoos, datasets, fill_at)
    for key in ("rq1", "rq2", "rq4"):
        if cfg[key]["base"] not in cfg["testsets"]:
            raise ExperimentError(f"metamorphic.{key}.base: {cfg[key]['base']!r} is not a test set")


def _check_zoo(
    zoo: str, zcfg: Mapping[str, Any], cfg: Mapping[str, Any], zoos: Mapping[str, Any],
    datasets: Mapping[str, Any], fill_at: str,
) -> None:
    """One zoo of ``metamorphic.zoos``: configured, its main base a test set, region modes that
    fit its dataset's annotations (docs/metamorphic.md, readings R1, R2) and, on ImageNet or
    COCO, a store geometry that serves every model (:func:`_check_store`)."""
    if zoo not in zoos:
        raise ExperimentError(f"metamorphic.zoos: zoo {zoo!r} is not configured under zoos:")
    if zcfg["main"] not in cfg["testsets"]:
        raise ExperimentError(
            f"metamorphic.zoos.{zoo}.main: {zcfg['main']!r} is not one of metamorphic.testsets "
            f"{sorted(cfg['testsets'])}"
        )
    src = datasets[zoos[zoo]["dataset"]]["source"]
    for b, bc in cfg["testsets"].items():
        used = _uses(b, bc, zcfg, zoos[zoo])
        if used and bc.get("split") and src == "imagenet_val" and bc.get("region", "box") != "box":
            raise ExperimentError(
                f"metamorphic.testsets.{b}.region: ImageNet annotations are boxes; use `box` so "
                f"bbox_pad_px ({cfg['bbox_pad_px']}) applies (docs/metamorphic.md, reading R1; "
                "`mask` would drop the padding)"
            )
        if (used and bc.get("split") and src == "coco" and fill_at == "original"
                and bc.get("region", "box") != "mask"):
            raise ExperimentError(
                f"metamorphic.testsets.{b}.region: COCO annotations are instance masks; use "
                "`mask` (docs/metamorphic.md, reading R2: the union of every annotation's mask)")
    if src in ("imagenet_val", "coco"):
        _check_store(zoo, zcfg, cfg, zoos[zoo], datasets[zoos[zoo]["dataset"]])
    uses_split = bool(cfg["testsets"][zcfg["main"]].get("split"))
    if src != "digitscenes" and not uses_split:
        raise ExperimentError(
            f"metamorphic.zoos.{zoo}: its dataset {zoos[zoo]['dataset']!r} is not a digitscenes "
            "dataset and its main base names no `split` of it (config/paper/metamorphic-*.yaml)"
        )


def base_geometry(bcfg: Mapping[str, Any], dataset_cfg: Mapping[str, Any]) -> tuple[int, str]:
    """(size, aspect) of a split base's store: its own ``size``/``aspect`` (0 / empty = the data
    layer's: the dataset's ``options.size``, ImageNet ``keep``, COCO ``squash``)."""
    src = dataset_cfg["source"]
    size = int(bcfg.get("size") or dataset_cfg.get("options", {}).get("size", 224))
    aspect = bcfg.get("aspect") or DATA_LAYER_ASPECT.get(src, "squash")
    return size, aspect


def _check_store(
    zoo: str, zcfg: Mapping[str, Any], cfg: Mapping[str, Any], zoo_cfg: Mapping[str, Any],
    dcfg: Mapping[str, Any],
) -> None:
    """Every model of an ImageNet/COCO zoo gets its own input geometry from every split base it
    runs: the base's store is at least the model's resize (no upsampling), and keeps the aspect
    ratio for models that keep it (torchvision weights, ``@R/C``: shorter side, centre crop) and
    squashes it for models that squash (``@R``; docs/metamorphic.md, reading R5)."""
    for b, bc in cfg["testsets"].items():
        if not (_uses(b, bc, zcfg, zoo_cfg) and bc.get("split")):
            continue
        size, aspect = base_geometry(bc, dcfg)
        where = (f"metamorphic.testsets.{b}.size" if bc.get("size")
                 else f"datasets.{zoo_cfg['dataset']}.options.size")
        need, who = source_size_needed(zoo_cfg.get("grid", []))
        if need > size:
            raise ExperimentError(
                f"{where}: {size} is smaller than the {need} px that model {who!r} resizes to (its "
                f"weights' transforms or its preprocessing's @ suffix); set size >= {need} so no "
                "model sees upsampled images")
        for row in zoo_cfg.get("grid", []):
            preps = row.get("preprocessing", [])
            for prep in preps if isinstance(preps, list) else [preps]:
                want = model_aspect(prep)
                if want is not None and want != aspect:
                    model = str(row.get("model", row.get("arch", prep)))
                    raise ExperimentError(
                        f"metamorphic.testsets.{b}: model {model!r} of zoo {zoo!r} "
                        f"({prep}) {'keeps' if want == 'keep' else 'ignores'} the aspect ratio but "
                        f"base {b!r} is stored with aspect {aspect!r}; give the model a base with "
                        f"aspect: {want} (its own zoo and test-set group; docs/metamorphic.md, "
                        "reading R5)")


def model_aspect(preprocessing: str) -> str | None:
    """``keep`` for a model that resizes the shorter side (torchvision weights' transforms,
    ``<kind>@R/C``), ``squash`` for ``<kind>@R`` (R x R, aspect ignored), None otherwise."""
    if isinstance(preprocessing, str) and "@" in preprocessing:
        try:
            _, (_, crop) = split_geometry(preprocessing)
        except GeometryError as exc:
            raise ExperimentError(str(exc)) from None
        return "squash" if crop is None else "keep"
    if isinstance(preprocessing, str) and preprocessing.startswith("torchvision:"):
        return "keep"
    return None


def weights_geometry(preprocessing: str) -> tuple[int, int] | None:
    """(resize, crop) of a ``torchvision:<Weights>`` preprocessing, read from the weights' own
    eval transform (e.g. ResNet-50 V1: 256, 224; Inception v3: 342, 299), or of a geometry
    suffix (labelfree.zoo.geometry: ``scale01@640`` -> 640, 640 for the COCO TResNet-XL,
    ``imagenet@256/224`` -> 256, 224); None for other kinds."""
    if isinstance(preprocessing, str) and "@" in preprocessing:
        try:
            _, (resize, crop) = split_geometry(preprocessing)
        except GeometryError as exc:
            raise ExperimentError(str(exc)) from None
        return resize, crop or resize
    if not isinstance(preprocessing, str) or not preprocessing.startswith("torchvision:"):
        return None
    # deferred: torchvision costs about 2 s to import and only paper-scale zoos name its weights
    from torchvision.models import get_weight

    try:
        tf = get_weight(preprocessing.split(":", 1)[1]).transforms()
    except (ValueError, KeyError, AttributeError) as exc:
        raise ExperimentError(f"preprocessing {preprocessing!r}: unknown torchvision weights ({exc})") from exc
    return int(tf.resize_size[0]), int(tf.crop_size[0])


def source_size_needed(grid: Sequence[Mapping[str, Any]]) -> tuple[int, str | None]:
    """Smallest stored image side that serves every model of a zoo grid at its own input size.

    Stored images are square (ImageNet: the centre square of the shorter-side resize, the data
    layer's store; COCO: the whole image resized to S x S); each model's transform resizes to its
    ``resize`` (shorter side, or R x R for a ``@R`` suffix) and crops its ``crop``, so the store
    must be at least the largest ``resize`` (else the model upsamples). Returns (size, the model
    that needs it); (0, None) when no row names torchvision weights or a geometry suffix.
    """
    best, who = 0, None
    for row in grid:
        preps = row.get("preprocessing", [])
        for prep in preps if isinstance(preps, list) else [preps]:
            g = weights_geometry(prep)
            if g is not None and g[0] > best:
                best, who = g[0], str(row.get("model", row.get("arch", prep)))
    return best, who
