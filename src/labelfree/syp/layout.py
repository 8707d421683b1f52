"""What the `syp` rule file needs while Snakemake parses it: test-set names, oracle variants,
output names and the configuration checks (spec 5, 6).

Import-light on purpose (standard library only): parsing the Snakefile imports this module for
every `snakemake` invocation, so nothing here may pull in numpy-heavy layers, torch, scikit-learn
or matplotlib (issue 23, item 4; tests/workflow/test_parse_imports.py). :mod:`.study`,
:mod:`.experiment`, :mod:`.metasets`, :mod:`.indicators` and :mod:`.oracle` re-export these names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Column order of the indicator matrix (spec 2.4); FD must be last.
COLUMNS: tuple[str, ...] = ("H", "A", "std", "IE", "blur", "FD")

#: Test set copying the train split: FD reference and rotation head (spec 6.1).
REF = "syp-train"


def meta_names(count: int) -> list[str]:
    return [f"syp-meta-{k:03d}" for k in range(count)]


def rot_name(name: str) -> str:
    return "syp-rot-" + name.removeprefix("syp-")


@dataclass(frozen=True)
class ValidationPlan:
    """Names and groups of the validation sets (spec 6.4): clean, corrupted, natural."""

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
    (reference code's rule, spec 2.8)."""
    if lr is not None:
        return float(lr)
    return 0.1 if arch == "A" else 0.05


@dataclass(frozen=True)
class OracleConfig:
    """Training hyper-parameters (spec 2.8; config ``syp.oracle``)."""

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

    @property
    def base_lr(self) -> float:
        """0.1 for ORA-A and 0.05 for ORA-B unless given (reference code's rule)."""
        return base_lr(self.arch, self.lr)


def _tag(v: float) -> str:
    return f"{float(v):g}".replace(".", "p").replace("-", "m")


def fig10_variants(cfg: Mapping) -> dict[str, tuple[str, float]]:
    """Figure 10 (spec 5): ORA-A retrained over a grid of iterations (as passes over the M
    meta-sets; the paper's 5k-50k at M = 1,000 are passes 5-50) and of base learning rates, the
    other settings fixed. Variant name -> (oracle key, value); the configured default is ``ora_a``.
    """
    o = cfg["oracle"]
    base_passes = float(o["passes"])
    default_lr = base_lr("A", o["lr"])
    out: dict[str, tuple[str, float]] = {}
    for p in cfg["tables"].get("fig10_passes", []):
        key = "ora_a" if float(p) == base_passes else f"it{_tag(p)}"
        out[key] = ("passes", float(p))
    for lr in cfg["tables"].get("fig10_lr", []):
        key = "ora_a" if float(lr) == default_lr else f"lr{_tag(lr)}"
        out.setdefault(key, ("lr", float(lr)))
    return out


def variant_specs(cfg: Mapping) -> dict[str, dict]:
    """Oracle variants needed by Tables 1-5 (spec 5), as config overrides of ``syp.oracle``.

    ``ora_a`` (default oracle), ``ora_b`` (Table 1), ``ora_a_adj`` and ``ora_b_adj`` (Table 2:
    loss adjustment, and the ensemble of the two loss-adjusted oracles),
    ``ind_*`` (Table 3 cumulative indicator subsets), ``r{r}`` (Table 4 expansion ratios),
    ``no_norm`` (Table 5). The full six-indicator, r = 8, normalised oracle is ``ora_a`` itself.
    """
    base_r = int(cfg["oracle"]["expand"])
    specs: dict[str, dict] = {
        "ora_a": {"arch": "A"},
        "ora_b": {"arch": "B"},
        "ora_a_adj": {"arch": "A", "loss_adjust": True},
        "ora_b_adj": {"arch": "B", "loss_adjust": True},
    }
    for cols in cfg["tables"]["indicator_ablation"]:
        if tuple(cols) != COLUMNS:
            specs["ind_" + "".join(c.lower() for c in cols)] = {
                "arch": "A",
                "indicators": list(cols),
            }
    for r in cfg["tables"]["expand_grid"]:
        if int(r) != base_r:
            specs[f"r{int(r)}"] = {"arch": "A", "expand": int(r)}
    specs["no_norm"] = {"arch": "A", "normalise": False}
    for key, (param, value) in fig10_variants(cfg).items():
        if key != "ora_a":
            specs[key] = {"arch": "A", param: value}
    for spec in specs.values():
        spec.setdefault("norm_train_scope", cfg["norm_train_scope"])
    return specs


class StudyConfigError(ValueError):
    """The syp configuration cannot run; the message names the key at fault."""


#: What each split feeds (spec 6.1), for the overlap message.
SPLIT_ROLES = {
    "train": "FD reference and rotation head",
    "source": "meta-sets and ATC threshold",
    "holdout": "validation sets",
}


def check_splits(splits: Mapping, dataset: str) -> None:
    """Refuse overlapping train/source/holdout splits (issue 16; spec 6.1: the holdout is "never
    used for meta-training"). Distinct split names of one dataset are disjoint (pool partitions
    and official splits alike); a null holdout is carved out of the source by ``holdout_share``."""
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
    """Refuse a configuration the study cannot run (zoo, features, splits, test-set groups)."""
    zoo = cfg["zoo"]
    if zoo not in zoos:
        raise StudyConfigError(f"syp.zoo: zoo {zoo!r} is not configured under zoos")
    if "penultimate" not in zoos[zoo]["features"]:
        raise StudyConfigError(f"zoos.{zoo}.features must include 'penultimate' for syp")
    if zoos[zoo].get("feature_dtype", "auto") == "float16":
        raise StudyConfigError(
            f"zoos.{zoo}.feature_dtype is float16; syp needs float32 (or auto): float16 storage "
            "of the penultimate features moves its FD and Rotation scores and the tables built "
            "on them (issue 16; bench/results/syp_feature_precision.md)"
        )
    if zoos[zoo].get("amp", "auto") is True:
        raise StudyConfigError(
            f"zoos.{zoo}.amp is true; syp needs float32 inference (false or auto): float16 "
            "autocast moved most of its Table 1 on a GPU (issue 16; "
            "bench/results/gpu_checks_syp_autocast.md)"
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


def alternatives(names: Sequence[str]) -> str:
    """A wildcard regex matching exactly ``names`` (nothing when empty)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


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
