"""The workflow's side of the study: follow-up test sets, per-zoo verdicts, tables, figures and
the checks A-H of metamorphic.md 7.4. Scripts under workflow/scripts/metamorphic_*.py are thin
adapters around the three entry points :func:`write_testsets`, :func:`zoo_verdicts` and
:func:`write_report`.

Test-set names (results/testsets/{dataset}/...): ``mm-{base}`` the source scenes with their
annotations, hidden instances and region R; ``mm-{base}-{colourset}`` the follow-up set
``[orig, obj-*, bg-*]`` stacked variant-major; ``mm-{base}-cf`` the counterfactual re-renders
(spec 7.1), k per source, stacked re-render-major.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from labelfree.data import digitscenes as ds
from labelfree.metamorphic import analysis as an
from labelfree.metamorphic import followups as fu
from labelfree.metamorphic import oracle as orc
from labelfree.metamorphic import regions as rg
from labelfree.seeds import derive_seed
from labelfree.store import read_image_set, read_logits, write_image_set

log = logging.getLogger(__name__)

ROLES = ("unbiased", "biased", "shortcut", "multilabel")


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


def base_testsets(base: str, bcfg: Mapping[str, Any]) -> list[str]:
    """The inferable test sets a base contributes: its follow-up sets and counterfactuals."""
    names = [followup_name(base, cs) for cs in bcfg["coloursets"]]
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
    for name, cols in custom.items():
        fu.colour_array(cols)
        if len(cols) % 2 == 0:
            raise ExperimentError(f"metamorphic.coloursets.{name}: an odd number of colours is needed")
    for base, bcfg in mm["testsets"].items():
        if not bcfg.get("split"):
            ds.check_options(bcfg["options"], f"metamorphic.testsets.{base}.options")
        for cs in bcfg["coloursets"]:
            fu.resolve_colourset(cs, custom)
    for zoo, zcfg in mm["zoos"].items():
        if zoo not in zoos:
            raise ExperimentError(f"metamorphic.zoos: zoo {zoo!r} is not configured under zoos:")
        if zcfg["main"] not in mm["testsets"]:
            raise ExperimentError(
                f"metamorphic.zoos.{zoo}.main: {zcfg['main']!r} is not one of metamorphic.testsets "
                f"{sorted(mm['testsets'])}"
            )
        uses_split = bool(mm["testsets"][zcfg["main"]].get("split"))
        if datasets[zoos[zoo]["dataset"]]["source"] != "digitscenes" and not uses_split:
            raise ExperimentError(
                f"metamorphic.zoos.{zoo}: its dataset {zoos[zoo]['dataset']!r} is not a digitscenes "
                "dataset and its main base names no `split` of it (config/paper/metamorphic-*.yaml)"
            )
    for key in ("rq1", "rq2", "rq4"):
        if mm[key]["base"] not in mm["testsets"]:
            raise ExperimentError(f"metamorphic.{key}.base: {mm[key]['base']!r} is not a test set")


def zoo_bases(zoo_testsets: Sequence[str], bases: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Bases whose follow-up sets the zoo runs (from the zoo's expanded test-set list)."""
    return [b for b, bcfg in bases.items() if any(t in zoo_testsets for t in base_testsets(b, bcfg))]


# --------------------------------------------------------------------------------------------
# test sets (rule mm_testsets_<dataset>)
# --------------------------------------------------------------------------------------------


