"""Paper-scale faithfulness (issue 16, metamorphic): ImageNet box padding, aspect ratio, per-model
input sizes and chunked follow-up sets. Each test names its source."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml
from PIL import Image

from labelfree.config import validate_config
from labelfree.data.imagenet import ImageNetVal, resize_keep_aspect
from labelfree.metamorphic import followups as fu
from labelfree.metamorphic import plan
from labelfree.metamorphic import run as ex
from labelfree.metamorphic.regions import RegionError
from labelfree.store import read_image_set, write_image_set, write_inference
from tests.voc import write_voc


@pytest.fixture
def wide_imagenet(tmp_path):
    """One 40 x 60 (h x w) image with two boxes, one near the right border."""
    img, box = tmp_path / "val", tmp_path / "bbox"
    img.mkdir()
    box.mkdir()
    rgb = np.random.default_rng(0).integers(0, 256, (40, 60, 3), dtype=np.uint8)
    Image.fromarray(rgb).save(img / "ILSVRC2012_val_00000001.png")
    write_voc(box / "ILSVRC2012_val_00000001.xml", "n01", 60, 40, [(20, 10, 30, 20), (50, 30, 58, 38)])
    return ImageNetVal(img, box), rgb


def _padded_by_hand(pad: int) -> np.ndarray:
    """Spec 2.1 steps 3-4 at original resolution (40 x 60), written out box by box."""
    m = np.zeros((40, 60), bool)
    for x0, y0, x1, y1 in [(20, 10, 30, 20), (50, 30, 58, 38)]:
        m[max(y0 - pad, 0) : min(y1 + pad, 40), max(x0 - pad, 0) : min(x1 + pad, 60)] = True
    return m


def test_imagenet_box_padding_applies_in_original_pixels(wide_imagenet, tmp_path):
    """Spec 2.1 step 4 (authors' handle_bbox.py: pad 5 px, clip) and 8.1 (pad clips at the
    border): at size 40 the 40 x 60 image is only centre-cropped (columns 10..49), so R is the
    hand-padded mask's columns 10..49. Before the fix ImageNet ran in mask mode with no pad."""
    ds, _ = wide_imagenet
    s = ds.materialise(size=40)
    split = tmp_path / "val.npz"
    write_image_set(split, s.x, s.y, **s.extras)
    study = {"bbox_pad_px": 5, "mask_pad_px": 0}
    a = ex.make_base("val", {"split": "val", "region": "box"}, study, 0, str(split))
    assert np.array_equal(a["region"][0], _padded_by_hand(5)[:, 10:50])
    assert np.array_equal(s.extras["masks"][0], _padded_by_hand(0)[:, 10:50])
    assert a["region"][0].sum() > s.extras["masks"][0].sum()  # the padding is on
    # area ratio: unpadded boxes over the original image (spec 3)
    assert a["area_ratio"][0] == pytest.approx(_padded_by_hand(0).mean())
    with pytest.raises(RegionError, match="bbox_pad_px would be silently ignored"):
        ex.make_base("val", {"split": "val", "region": "mask"}, study, 0, str(split))


def test_imagenet_keeps_aspect_ratio_like_torchvision(wide_imagenet):
    """Spec 4.1 geometry "V" / the stand-ins' eval transforms: shorter side to S, centre crop;
    identical to torchvision's Resize(S) + CenterCrop(S) on the PIL image, unlike a squash."""
    from torchvision.transforms import functional as tf

    _, rgb = wide_imagenet
    want = np.asarray(tf.center_crop(tf.resize(Image.fromarray(rgb), 20), 20))
    got = resize_keep_aspect(rgb, 20)
    assert np.array_equal(got, want)
    squash = np.asarray(Image.fromarray(rgb).resize((20, 20), Image.BILINEAR))
    assert not np.array_equal(got, squash)


def _paper_cfg(repo_root, **edits):
    cfg = yaml.safe_load((repo_root / "config" / "paper" / "metamorphic-imagenet.yaml").read_text())
    cfg = copy.deepcopy(cfg)
    for path, value in edits.items():
        node = cfg
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    full = validate_config(cfg, repo_root / "config" / "schema.yaml")
    return full["metamorphic"], full["zoos"], full["datasets"]


