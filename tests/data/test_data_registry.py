"""The source registry, parse-time split checks, digitscenes hook, schema/code agreement."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from labelfree.data import digitscenes
from labelfree.data.base import DataError
from labelfree.data.registry import (
    SOURCES,
    build_dataset,
    needs_download,
    prepare_dataset,
    split_names,
)
from labelfree.seeds import derive_seed
from labelfree.store import read_image_set


def test_every_schema_source_is_registered(repo_root):
    schema = yaml.safe_load((repo_root / "config/schema/datasets.yaml").read_text())
    enum = schema["additionalProperties"]["properties"]["source"]["enum"]
    assert sorted(enum) == sorted(SOURCES)


def test_schema_option_defaults_match_code(repo_root):
    """Each source's option defaults are stated twice (schema for users, code for library use)."""
    schema = yaml.safe_load((repo_root / "config/schema/datasets.yaml").read_text())
    defs = schema["$defs"]

    def defaults(name):
        props = defs[name]["properties"]
        out = {}
        for k, v in props.items():
            if "$ref" in v:  # "#/$defs/image_options/properties/x"
                _, _, d, _, key = v["$ref"].split("/")
                v = defs[d]["properties"][key]
            out[k] = v["default"]
        return out

    pairs = {"digits": "digits_options", "mnist": "image_options", "cifar100": "cifar100_options",
             "imagenet_val": "imagenet_options", "coco": "coco_options"}  # fmt: skip
    for source, d in pairs.items():
        assert defaults(d) == dict(SOURCES[source].options), source


def test_split_names_checks():
    assert split_names("d", {"source": "digits", "splits": {"a": 0.5, "test": 0.5}}) == [
        "a",
        "test",
    ]
    with pytest.raises(DataError, match=r"datasets\.d\.test_split: value 'test'"):
        split_names("d", {"source": "digits", "splits": {"train": 1.0}})
    with pytest.raises(DataError, match="sum to at most 1"):
        split_names("d", {"source": "digits", "splits": {"train": 0.6, "test": 0.6}})
    with pytest.raises(DataError, match=r"unknown split\(s\) \['holdout'\]"):
        split_names("m", {"source": "mnist", "splits": {"holdout": 0.5, "test": 1.0}})
    assert split_names("s", {"source": "svhn", "splits": {"extra": 0.1, "test": 1.0}})
    assert needs_download({"source": "cifar10"}) and not needs_download({"source": "digits"})


def test_prepare_digits_writes_every_split(tmp_path):
    cfg = {"source": "digits", "splits": {"train": 0.5, "source": 0.25, "test": 0.25},
           "test_split": "test", "options": {"upscale": 2}}  # fmt: skip
    meta = prepare_dataset("dg", cfg, 3, tmp_path)
    sizes = {s: len(read_image_set(tmp_path / f"{s}.npz")) for s in ("train", "source", "test")}
    assert sizes == {"train": 899, "source": 449, "test": 449}
    assert meta["splits"]["test"]["shape"] == [16, 16, 1]
    assert sum(meta["splits"]["train"]["class_counts"]) == 899
    assert (tmp_path / "meta.json").exists()


def test_digitscenes_hook_contract(monkeypatch):
    """build(cfg, seed) gets the dataset entry and derive_seed(seed, 'data', name)."""
    seen = {}

    def build(cfg, seed):
        seen.update(cfg=cfg, seed=seed)
        x = np.zeros((4, 8, 8, 3), np.uint8)
        return {s: {"x": x, "y": np.arange(4), "boxes": np.zeros((4, 4))} for s in cfg["splits"]}

    monkeypatch.setattr(digitscenes, "build", build)
    cfg = {"source": "digitscenes", "splits": {"train": 0.5, "test": 0.5}}
    splits, info = build_dataset("scenes", cfg, 7)
    assert (
        seen["seed"] == derive_seed(7, "data", "scenes") and seen["cfg"]["splits"] == cfg["splits"]
    )
    assert sorted(splits) == ["test", "train"] and "boxes" in splits["test"].extras
    monkeypatch.setattr(digitscenes, "build", lambda cfg, seed: {"train": build(cfg, seed)["train"]})
    with pytest.raises(DataError, match=r"built splits \['train'\], config asks for"):
        build_dataset("scenes", cfg, 7)