def make_base(
    base: str, bcfg: Mapping[str, Any], mm: Mapping[str, Any], seed: int, split_path: str | None = None
) -> dict[str, np.ndarray]:
    """Source images of one base with the region R, its area ratio and has_region.

    DigitScenes bases are seeded by (seed, "metamorphic", base) only, so every dataset directory
    holds identical bytes. A base with ``split`` reads that split of the zoo's dataset instead
    (ImageNet/COCO through the data layer's boxes/masks; no hidden instances, no counterfactuals).
    """
    if bcfg.get("split"):
        if split_path is None:
            raise ExperimentError(f"metamorphic.testsets.{base}.split: no dataset split path given")
        s = read_image_set(split_path)
        arrays = {"x": s.x, "y": s.y, **{k: v for k, v in s.extras.items() if k in ("boxes", "masks")}}
        given_ratio = s.extras.get("area_ratio")
    else:
        opts = ds.check_options(bcfg["options"], f"metamorphic.testsets.{base}.options")
        arrays = ds.generate(opts["n"], derive_seed(seed, "metamorphic", base), opts, training=False)
        given_ratio = None
    h, w = arrays["x"].shape[1:3]
    mode = bcfg["region"]
    pad = mm["bbox_pad_px"] if mode == "box" else mm["mask_pad_px"]
    region = rg.regions_from_image_set(arrays, (h, w), mode, pad)
    # object size (spec 3): unpadded boxes (box mode) or the union mask (mask mode)
    unpadded = rg.regions_from_image_set(arrays, (h, w), mode, 0)
    arrays["region"] = region
    arrays["area_ratio"] = rg.area_ratio(unpadded) if given_ratio is None else given_ratio
    n = len(region)
    arrays.setdefault("defect", np.zeros(n, dtype=np.int8))
    arrays.setdefault("bg_family", np.full(n, -1, dtype=np.int64))
    arrays["has_region"] = region.reshape(len(region), -1).any(axis=1)
    return arrays


def write_testsets(
    dataset: str,
    bases: Mapping[str, Mapping[str, Any]],
    mm: Mapping[str, Any],
    seed: int,
    out_dir: str | Path,
    split_paths: Mapping[str, str] | None = None,
) -> list[Path]:
    """Write every base, follow-up and counterfactual set of ``bases`` under ``out_dir``
    (``split_paths``: base -> dataset split file, for bases that name a ``split``)."""
    out_dir = Path(out_dir)
    written = []
    custom = mm.get("coloursets", {})
    for base, bcfg in bases.items():
        a = make_base(base, bcfg, mm, seed, (split_paths or {}).get(base))
        x, y = a.pop("x"), a.pop("y")
        cf_x, cf_family = a.pop("cf_x", None), a.pop("cf_family", None)
        extras = dict(a)
        if cf_family is not None:
            extras["cf_family"] = cf_family
        p = out_dir / f"{base_name(base)}.npz"
        write_image_set(p, x, y, **extras)
        written.append(p)
        for cs in bcfg["coloursets"]:
            cols = fu.resolve_colourset(cs, custom)
            xs, variant, src = fu.make_followup_set(
                x, a["region"], cols, a["has_region"], reencode=mm["reencode"]
            )
            p = out_dir / f"{followup_name(base, cs)}.npz"
            write_image_set(p, xs, y[src], mm_variant=variant, mm_src=src)
            written.append(p)
            log.info("%s: %d follow-ups (%d colours) of %d sources", p, len(xs), len(cols), len(x))
        if cf_x is not None:
            k = cf_x.shape[1]
            xs = np.transpose(cf_x, (1, 0, 2, 3, 4)).reshape(-1, *x.shape[1:])
            src = np.tile(np.arange(len(x)), k)
            p = out_dir / f"{cf_name(base)}.npz"
            write_image_set(p, xs, y[src], mm_src=src, cf_family=cf_family.T.reshape(-1))
            written.append(p)
    return written


# --------------------------------------------------------------------------------------------
# verdicts (rule mm_verdicts_<zoo>)
# --------------------------------------------------------------------------------------------


