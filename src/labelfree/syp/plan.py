"""What the `syp` study runs for a config: test-set names, oracle variants, output names, the
configuration checks and the skip reason, and the precision its zoo's inference must keep.

Imported while Snakemake parses the workflow (one call, :func:`workflow_plan`, from
``workflow/rules/syp.smk``), so it imports the standard library and :mod:`labelfree.config` only:
no numpy, torch, scikit-learn or matplotlib.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from labelfree.config import default_zoo_missing
from labelfree.outputs import output_name

#: Column order of the indicator matrix (paper eq. 12 reordered as the authors' code does; FD
#: must be last because the normalisation treats it apart: docs/syp.md, reading R5).
COLUMNS: tuple[str, ...] = ("H", "A", "std", "IE", "blur", "FD")

#: Test set copying the train split: FD reference and rotation head (docs/syp.md, reading R11).
REF = "syp-train"

#: Test-set groups the study needs its zoo to list (``syp_rot`` too when the Rotation baseline
#: is on); the groups are registered by :func:`workflow_plan`.
SYP_GROUPS = ("id", "syp_ref", "syp_meta", "syp_val")

#: stems (docs/outputs.md) of the tables and figures; the files are
#: ``results/syp/{tables,figures}/<id>-<syp zoo>[-<detail>]``, captions
#: ``workflow/report/syp/{tables,figures}/<stem>.rst``
TABLE_NAMES = (
    "table1",
    "table2",
    "table3",
    "table4",
    "table5",
    "extra-tau_selection",
    "extra-predictions",
    "fig4-5",
    "fig10",
    "extra-checks",
)
FIGURE_NAMES = ("extra-scatter_val", "fig4-5", "fig6-7", "fig10")

#: The config keys each rule depends on (so unrelated syp keys do not rerun it).
RULE_KEYS = {
    "testsets": ("meta_sets", "validation", "rotation", "splits"),
    "indicators": ("atc_form", "blur_form", "image_form", "rotation", "splits"),
    "oracle": ("oracle", "norm_train_scope", "tables"),
    "tables": ("aggregate", "tables", "oracle"),
}


def meta_names(count: int) -> list[str]:
    return [f"syp-meta-{k:03d}" for k in range(count)]


def rot_name(name: str) -> str:
    return "syp-rot-" + name.removeprefix("syp-")


@dataclass(frozen=True)
class ValidationPlan:
    """Names and groups of the validation sets (docs/syp.md, reading R11): clean, corrupted,
    natural."""

    corruptions: tuple[str, ...]
    severity: int
    natural: int

    def names(self) -> list[str]:
        return [name for name, _ in self.entries()]

    def entries(self) -> list[tuple[str, str]]:
        """(test-set name, group) in the fixed order used by every table and figure."""
        out = [("syp-val-clean", "clean")]
        out += [(f"syp-val-c-{c.replace('_', '')}", "corrupted") for c in self.corruptions]
        out += [(f"syp-val-n{k:02d}", "natural") for k in range(self.natural)]
        return out


def validation_plan(cfg: Mapping) -> ValidationPlan:
    v = cfg["validation"]
    return ValidationPlan(tuple(v["corruptions"]), int(v["severity"]), int(v["natural"]))


def testset_names(cfg: Mapping) -> dict[str, list[str]]:
    """The test-set groups the study registers: syp_ref, syp_meta, syp_val, syp_rot."""
    ref, meta = [REF], meta_names(int(cfg["meta_sets"]["count"]))
    val = validation_plan(cfg).names()
    rot = [rot_name(n) for n in ref + meta + val] if cfg["rotation"] else []
    return {"syp_ref": ref, "syp_meta": meta, "syp_val": val, "syp_rot": rot}


def base_lr(arch: str, lr: float | None) -> float:
    """The oracle's base learning rate: ``lr`` when given, else 0.1 for ORA-A and 0.05 for ORA-B
    (the authors' code's rule per oracle type: docs/syp.md, reading R7)."""
    if lr is not None:
        return float(lr)
    return 0.1 if arch == "A" else 0.05


@dataclass(frozen=True)
class OracleConfig:
    """Training hyper-parameters of one oracle (config ``syp.oracle``; docs/syp.md, reading R7)."""

    arch: str = "A"
    expand: int = 8
    dropout: float | None = None
    passes: float = 30.0
    lr: float | None = None
    momentum: float = 0.9
    weight_decay: float = 5e-4
    decay_bias: bool = True
    poly_power: float = 0.9
    loss_adjust: bool = False
    low_acc_threshold: float = 0.3
    pos_weight: float = 3.0
    ora_a_init: str = "he"

    @property
    def base_lr(self) -> float:
        """0.1 for ORA-A and 0.05 for ORA-B unless given (the authors' code's rule)."""
        return base_lr(self.arch, self.lr)


def variant_tag(v: float) -> str:
    """A grid value as a name part: 0.05 -> ``0p05``, -1 -> ``m1``."""
    return f"{float(v):g}".replace(".", "p").replace("-", "m")


def fig10_variants(cfg: Mapping) -> dict[str, tuple[str, float]]:
    """Figure 10 (paper Section 4.2): ORA-A retrained over a grid of iterations (as passes over
    the M meta-sets; the paper's 5k-50k at M = 1,000 are passes 5-50) and of base learning rates,
    the other settings fixed (docs/syp.md, reading R13). Variant name -> (oracle key, value); the
    configured default is ``ora_a``.
    """
    o = cfg["oracle"]
    base_passes = float(o["passes"])
    default_lr = base_lr("A", o["lr"])
    out: dict[str, tuple[str, float]] = {}
    for p in cfg["tables"].get("fig10_passes", []):
        key = "ora_a" if float(p) == base_passes else f"it{variant_tag(p)}"
        out[key] = ("passes", float(p))
    for lr in cfg["tables"].get("fig10_lr", []):
        key = "ora_a" if float(lr) == default_lr else f"lr{variant_tag(lr)}"
        out.setdefault(key, ("lr", float(lr)))
    return out


def ablation_key(cols: Sequence[str]) -> str:
    """The oracle variant of one indicator subset of Table 3 (``ora_a`` for all six)."""
    return "ora_a" if tuple(cols) == COLUMNS else "ind_" + "".join(c.lower() for c in cols)


def variant_overrides(cfg: Mapping) -> dict[str, dict]:
    """Oracle variants needed by Tables 1-5 and Figure 10, as overrides of ``syp.oracle``.

    ``ora_a`` (default oracle), ``ora_b`` (Table 1), ``ora_a_adj`` and ``ora_b_adj`` (Table 2:
    loss adjustment, and the ensemble of the two loss-adjusted oracles),
    ``ind_*`` (Table 3 cumulative indicator subsets), ``r{r}`` (Table 4 expansion ratios),
    ``no_norm`` (Table 5). The full six-indicator, r = 8, normalised oracle is ``ora_a`` itself.
    """
    base_r = int(cfg["oracle"]["expand"])
    out: dict[str, dict] = {
        "ora_a": {"arch": "A"},
        "ora_b": {"arch": "B"},
        "ora_a_adj": {"arch": "A", "loss_adjust": True},
        "ora_b_adj": {"arch": "B", "loss_adjust": True},
    }
    for cols in cfg["tables"]["indicator_ablation"]:
        if tuple(cols) != COLUMNS:
            out[ablation_key(cols)] = {"arch": "A", "indicators": list(cols)}
    for r in cfg["tables"]["expand_grid"]:
        if int(r) != base_r:
            out[f"r{int(r)}"] = {"arch": "A", "expand": int(r)}
    out["no_norm"] = {"arch": "A", "normalise": False}
    for key, (param, value) in fig10_variants(cfg).items():
        if key != "ora_a":
            out[key] = {"arch": "A", param: value}
    for overrides in out.values():
        overrides.setdefault("norm_train_scope", cfg["norm_train_scope"])
    return out


class StudyConfigError(ValueError):
    """The syp configuration cannot run; the message names the key at fault."""


#: What each split feeds (docs/syp.md, reading R11), for the overlap message.
SPLIT_ROLES = {
    "train": "FD reference and rotation head",
    "source": "meta-sets and ATC threshold",
    "holdout": "validation sets",
}


def check_splits(splits: Mapping, dataset: str) -> None:
    """Refuse overlapping train/source/holdout splits (the holdout is never used for
    meta-training: docs/syp.md, reading R11). Distinct split names of one dataset are disjoint
    (pool partitions and official splits alike); a null holdout is carved out of the source by
    ``holdout_share``."""
    hold, share = splits.get("holdout"), splits.get("holdout_share")
    if hold is None and share is None:
        raise StudyConfigError(
            "syp.splits: holdout is null and holdout_share is not set; name a holdout split or "
            "carve one out of the source split with holdout_share"
        )
    if hold is not None and share is not None:
        raise StudyConfigError(
            f"syp.splits: give either holdout ({hold!r}) or holdout_share ({share}), not both"
        )
    named = {r: splits[r] for r in ("train", "source", "holdout") if splits.get(r) is not None}
    roles = list(named)
    for i, a in enumerate(roles):
        for b in roles[i + 1 :]:
            if named[a] == named[b]:
                raise StudyConfigError(
                    f"syp.splits: {a} and {b} are both split {named[a]!r} of dataset "
                    f"{dataset!r}, so the {SPLIT_ROLES[a]} and the {SPLIT_ROLES[b]} would share "
                    "images and the accuracy predictor would be scored on what it was fitted on; "
                    "use disjoint splits (or holdout: null with holdout_share to carve the holdout "
                    "out of the source split)"
                )


def check_config(
    cfg: Mapping, zoos: Mapping, datasets: Mapping, zoo_testsets: Sequence[str]
) -> None:
    """Refuse a configuration the study cannot run (zoo, features, precision, splits, test-set
    groups); the precision rules are docs/syp.md, reading R14."""
    zoo = cfg["zoo"]
    if zoo not in zoos:
        raise StudyConfigError(f"syp.zoo: zoo {zoo!r} is not configured under zoos")
    if "penultimate" not in zoos[zoo]["features"]:
        raise StudyConfigError(f"zoos.{zoo}.features must include 'penultimate' for syp")
    if zoos[zoo].get("feature_dtype", "auto") == "float16":
        raise StudyConfigError(
            f"zoos.{zoo}.feature_dtype is float16; syp needs float32 (or auto): float16 storage "
            "of the penultimate features moves its FD and Rotation scores and the tables built "
            "on them (docs/syp.md, reading R14)"
        )
    if zoos[zoo].get("amp", "auto") is True:
        raise StudyConfigError(
            f"zoos.{zoo}.amp is true; syp needs float32 inference (false or auto): float16 "
            "autocast moved most of its Table 1 on a GPU (docs/syp.md, reading R14)"
        )
    ds = zoos[zoo]["dataset"]
    check_splits(cfg["splits"], ds)
    if datasets[ds]["test_split"] != cfg["splits"]["source"]:
        raise StudyConfigError(
            f"datasets.{ds}.test_split is {datasets[ds]['test_split']!r}; syp needs it to be "
            f"syp.splits.source ({cfg['splits']['source']!r}), the meta-set source"
        )
    have = set(zoo_testsets)
    groups = testset_names(cfg)
    missing = [g for g, names in groups.items() if names and not set(names) <= have]
    if missing or "id" not in have:
        raise StudyConfigError(
            f"zoos.{zoo}.testsets must list id and {missing or list(groups)} for syp"
        )


def skip_reason(
    cfg: Mapping[str, Any], user: Mapping[str, Any], prediction_zoos: Collection[str]
) -> str | None:
    """Why the enabled study cannot run on the configured zoos (one line), or None.

    ``cfg``: the validated config; ``user``: the ``syp`` config as the user wrote it;
    ``prediction_zoos``: names of the prediction zoos. A zoo named explicitly but absent from
    ``zoos`` is not a skip: :func:`check_config` refuses it (a typo).
    """
    syp, zoos = cfg["syp"], cfg["zoos"]
    zoo = syp["zoo"]
    if zoo not in zoos:
        return default_zoo_missing("syp", zoo, user)
    if zoo in prediction_zoos:
        return (
            f"zoo {zoo!r} is a prediction zoo: SYP runs its models on meta-sets and "
            "validation sets it builds from images, which needs weights"
        )
    have = set(zoos[zoo]["testsets"])
    groups = [g for g in (*SYP_GROUPS, *(["syp_rot"] if syp["rotation"] else [])) if g not in have]
    feats = [] if "penultimate" in zoos[zoo]["features"] else ["penultimate"]
    if groups or feats:
        return (
            f"zoo {zoo!r} lacks what SYP needs: test sets {groups} (meta-sets and validation "
            f"sets SYP builds from the dataset) and features {feats}; list them in "
            f"zoos.{zoo}.testsets / features to run it"
        )
    return None


def _is_syp_zoo(cfg: Mapping[str, Any], zoo: str) -> bool:
    syp = cfg.get("syp", {}) or {}
    return bool(syp.get("enabled", True)) and syp.get("zoo", "syp") == zoo


def feature_dtype(cfg: Mapping[str, Any], zoo: str) -> str:
    """Storage precision of a zoo's features: ``zoos.<zoo>.feature_dtype``, where ``auto`` is
    float32 for the zoo of an enabled syp study and float16 otherwise (float16 storage moves
    syp's FD and Rotation scores and its tables: docs/syp.md, reading R14).
    """
    want = cfg["zoos"][zoo].get("feature_dtype", "auto")
    if want != "auto":
        return str(want)
    return "float32" if _is_syp_zoo(cfg, zoo) else "float16"


def autocast(cfg: Mapping[str, Any], zoo: str) -> bool:
    """Whether a zoo's inference runs under float16 autocast on CUDA: ``zoos.<zoo>.amp``, where
    ``auto`` is ``inference.amp`` except for the zoo of an enabled syp study, which runs in
    float32 (autocast moved 79 of 100 Table 1 cells on an H100: docs/syp.md, reading R14).
    Ignored on CPU.
    """
    want = cfg["zoos"][zoo].get("amp", "auto")
    if want != "auto":
        return bool(want)
    if _is_syp_zoo(cfg, zoo):
        return False
    return bool((cfg.get("inference", {}) or {}).get("amp", True))


def alternatives(names: Sequence[str]) -> str:
    """A wildcard regex matching exactly ``names`` (nothing when empty)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


@dataclass(frozen=True)
class WorkflowPlan:
    """What ``workflow/rules/syp.smk`` declares for one config.

    ``groups``: test-set group -> names; ``kinds``: indicator-table set -> ``meta`` | ``val``
    (meta-sets first, then validation sets: the row order of every indicator table);
    ``infer_sets``: every set the classifiers run on; ``raw``: the per-model artefact folder;
    ``tables`` / ``figures``: stem -> file; ``parts``: rule -> the config keys it depends on.
    """

    cfg: Mapping[str, Any]
    zoo: str
    groups: dict[str, list[str]]
    variants: list[str]
    kinds: dict[str, str]
    infer_sets: list[str]
    raw: str
    tables: dict[str, str]
    figures: dict[str, str]
    parts: dict[str, dict[str, Any]]

    def targets(self) -> list[str]:
        """The study's final files (its part of the workflow's default target)."""
        return list(self.tables.values()) + list(self.figures.values())


def workflow_plan(
    cfg: Mapping[str, Any],
    zoos: Mapping[str, Any],
    datasets: Mapping[str, Any],
    testset_groups: MutableMapping[str, list[str]],
    zoo_testsets: Callable[[str], Sequence[str]],
    enabled: bool,
) -> WorkflowPlan:
    """The study's plan for the workflow, from the ``syp`` config.

    Registers the study's test-set groups in ``testset_groups`` (even when the study is disabled,
    so zoo sheets naming the groups stay valid), then, when ``enabled``, checks the config with
    :func:`check_config` on the zoo's test sets as ``zoo_testsets`` expands them (raises
    :class:`StudyConfigError`).
    """
    zoo = cfg["zoo"]
    groups = testset_names(cfg)
    testset_groups.update(groups)
    if enabled:
        check_config(cfg, zoos, datasets, zoo_testsets(zoo) if zoo in zoos else [])
    kinds = {n: "meta" for n in groups["syp_meta"]} | {n: "val" for n in groups["syp_val"]}
    return WorkflowPlan(
        cfg=cfg,
        zoo=zoo,
        groups=groups,
        variants=list(variant_overrides(cfg)),
        kinds=kinds,
        infer_sets=groups["syp_ref"] + list(kinds) + groups["syp_rot"],
        raw=f"results/syp/raw/{zoo}",
        tables={k: f"results/syp/tables/{output_name(k, zoo)}.csv" for k in TABLE_NAMES},
        figures={k: f"results/syp/figures/{output_name(k, zoo)}.png" for k in FIGURE_NAMES},
        parts={rule: {k: cfg[k] for k in keys} for rule, keys in RULE_KEYS.items()},
    )
