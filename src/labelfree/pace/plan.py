"""What the `pace` study runs for a configuration, decided while Snakemake parses the workflow.

The rule file ``workflow/rules/pace.smk`` makes one call, :func:`plan`, and reads everything
else from the :class:`Plan` it returns: the test-set groups the study registers (its input
pools), the subjects (model x pool), the experiments, the output names (``docs/outputs.md``)
and the final targets. :func:`skip_reason` says in one line why an enabled study cannot run on
the configured zoos (the workflow then skips it instead of stopping).

Parse-time code: standard library only (no numpy, pandas or torch), because every `snakemake`
invocation imports it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from labelfree.config import ConfigError, default_zoo_missing
from labelfree.outputs import POOLED, output_name

#: Test-set groups the study creates from the `id` set and needs its zoo to list.
PACE_GROUPS = ("pace_mutated", "pace_generated")
#: Inference features the study reads: FL (first layer) and LHL (last hidden layer).
PACE_FEATURES = ("first", "penultimate")

#: One job each. main: Tables 2-9 and 11; features: Fig. 4; alpha: Fig. 5; dims: Fig. 6;
#: reducers: Fig. 7; variants: Fig. 8 (paper, section 5).
EXPERIMENTS = ("main", "features", "alpha", "dims", "reducers", "variants")

#: output key of the report job -> stem; the files are <id>-<pace zoo>[-<detail>]
#: (``labelfree.outputs.output_name``); captions in workflow/report/pace/{tables,figures}/<stem>.rst
TABLES = {
    "table2_3": "table2-3",
    "best": "table2-3-best_counts",
    "table4": "table4",
    "table5": "table5",
    "table6": "table6",
    "table7": "table7",
    "table8": "table8-time",
    "table9": "table9",
    "table11": "table11",
    "fig4_table": "fig4",
    "fig5_table": "fig5",
    "fig6_table": "fig6",
    "fig7_table": "fig7",
    "fig8_table": "fig8",
    "conclusions": "extra-conclusions",
    "checks": "extra-checks",
}
FIGURES = {
    "fig_main": "table2-3",
    "fig4": "fig4",
    "fig5": "fig5",
    "fig6": "fig6",
    "fig7": "fig7",
    "fig8": "fig8",
}
#: Table 1 (the subjects), the cross-dataset table (Tables 2-5 over every run's zoo, scope
#: ``POOLED``) and Table 12 (CSS-COV, its own job).
SUBJECTS_STEM = "table1"
CROSS_STEM = "table2-5-cross_dataset"
CSS_COV_STEM = "table12"

#: The mutated pools (group ``pace_mutated``) and the generated pools without C&W.
MUTATED_POOLS = ("pace_patch", "pace_light")
GENERATED_POOLS = ("pace_fgsm", "pace_bim")
#: Config keys the experiment jobs do not depend on (report-only and Table 12's).
NOT_EXPERIMENT_KEYS = ("cross_dataset_runs", "css_cov", "jobs")


def skip_reason(
    cfg: Mapping[str, Any], user: Mapping[str, Any], prediction_zoos: Collection[str]
) -> str | None:
    """Why the enabled study cannot run on the configured zoos (one line), or None.

    ``cfg``: the validated config; ``user``: the study's config as the user wrote it;
    ``prediction_zoos``: names of the prediction zoos (arrays, no weights to run).
    """
    pace, zoos = cfg["pace"], cfg["zoos"]
    zoo = pace["zoo"]
    if zoo not in zoos:
        return default_zoo_missing("pace", zoo, user)
    if zoo in prediction_zoos:
        return (f"zoo {zoo!r} is a prediction zoo: PACE's experiments run its models on mutated "
                "and adversarial inputs they create, which needs weights (the answer's "
                "labelling plan runs PACE on any zoo)")
    have = set(zoos[zoo]["testsets"])
    need = [*PACE_GROUPS, "pace_pool" if pace["pool_shifts"] else "id"]
    groups = [g for g in need if g not in have]
    feats = [f for f in PACE_FEATURES if f not in zoos[zoo]["features"]]
    if groups or feats:
        return (f"zoo {zoo!r} lacks what PACE's experiments need: test sets {groups} (inputs PACE "
                f"builds from the id set) and features {feats}; list them in zoos.{zoo}."
                "testsets / features to run it")
    return None


def table_path(stem: str, zoo: str, ext: str = "csv") -> str:
    """results/pace/tables/<name>.<ext>, <name> from the stem and the scope (docs/outputs.md)."""
    return f"results/pace/tables/{output_name(stem, zoo)}.{ext}"


def figure_path(stem: str, zoo: str, ext: str = "png") -> str:
    """results/pace/figures/<name>.<ext> (docs/outputs.md)."""
    return f"results/pace/figures/{output_name(stem, zoo)}.{ext}"


@dataclass(frozen=True)
class Plan:
    """The study's jobs for one configuration (see :func:`plan`).

    ``cfg`` is the config's ``pace`` section. ``testset_groups``: the groups the study registers
    (a zoo sheet may name them even when the study is off). ``subjects``: one dict per
    classification subject (name ``model@testset``, model, testset, input_type, mutant,
    preprocessing); empty when the study is off, as are the other job lists.
    """

    cfg: Mapping[str, Any]
    enabled: bool
    zoo: str
    pool: str
    testset_groups: dict[str, list[str]]
    attack: dict[str, Any]
    cov_on: bool
    dataset: str = ""
    train_split: str = ""
    attack_model: str = ""
    attack_preprocessing: str = ""
    subjects: list[dict[str, Any]] = field(default_factory=list)
    cov_models: list[str] = field(default_factory=list)

    @property
    def cw_on(self) -> bool:
        """Whether the C&W L2 pool (Table 11) is built."""
        return "cw" in self.attack

    @property
    def cov(self) -> Mapping[str, Any]:
        return self.cfg["css_cov"]

    @property
    def experiment_cfg(self) -> dict[str, Any]:
        """The experiment jobs' parameters: the section without the keys they do not read, with
        the attack parameters as built (``cw`` only when on), so runs keep their parameters."""
        return {k: self.attack if k == "attack" else v for k, v in self.cfg.items()
                if k not in NOT_EXPERIMENT_KEYS}

    @property
    def css_cov_cfg(self) -> dict[str, Any]:
        """Table 12's parameters: the schedule of CSS and the budgets."""
        return {k: self.cfg[k] for k in ("budgets", "reps", "ces", "css")}

    @property
    def cov_subjects(self) -> list[str]:
        """The pool subjects that get CSS-COV (Table 12)."""
        return [f"{m}@{self.pool}" for m in self.cov_models]

    def table(self, stem: str, ext: str = "csv", scope: str | None = None) -> str:
        return table_path(stem, scope or self.zoo, ext)

    def figure(self, stem: str, ext: str = "png") -> str:
        return figure_path(stem, self.zoo, ext)

    def report_outputs(self, wrap: Callable[..., Any]) -> dict[str, Any]:
        """The report job's outputs: key -> csv or png, ``wrap``ped (Snakemake's ``report``,
        with caption and category), and key_md / key_pdf beside them."""
        out: dict[str, Any] = {}
        for key, stem in TABLES.items():
            out[key] = wrap(self.table(stem), caption=f"../report/pace/tables/{stem}.rst",
                            category="pace", subcategory="tables")
            out[f"{key}_md"] = self.table(stem, "md")
        for key, stem in FIGURES.items():
            out[key] = wrap(self.figure(stem), caption=f"../report/pace/figures/{stem}.rst",
                            category="pace", subcategory="figures")
            out[f"{key}_pdf"] = self.figure(stem, "pdf")
        return out

    def cross_inputs(self) -> list[str]:
        """This run's cross-dataset rows first, then those of every run in cross_dataset_runs."""
        others = [os.path.join(os.path.abspath(d), "results/pace/raw/cross_rows.csv")
                  for d in self.cfg["cross_dataset_runs"]]
        return ["results/pace/raw/cross_rows.csv", *others]

    def targets(self) -> list[str]:
        """The study's final tables and figures."""
        if not self.enabled:
            return []
        return [
            *(self.table(s) for s in TABLES.values()),
            self.table(CROSS_STEM, scope=POOLED),
            *(self.figure(s) for s in FIGURES.values()),
            self.table(SUBJECTS_STEM),
            *([self.table(CSS_COV_STEM)] if self.cov_on else []),
        ]