def oracle_options(mm: Mapping[str, Any], model: str) -> orc.OracleOptions:
    """Oracle options of one model; the multi-label threshold follows ``ml_threshold_source``
    (``code`` or ``paper`` assignment, spec 4.2 / 9.1), else ``ml_threshold``."""
    table = mm["ml_thresholds"].get(mm["ml_threshold_source"], {})
    tau = float(table.get(model, mm["ml_threshold"]))
    return orc.OracleOptions(
        mr1_equal_certainty=mm["mr1_equal_certainty"],
        single_mr2_reference=mm["single_mr2_reference"],
        ml_threshold=tau,
        ml_threshold_cmp=mm["ml_threshold_cmp"],
        ml_certainty=mm["ml_certainty"],
        vote_k=mm["vote_k"] or None,
    )


def _probs(logits: np.ndarray, task: str) -> np.ndarray:
    return orc.softmax(logits) if task == "single" else orc.sigmoid(logits)


def _colour_subsets(colourset: str, custom: Mapping[str, Any]) -> dict[str, list[int]]:
    """Verdict sets computed from one follow-up set: itself, and c3 from a superset (RQ2)."""
    cols = fu.resolve_colourset(colourset, custom)
    out = {colourset: list(range(len(cols)))}
    main = fu.COLOURSETS["c3"]
    if colourset != "c3" and cols[: len(main)] == main:
        out[f"c3-from-{colourset}"] = list(range(len(main)))
    return out


