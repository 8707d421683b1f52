"""Feature storage precision (issue 16, SYP bullet 4): float16 storage moves syp's FD and Rotation
scores and tables built on them (bench/results/syp_feature_precision.md, measured on the default
run), so a zoo can store float32 features (zoos.<zoo>.feature_dtype) and `auto` gives the syp
zoo float32. A float16 file holds exactly the float32 features cast by numpy (round to nearest
even), so the two files differ by the cast alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from labelfree.inference import InferenceError, infer_group
from labelfree.store import ArtefactError, load_npz, read_features, write_image_set, write_inference
from labelfree.syp.plan import StudyConfigError, autocast, check_config, feature_dtype
from labelfree.zoo.arch import build_model
from labelfree.zoo.io import save_model


def test_infer_group_stores_float32_features_on_request(tmp_path):
    x = np.random.default_rng(0).integers(0, 256, (40, 8, 8, 1), dtype=np.uint8)
    write_image_set(tmp_path / "id.npz", x, np.zeros(40, dtype=np.int64))
    torch.manual_seed(0)
    d = tmp_path / "zoo" / "m"
    save_model(d, build_model("lenet", (8, 8, 1), 10, 4, 1).eval(),
               {"model": "m", "arch": "lenet", "width": 4, "depth": 1, "num_classes": 10,
                "input_shape": [8, 8, 1], "preprocessing": "scale01", "family": "local"})
    out = {}
    for dt in ("float16", "float32"):
        out[dt] = tmp_path / f"{dt}.npz"
        infer_group([d], [("id", tmp_path / "id.npz")], [out[dt]], features=("penultimate",),
                    device="cpu", feature_dtype=dt)
    raw = {dt: load_npz(p)["feat_penultimate.id"] for dt, p in out.items()}
    assert raw["float16"].dtype == np.float16 and raw["float32"].dtype == np.float32
    np.testing.assert_array_equal(raw["float32"].astype(np.float16), raw["float16"])
    assert not np.array_equal(read_features(out["float32"], "penultimate", "id"),
                              read_features(out["float16"], "penultimate", "id"))
    with pytest.raises(InferenceError, match="float16' or 'float32'"):
        infer_group([d], [("id", tmp_path / "id.npz")], [tmp_path / "x.npz"], device="cpu",
                    feature_dtype="bfloat16")
    with pytest.raises(ArtefactError, match="not float16 or float32"):
        write_inference(tmp_path / "y.npz", {"id": {"logits": np.zeros((1, 2))}}, "float64")


def test_auto_gives_the_syp_zoo_float32():
    cfg = {"zoos": {"syp": {}, "laf": {"feature_dtype": "auto"}, "own": {"feature_dtype": "float32"},
                    "half": {"feature_dtype": "float16"}},
           "syp": {"enabled": True, "zoo": "syp"}}
    assert {z: feature_dtype(cfg, z) for z in cfg["zoos"]} == {
        "syp": "float32", "laf": "float16", "own": "float32", "half": "float16"}
    assert feature_dtype({**cfg, "syp": {"enabled": False, "zoo": "syp"}}, "syp") == "float16"
    assert feature_dtype({**cfg, "syp": {"enabled": True, "zoo": "laf"}}, "laf") == "float32"


def test_syp_refuses_a_float16_zoo():
    cfg = {"zoo": "syp", "splits": {"train": "train", "source": "source", "holdout": "holdout"}}
    zoos = {"syp": {"dataset": "d", "features": ["penultimate"], "feature_dtype": "float16"}}
    with pytest.raises(StudyConfigError, match="zoos.syp.feature_dtype is float16; syp needs"):
        check_config(cfg, zoos, {"d": {"test_split": "source"}}, [])


def test_auto_runs_the_syp_zoo_without_autocast():
    """syp.plan.autocast: `auto` follows inference.amp, except the syp zoo, which runs in
    float32 (autocast moved 79 of 100 Table 1 cells on an H100,
    bench/results/gpu_checks_syp_autocast.md); an explicit value wins."""
    cfg = {"zoos": {"syp": {}, "laf": {"amp": "auto"}, "off": {"amp": False}, "on": {"amp": True}},
           "syp": {"enabled": True, "zoo": "syp"}, "inference": {"amp": True}}
    assert {z: autocast(cfg, z) for z in cfg["zoos"]} == {
        "syp": False, "laf": True, "off": False, "on": True}
    assert autocast({**cfg, "syp": {"enabled": False, "zoo": "syp"}}, "syp") is True
    assert autocast({**cfg, "inference": {"amp": False}}, "laf") is False


def test_syp_refuses_a_zoo_with_autocast():
    cfg = {"zoo": "syp", "splits": {"train": "train", "source": "source", "holdout": "holdout"}}
    zoos = {"syp": {"dataset": "d", "features": ["penultimate"], "amp": True}}
    with pytest.raises(StudyConfigError, match="zoos.syp.amp is true; syp needs float32"):
        check_config(cfg, zoos, {"d": {"test_split": "source"}}, [])