def test_input_sizes_come_from_the_weights_transforms(repo_root):
    """torchvision's weights transforms: Inception v3 resize 342 / crop 299, ResNet-50 256 / 224
    (torchvision.models docs); the store must be at least the largest resize of the zoo."""
    assert plan.weights_geometry("torchvision:Inception_V3_Weights.IMAGENET1K_V1") == (342, 299)
    assert plan.weights_geometry("torchvision:ResNet50_Weights.IMAGENET1K_V1") == (256, 224)
    assert plan.weights_geometry("imagenet") is None
    study, zoos, datasets = _paper_cfg(repo_root)
    assert plan.source_size_needed(zoos["metamorphic_imagenet"]["grid"]) == (342, "inception_v3")
    plan.check_config(study, zoos, datasets)  # the shipped paper config passes
    study, zoos, datasets = _paper_cfg(
        repo_root, **{"datasets.metamorphic_imagenet.options.size": 256})
    with pytest.raises(plan.ExperimentError, match="342 px that model 'inception_v3'"):
        plan.check_config(study, zoos, datasets)
    study, zoos, datasets = _paper_cfg(repo_root, **{"metamorphic.testsets.val.region": "mask"})
    with pytest.raises(plan.ExperimentError, match="ImageNet annotations are boxes"):
        plan.check_config(study, zoos, datasets)


def test_chunked_parts_hold_the_same_bytes_as_one_set(tmp_path):
    """Streaming (issue 16): chunks of 7 sources in 3 parts give, reassembled variant-major, the
    bytes of the in-memory follow-up set (spec 2.2 layout [orig, obj-*, bg-*]); images without a
    region keep their bytes in every variant (spec 2.1)."""
    r = np.random.default_rng(1)
    n = 23
    x = r.integers(0, 256, (n, 12, 12, 3), dtype=np.uint8)
    boxes = np.tile(np.array([2, 3, 9, 8]), (n, 1))
    boxes[4] = 0  # no annotation
    write_image_set(tmp_path / "split.npz", x, r.integers(0, 5, n), boxes=boxes)
    bcfg = {"split": "val", "region": "box", "coloursets": ["c3"], "parts": 3, "options": {}}
    study = {"bbox_pad_px": 1, "mask_pad_px": 0, "chunk": 7, "reencode": "none", "coloursets": {}}
    written = ex.write_testsets("d", {"b": bcfg}, study, 0, tmp_path / "ts", {"b": str(tmp_path / "split.npz")})
    assert [p.name for p in written] == ["metamorphic-b.npz"] + [f"metamorphic-b-c3-part{k:03d}.npz" for k in range(3)]
    base = read_image_set(tmp_path / "ts" / "metamorphic-b.npz")
    ref, _, _ = fu.make_followup_set(x, base.extras["region"], fu.COLOURSETS["c3"], base.extras["has_region"])
    parts = [read_image_set(p) for p in written[1:]]
    got = np.concatenate([p.x.reshape(7, -1, 12, 12, 3) for p in parts], axis=1).reshape(ref.shape)
    assert np.array_equal(got, ref)
    assert not base.extras["has_region"][4] and base.extras["has_region"].sum() == n - 1
    # logits of the parts reassemble to the one-set layout (V * N, K)
    infer = {}
    for t, p in zip(plan.followup_names("b", bcfg, "c3"), parts, strict=True):
        logit = np.stack([p.extras["metamorphic_variant"], p.extras["metamorphic_src"]], axis=1).astype(np.float32)
        path = tmp_path / "inf" / f"{t}.npz"
        write_inference(path, {t: {"logits": logit}})
        infer[(t, "m")] = str(path)
    whole = ex.followup_logits(infer, "b", bcfg, "c3", "m", 7)
    want = np.stack([np.repeat(np.arange(7), n), np.tile(np.arange(n), 7)], axis=1)
    assert np.array_equal(whole, want)


def test_stream_writer_matches_savez(tmp_path):
    """The streamed .npz reads back exactly (np.load) and row-chunk reads match."""
    a = np.arange(5 * 4 * 3, dtype=np.float32).reshape(5, 4, 3)
    with ex.NpzStreamWriter(tmp_path / "s.npz") as w:
        w.add("a", a, rows=2)
        w.add("s", np.int64(7))
    z = np.load(tmp_path / "s.npz")
    assert np.array_equal(z["a"], a) and int(z["s"]) == 7
    rows = ex.npz_rows(tmp_path / "s.npz")["a"]
    assert np.array_equal(rows[1:4], a[1:4]) and rows.shape == a.shape
    with pytest.raises(ex.ChunkedError, match="got 2 rows"), ex.NpzStreamWriter(tmp_path / "bad.npz") as w:
        w.add_chunks("a", (3, 2), np.uint8, [np.zeros((2, 2), np.uint8)])
    assert not (tmp_path / "bad.npz").exists()