def zoo_verdicts(
    zoo: str,
    role: str,
    sheet: pd.DataFrame,
    bases: Mapping[str, Mapping[str, Any]],
    base_paths: Mapping[str, str],
    infer: Mapping[tuple[str, str], str],
    mm: Mapping[str, Any],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Verdicts of every model of a zoo on every base and colour set (spec 2.6 algorithm).

    ``infer`` maps (test-set name, model) to its inference artefact. Returns (summary: one row per
    model x base x colour set in the authors' CSV layout plus oracle precision and counterfactual
    recall; per-image verdict table).
    """
    custom = mm.get("coloursets", {})
    rows: list[dict[str, Any]] = []
    images: list[pd.DataFrame] = []
    for base, bcfg in bases.items():
        src_set = read_image_set(base_paths[base])
        y = src_set.y
        task = "multi" if y.ndim == 2 else "single"
        ex = src_set.extras
        n = len(y)
        if "inst_masks" in ex:
            mr1_valid, mr2_valid = an.followup_validity(
                ex["region"], ex["inst_masks"], mm["validity_threshold"]
            )
        else:  # real data: validity needs the human check of RQ1 (spec 5)
            mr1_valid = mr2_valid = None
        defect = ex["defect"]
        for model in sheet["model"]:
            meta = sheet.set_index("model").loc[model]
            opt = oracle_options(mm, model)
            cf_stats: dict[str, Any] = {}
            if (cf_name(base), model) in infer:
                cf_logits = read_logits(infer[(cf_name(base), model)], cf_name(base))
                k = len(cf_logits) // n
                cf_pred = cf_logits.reshape(k, n, -1).argmax(axis=2).T
            else:
                cf_pred = None
            for cs in bcfg["coloursets"]:
                logits = read_logits(
                    infer[(followup_name(base, cs), model)], followup_name(base, cs)
                )
                n_col = len(fu.resolve_colourset(cs, custom))
                p = _probs(logits, task)
                p_s, p_o, p_b = orc.split_followup_outputs(p, n_col, n)
                for vname, idx in _colour_subsets(cs, custom).items():
                    v = orc.evaluate(task, p_s, p_o[:, idx], p_b[:, idx], y, ex["has_region"], opt)
                    row: dict[str, Any] = {
                        "zoo": zoo, "role": role, "model": model, "base": base, "colourset": vname,
                        "task": task, "width": int(meta["width"]), "epochs": int(meta["epochs"]),
                        "seed": int(meta["seed"]), "tau": opt.ml_threshold if task == "multi" else np.nan,
                    }
                    row.update(an.summary_row(v))
                    row.update(_precision_stats(v, mr1_valid, mr2_valid, defect))
                    if cf_pred is not None and task == "single":
                        bg_d, obj_d = an.counterfactual_drivers(cf_pred, ex["cf_family"], v.pred)
                        cf_stats = an.mr2_recall(v.mr2, v.correct, bg_d, obj_d)
                        row.update({f"cf_{k_}": val for k_, val in cf_stats.items()})
                    rows.append(row)
                    images.append(_image_table(zoo, model, base, vname, v, y, ex, mr1_valid, mr2_valid))
    summary = pd.DataFrame(rows)
    return summary, pd.concat(images, ignore_index=True) if images else pd.DataFrame()


def _bits(ok: np.ndarray) -> np.ndarray:
    return np.array(["".join("1" if b else "0" for b in r) for r in ok])


def _image_table(zoo, model, base, cs, v: orc.Verdicts, y, ex, mr1_valid, mr2_valid) -> pd.DataFrame:
    """Per-image verdict table (spec 1): ids, GT, prediction, certainty, per-colour bits, flags."""
    def enc(a):  # multi-hot -> bitmask integer
        a = np.asarray(a)
        return (a.astype(np.int64) << np.arange(a.shape[1])).sum(axis=1) if a.ndim == 2 else a
    return pd.DataFrame({
        "zoo": zoo, "model": model, "base": base, "colourset": cs, "id": np.arange(len(v)),
        "gt": enc(y), "pred": enc(v.pred), "correct": v.correct, "certainty": v.certainty,
        "mr1_bits": _bits(v.mr1_ok), "mr2_bits": _bits(v.mr2_ok),
        "mr1": v.mr1, "mr2": v.mr2, "mr12": v.mr12, "has_region": v.has_region,
        "area_ratio": ex["area_ratio"], "defect": ex["defect"],
        "bg_family": ex["bg_family"],
        "mr1_valid": mr1_valid if mr1_valid is not None else False,
        "mr2_valid": mr2_valid if mr2_valid is not None else False,
    })


def _precision_stats(v: orc.Verdicts, mr1_valid, mr2_valid, defect) -> dict[str, Any]:
    """Oracle precision from the hidden masks (spec 7.1, RQ1 analogue) and FP categories;
    NaN precision without hidden masks (real data: RQ1's human check)."""
    out: dict[str, Any] = {}
    if mr1_valid is None:
        for mr, flag in (("MR1", v.mr1), ("MR2", v.mr2)):
            k = int((flag & v.correct).sum())
            out.update({f"{mr}_flags": k, f"{mr}_cochran": an.cochran(k), f"{mr}_tp": np.nan,
                        f"{mr}_precision": np.nan, f"{mr}_fp_multiple": np.nan,
                        f"{mr}_fp_multiple_and_incomplete": np.nan, f"{mr}_fp_incomplete": np.nan,
                        f"{mr}_fp_other": np.nan})
        out["share_multiple_all"] = np.nan
        return out
    multiple = (defect & 1) > 0
    incomplete = (defect & 2) > 0
    for mr, flag, valid in (("MR1", v.mr1, mr1_valid), ("MR2", v.mr2, mr2_valid)):
        f = flag & v.correct
        k = int(f.sum())
        tp = int((f & valid).sum())
        inv = f & ~valid
        out[f"{mr}_flags"] = k
        out[f"{mr}_cochran"] = an.cochran(k)
        out[f"{mr}_tp"] = tp
        out[f"{mr}_precision"] = tp / k if k else np.nan
        out[f"{mr}_fp_multiple"] = int((inv & multiple).sum())
        out[f"{mr}_fp_multiple_and_incomplete"] = int((inv & multiple & incomplete).sum())
        out[f"{mr}_fp_incomplete"] = int((inv & incomplete & ~multiple).sum())
        out[f"{mr}_fp_other"] = int((inv & ~multiple & ~incomplete).sum())
    out["share_multiple_all"] = float(multiple[v.correct].mean()) if v.correct.any() else np.nan
    return out
