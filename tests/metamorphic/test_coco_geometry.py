"""COCO per-model input sizes (issue 16, metamorphic bullet 3; spec 4.2): TResNet-L sees 448 x 448
and TResNet-XL 640 x 640 ("resize to 448x448 (no crop, aspect ignored), [0,1], no mean/std"),
the DeepInspect ResNet-50 "shorter side 256, centre crop 224, ImageNet mean/std". The paper
config names them as preprocessing geometry suffixes (labelfree.zoo.geometry) applied at
inference; the reference for the resampling is PIL's bilinear resize, which the ASL pipeline and
torchvision's PIL transforms use.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import yaml
from PIL import Image

from labelfree.config import validate_config
from labelfree.metamorphic import plan
from labelfree.zoo.geometry import GeometryError, split_geometry
from labelfree.zoo.preprocess import PreprocessError, check_kind, preprocess
from labelfree.zoo.sheet import build_sheet


def test_split_geometry():
    assert split_geometry("scale01") == ("scale01", None)
    assert split_geometry("scale01@640") == ("scale01", (640, None))
    assert split_geometry("imagenet@256/224") == ("imagenet", (256, 224))
    for bad in ("scale01@", "scale01@0", "scale01@224/256", "scale01@a", "@448"):
        with pytest.raises(GeometryError):
            split_geometry(bad)
    with pytest.raises(PreprocessError, match="goes after one of"):
        check_kind("bogus@224")


def _pil(img: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """PIL bilinear resize to (width, height), the ASL/torchvision-PIL reference."""
    return np.asarray(Image.fromarray(img).resize(size, Image.BILINEAR), dtype=np.float64)


def test_squash_matches_pil_and_ignores_aspect():
    img = np.random.default_rng(0).integers(0, 256, (37, 53, 3), dtype=np.uint8)
    got = preprocess(img[None], "scale01@16")[0].permute(1, 2, 0).numpy() * 255
    assert got.shape == (16, 16, 3)  # 37 x 53 -> 16 x 16: aspect ignored
    assert np.abs(got - _pil(img, (16, 16))).max() <= 1.0 + 1e-4  # rounding of one 8-bit level


def test_shorter_side_then_centre_crop_matches_pil():
    img = np.random.default_rng(1).integers(0, 256, (30, 45, 3), dtype=np.uint8)
    got = preprocess(img[None], "imagenet@16/12")[0]
    mean = torch.tensor((0.485, 0.456, 0.406)).view(3, 1, 1)
    std = torch.tensor((0.229, 0.224, 0.225)).view(3, 1, 1)
    pixels = ((got * std + mean) * 255).permute(1, 2, 0).numpy()
    # shorter side 30 -> 16: 45 * 16 // 30 = 24 wide; centre crop 12 x 12 at rows 2, columns 6
    ref = _pil(img, (24, 16))[2:14, 6:18]
    assert pixels.shape == (12, 12, 3)
    assert np.abs(pixels - ref).max() <= 1.0 + 1e-3


def _coco_cfg(repo_root, **edits):
    cfg = copy.deepcopy(yaml.safe_load(
        (repo_root / "config" / "paper" / "metamorphic-coco.yaml").read_text()))
    for path, value in edits.items():
        node = cfg
        *keys, last = path.split(".")
        for k in keys:
            node = node[k]
        node[last] = value
    return cfg


def test_coco_paper_config_gives_each_model_its_input_size(repo_root):
    cfg = _coco_cfg(repo_root)
    rows = cfg["zoos"]["metamorphic_coco"]["grid"] + cfg["zoos"]["metamorphic_coco_r50"]["grid"]
    preps = {r["model"]: r["preprocessing"] for r in rows}
    assert {m: plan.weights_geometry(p) for m, p in preps.items()} == {
        "resnet50_coco": (256, 224), "tresnet_l": (448, 448), "tresnet_xl": (640, 640)}
    assert plan.source_size_needed(cfg["zoos"]["metamorphic_coco"]["grid"]) == (640, "tresnet_xl")
    assert plan.source_size_needed(cfg["zoos"]["metamorphic_coco_r50"]["grid"]) == (
        256, "resnet50_coco")
    # the zoo sheet accepts the suffixes (checkpoint files are checked elsewhere)
    grid = [{k: v for k, v in r.items() if k != "weights"} | {"source": "hub", "weights": "x"}
            for r in rows]
    sheet = build_sheet("metamorphic_coco", {"grid": grid}, repo_root)
    assert sheet["preprocessing"].tolist() == list(preps.values())
    full = validate_config(cfg, repo_root / "config" / "schema.yaml")
    plan.check_config(full["metamorphic"], full["zoos"], full["datasets"])
    small = validate_config(_coco_cfg(repo_root, **{"datasets.metamorphic_coco.options.size": 448}),
                            repo_root / "config" / "schema.yaml")
    with pytest.raises(plan.ExperimentError, match="640 px that model 'tresnet_xl'"):
        plan.check_config(small["metamorphic"], small["zoos"], small["datasets"])
