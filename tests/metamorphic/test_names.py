"""The metamorphic study has one name, and its renamed entries keep their draws.

The shipped zoos and datasets were ``mm_*`` when the default and smoke runs were drawn; they are
``metamorphic_*`` now, and ``labelfree.seeds.FORMER_NAMES`` keeps the seeds of the former
names (docs/metamorphic.md, "Names"; docs/data.md, "Seeds").
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from labelfree.metamorphic.report import rq1_annotation
from labelfree.seeds import FORMER_NAMES, derive_seed, rng, seed_name

REPO = Path(__file__).resolve().parents[2]
CONFIGS = [REPO / "config" / "config.yaml", REPO / ".test" / "config" / "config.yaml",
           REPO / "config" / "small-scale.yaml", *sorted((REPO / "config" / "paper").glob("*.yaml"))]

# derive_seed(0, "data", former name) and derive_seed(0, former name, "val") as main drew them
# before the rename (the second is the `val_seed` in every meta.json of the default run's zoos)
DRAWN = {
    "metamorphic_unbiased": (639787010, 3552751916),
    "metamorphic_biased": (1325247977, 2878423993),
    "metamorphic_shortcut": (2796468797, 1154214272),
    "metamorphic_multilabel": (2047864063, 203611386),
    "metamorphic_imagenet": (3169413568, 2667860201),
    "metamorphic_coco": (1621883859, 2852426376),
    "metamorphic_coco_r50": (1059849137, 2682749719),
}


@pytest.mark.parametrize("name", sorted(DRAWN))
def test_a_renamed_entry_draws_its_former_seeds(name):
    data, val = DRAWN[name]
    assert derive_seed(0, "data", name) == data  # a dataset's partition or scenes
    assert derive_seed(0, name, "val") == val    # a zoo's validation split
    assert rng(0, "data", name).integers(2**31) == rng(0, "data", FORMER_NAMES[name]).integers(2**31)


def test_names_without_a_former_name_are_themselves():
    assert seed_name("digits") == "digits" and seed_name(3) == "3"
    assert derive_seed(0, "data", "metamorphic_unbiased") != derive_seed(0, "data", "digits")
    # the row applies to whole names only, in any position
    assert derive_seed(0, "data", "metamorphic_unbiased_2") != DRAWN["metamorphic_unbiased"][0]
    assert derive_seed(0, "metamorphic_rq1", "metamorphic_biased", "m", "MR-1") == 830962114


def _entries(cfg: dict) -> dict[str, set[str]]:
    study = cfg.get("metamorphic") or {}
    return {"datasets": set(cfg.get("datasets") or {}), "zoos": set(cfg.get("zoos") or {}),
            "metamorphic.zoos": set(study.get("zoos") or {})}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(REPO)))
def test_shipped_configs_use_one_name_and_keep_every_draw(path):
    """No entry of a shipped config keeps a former name (one name for the study; a former name
    next to its new one would share its stream), and every study entry has its former-name row
    (a row lost or misspelt redraws the study)."""
    text = path.read_text()
    assert not re.search(r"\bmm_", text), path
    for kind, names in _entries(yaml.safe_load(text)).items():
        assert not names & set(FORMER_NAMES.values()), (path, kind)
        study = {n for n in names if n.startswith("metamorphic_")}
        assert study <= set(FORMER_NAMES), (path, kind, study - set(FORMER_NAMES))


def test_rq1_sample_is_drawn_from_the_former_stream():
    """rq1_annotation draws each (zoo, model, MR) sample from derive_seed(seed,
    "metamorphic_rq1", ...), i.e. the former "mm_rq1" stream: the sample equals that stream's."""
    n = 40
    images = pd.DataFrame({"zoo": "metamorphic_biased", "base": "rho09", "colourset": "c3",
                           "model": "m", "id": np.arange(n), "mr1": True, "mr2": False,
                           "correct": True, "gt": 1, "pred": 1, "certainty": 0.9,
                           "area_ratio": 0.1})
    cfg = {"zoos": {"metamorphic_biased": {"role": "biased", "main": "rho09"}},
           "rq1": {"base": "rho09", "z": 1.96, "e": 0.1, "seed": 0}, "colourset_main": "c3"}
    sizes, rows = rq1_annotation(images, pd.DataFrame(), cfg)
    k = int(sizes.loc[sizes["MR"] == "MR-1", "cochran_sample"].iloc[0])
    gen = np.random.default_rng(derive_seed(0, "mm_rq1", "mm_biased", "m", "MR-1"))
    assert 0 < k < n
    assert rows.loc[rows["MR"] == "MR-1", "id"].tolist() == sorted(gen.choice(n, size=k, replace=False))
