"""What the `metamorphic` rule file needs while Snakemake parses it: test-set names and the
configuration checks the schema cannot express (spec 2, 7.4).

Import-light on purpose: parsing the Snakefile imports this module for every `snakemake`
invocation, so it must not pull in scipy (.analysis), torch or matplotlib (issue 23, item 4;
tests/workflow/test_parse_imports.py). Only :func:`weights_geometry` imports torchvision, and
only for a zoo on ImageNet or COCO whose rows name torchvision weights (paper-scale configs).
:mod:`.experiment` re-exports these names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from labelfree.data.digitscenes import check_options
from labelfree.metamorphic.followups import colour_array, resolve_colourset

ROLES = ("unbiased", "biased", "shortcut", "multilabel")
#: Where split bases are filled (spec 2.2): at the originals' resolution, or on the stored split.
FILL_AT = ("original", "stored")


class ExperimentError(ValueError):
    """Inconsistent study configuration or artefacts; the message names the key or file."""


# --------------------------------------------------------------------------------------------
# names
# --------------------------------------------------------------------------------------------


def base_name(base: str) -> str:
    return f"mm-{base}"


def followup_name(base: str, colourset: str) -> str:
    return f"mm-{base}-{colourset}"


def cf_name(base: str) -> str:
    return f"mm-{base}-cf"


def followup_names(base: str, bcfg: Mapping[str, Any], colourset: str) -> list[str]:
    """Test-set names of a base's follow-ups in one colour set: one, or ``parts`` of them
    (``mm-{base}-{colourset}-partKKK``, each a chunk of sources, inferred separately)."""
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


def check_config(mm: Mapping[str, Any], zoos: Mapping[str, Any], datasets: Mapping[str, Any]) -> None:
    """Parse-time checks the schema cannot express (names across sections, scene options)."""
    custom = mm.get("coloursets", {})
    fill_at = mm.get("fill_at", "original")
    if fill_at not in FILL_AT:
        raise ExperimentError(f"metamorphic.fill_at: {fill_at!r} is not one of {list(FILL_AT)}")
    for name, cols in custom.items():
        colour_array(cols)
        if len(cols) % 2 == 0:
            raise ExperimentError(f"metamorphic.coloursets.{name}: an odd number of colours is needed")
    for base, bcfg in mm["testsets"].items():
        if not bcfg.get("split"):
            check_options(bcfg["options"], f"metamorphic.testsets.{base}.options")
        if (bcfg.get("size") or bcfg.get("aspect")) and not (bcfg.get("split") and fill_at == "original"):
            raise ExperimentError(
                f"metamorphic.testsets.{base}: a store geometry (size/aspect) is made from the "
                "originals, so it needs a `split` base and fill_at: original")
        for cs in bcfg["coloursets"]:
            resolve_colourset(cs, custom)
    for zoo, zcfg in mm["zoos"].items():
        if zoo not in zoos:
            raise ExperimentError(f"metamorphic.zoos: zoo {zoo!r} is not configured under zoos:")
        if zcfg["main"] not in mm["testsets"]:
            raise ExperimentError(
                f"metamorphic.zoos.{zoo}.main: {zcfg['main']!r} is not one of metamorphic.testsets "
                f"{sorted(mm['testsets'])}"
            )
        src = datasets[zoos[zoo]["dataset"]]["source"]
        for b, bc in mm["testsets"].items():
            used = b == zcfg["main"] or bc.get("group", "mm_followups") in zoos[zoo].get("testsets", [])
            if used and bc.get("split") and src == "imagenet_val" and bc.get("region", "box") != "box":
                raise ExperimentError(
                    f"metamorphic.testsets.{b}.region: ImageNet annotations are boxes; use `box` so "
                    f"bbox_pad_px ({mm['bbox_pad_px']}) applies (spec 2.1; `mask` would drop the padding)"
                )
            if (used and bc.get("split") and src == "coco" and fill_at == "original"
                    and bc.get("region", "box") != "mask"):
                raise ExperimentError(
                    f"metamorphic.testsets.{b}.region: COCO annotations are instance masks; use "
                    "`mask` (spec 2.1: the union of every annotation's mask)")
        if src in ("imagenet_val", "coco"):
            _check_store(zoo, zcfg, mm, zoos[zoo], datasets[zoos[zoo]["dataset"]])
        uses_split = bool(mm["testsets"][zcfg["main"]].get("split"))
        if datasets[zoos[zoo]["dataset"]]["source"] != "digitscenes" and not uses_split:
            raise ExperimentError(
                f"metamorphic.zoos.{zoo}: its dataset {zoos[zoo]['dataset']!r} is not a digitscenes "
                "dataset and its main base names no `split` of it (config/paper/metamorphic-*.yaml)"
            )
    for key in ("rq1", "rq2", "rq4"):
        if mm[key]["base"] not in mm["testsets"]:
            raise ExperimentError(f"metamorphic.{key}.base: {mm[key]['base']!r} is not a test set")


def _check_store(
    zoo: str, zcfg: Mapping[str, Any], mm: Mapping[str, Any], zoo_cfg: Mapping[str, Any],
    dcfg: Mapping[str, Any],
) -> None:
    """Every model of an ImageNet/COCO zoo gets its own input geometry from every split base it
    runs: the base's store is at least the model's resize (no upsampling), and keeps the aspect
    ratio for models that keep it (torchvision weights, ``@R/C``: shorter side, centre crop) and
    squashes it for models that squash (``@R``; spec 4.1, 4.2)."""
    from labelfree.metamorphic.originals import base_geometry

    for b, bc in mm["testsets"].items():
        used = b == zcfg["main"] or bc.get("group", "mm_followups") in zoo_cfg.get("testsets", [])
        if not (used and bc.get("split")):
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
                        f"aspect: {want} (its own zoo and test-set group; spec 4.1, 4.2)")


def model_aspect(preprocessing: str) -> str | None:
    """``keep`` for a model that resizes the shorter side (torchvision weights' transforms,
    ``<kind>@R/C``), ``squash`` for ``<kind>@R`` (R x R, aspect ignored), None otherwise."""
    if isinstance(preprocessing, str) and "@" in preprocessing:
        from labelfree.zoo.geometry import GeometryError, split_geometry

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
        from labelfree.zoo.geometry import GeometryError, split_geometry

        try:
            _, (resize, crop) = split_geometry(preprocessing)
        except GeometryError as exc:
            raise ExperimentError(str(exc)) from None
        return resize, crop or resize
    if not isinstance(preprocessing, str) or not preprocessing.startswith("torchvision:"):
        return None
    from torchvision.models import get_weight

    try:
        tf = get_weight(preprocessing.split(":", 1)[1]).transforms()
    except (ValueError, KeyError, AttributeError) as exc:
        raise ExperimentError(f"preprocessing {preprocessing!r}: unknown torchvision weights ({exc})") from exc
    return int(tf.resize_size[0]), int(tf.crop_size[0])


def source_size_needed(grid: Sequence[Mapping[str, Any]]) -> tuple[int, str | None]:
    """Smallest stored image side that serves every model of a zoo grid at its own input size.

    Stored images are square (ImageNet: the centre square of the shorter-side resize, data layer,
    spec 4.1 "V"; COCO: the whole image resized to S x S); each model's transform resizes to its
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


def zoo_bases(zoo_testsets: Sequence[str], bases: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Bases whose follow-up sets the zoo runs (from the zoo's expanded test-set list)."""
    return [b for b, bcfg in bases.items() if any(t in zoo_testsets for t in base_testsets(b, bcfg))]