def _attack(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The attack parameters; they name C&W only when it is on (runs without it keep theirs)."""
    cw = dict(cfg["attack"].get("cw") or {})
    on = bool(cw.pop("enabled", False))
    return {k: v for k, v in cfg["attack"].items() if k != "cw"} | ({"cw": cw} if on else {})


def _groups(cfg: Mapping[str, Any], pool: str, attack: Mapping[str, Any],
            cov_on: bool) -> dict[str, list[str]]:
    """The test-set groups a zoo may list (the pace zoo lists all of them)."""
    return {
        "pace_pool": [] if pool == "id" else [pool],
        "pace_mutated": list(MUTATED_POOLS),
        "pace_generated": [*GENERATED_POOLS, *(["pace_cw"] if "cw" in attack else [])],
        "pace_train": ["pace_train"] if cov_on else [],
    }


def _zoo_testsets(tokens: list[str], groups: Mapping[str, list[str]]) -> list[str]:
    """A zoo's test sets: its `testsets` tokens with groups expanded, order kept, no repeats
    (as the workflow's ``zoo_testsets`` expands them)."""
    names: list[str] = []
    for token in tokens:
        names.extend(n for n in dict.fromkeys(groups.get(token, [token])) if n not in names)
    return names


def _attack_model(cfg: Mapping[str, Any], zoo: str, models: list[str],
                  mutants: set[str]) -> str:
    name = cfg["attack_model"] or ([m for m in models if m not in mutants] or [""])[0]
    if name not in models:
        raise ConfigError(f"pace.attack_model = {name!r} is not a model of zoo {zoo!r}")
    return name


def _subjects(cfg: Mapping[str, Any], zoo: str, pool: str, rows: list[dict[str, Any]],
              mutants: set[str], attack_model: str, testsets: list[str],
              groups: Mapping[str, list[str]]) -> list[dict[str, Any]]:
    """Classification subjects (paper Table 1; our digits analogue in docs/pace.md): every
    model on the pool; the non-mutant models (or ``pace.mutated_models``) on the mutated
    pools; the attack model on the generated pools."""
    for need in [pool, *groups["pace_mutated"], *groups["pace_generated"]]:
        if need not in testsets:
            raise ConfigError(f"zoo {zoo!r} must list test set {need!r} (groups pace_pool, "
                              "pace_mutated, pace_generated) in its `testsets`")
    prep = {str(r["model"]): str(r["preprocessing"]) for r in rows}
    models = list(prep)
    for bad in cfg["mutated_models"]:
        if bad not in prep:
            raise ConfigError(f"pace.mutated_models lists {bad!r}, not a model of zoo {zoo!r}")
    mutated = cfg["mutated_models"] or [m for m in models if m not in mutants]

    def subject(model: str, testset: str, input_type: str) -> dict[str, Any]:
        return {"name": f"{model}@{testset}", "model": model, "testset": testset,
                "input_type": input_type, "mutant": model in mutants,
                "preprocessing": prep[model]}

    return [
        *(subject(m, pool, "original") for m in models),
        *(subject(m, t, "mutated") for t in groups["pace_mutated"] for m in mutated),
        *(subject(attack_model, t, "generated") for t in groups["pace_generated"]),
    ]


def _cov_models(cov: Mapping[str, Any], zoo: str, models: list[str]) -> list[str]:
    """Models whose pool subject gets CSS-COV (Table 12): pace.css_cov.models, else all."""
    chosen = list(cov["models"] or models)
    bad = [m for m in chosen if m not in models]
    if bad:
        raise ConfigError(f"pace.css_cov.models lists {bad}, not models of zoo {zoo!r}")
    return chosen


def plan(config: Mapping[str, Any], enabled: bool, sheets: Mapping[str, Any],
         testset_groups: Mapping[str, list[str]]) -> Plan:
    """The study's plan for a validated ``config``.

    ``enabled``: whether the study runs (after the workflow's skip checks); ``sheets``: zoo ->
    its model sheet (rows with ``model``, ``preprocessing``, ``label_map``; anything with
    ``to_dict("records")``), in sheet order; ``testset_groups``: the groups registered before
    the study's (to expand the zoo's `testsets`). Raises ``ConfigError`` for a configuration the
    study cannot run; prints one line to stderr when Table 12 is skipped.
    """
    cfg = config["pace"]
    zoos = config["zoos"]
    zoo = cfg["zoo"]
    pool = "id" if cfg["pool_shifts"] == 0 else "pace_shifted"
    attack = _attack(cfg)
    # Table 12 (CSS-COV): LSA needs LHL activations on the training split, which inference
    # writes when the zoo lists the group `pace_train`; without it the table is skipped.
    cov = cfg["css_cov"]
    cov_on = enabled and cov["enabled"] and "pace_train" in zoos.get(zoo, {}).get("testsets", [])
    if enabled and cov["enabled"] and not cov_on:
        print(f"labelfree: pace Table 12 (CSS-COV) skipped: zoo {zoo!r} does not list the "
              "test-set group `pace_train` (the training split, for LSA); add it to its testsets "
              "or set pace.css_cov.enabled: false", file=sys.stderr)
    groups = _groups(cfg, pool, attack, cov_on)
    base = Plan(cfg=cfg, enabled=enabled, zoo=zoo, pool=pool, testset_groups=groups,
                attack=attack, cov_on=cov_on)
    if not enabled:
        return base
    if zoo not in sheets:
        raise ConfigError(f"pace.zoo = {zoo!r} is not a configured zoo ({sorted(zoos)}); add it "
                          "under `zoos:` or set pace.enabled: false")
    rows = sheets[zoo].to_dict("records")
    models = [str(r["model"]) for r in rows]
    mutants = {str(r["model"]) for r in rows if len(str(r["label_map"])) > 0}
    attacker = _attack_model(cfg, zoo, models, mutants)
    testsets = _zoo_testsets(list(zoos[zoo]["testsets"]), {**testset_groups, **groups})
    return Plan(
        cfg=cfg, enabled=enabled, zoo=zoo, pool=pool, testset_groups=groups, attack=attack,
        cov_on=cov_on, dataset=zoos[zoo]["dataset"], train_split=zoos[zoo]["train_split"],
        attack_model=attacker,
        attack_preprocessing=next(str(r["preprocessing"]) for r in rows
                                  if str(r["model"]) == attacker),
        subjects=_subjects(cfg, zoo, pool, rows, mutants, attacker, testsets, groups),
        cov_models=_cov_models(cov, zoo, models) if cov_on else [],
    )
