"""Follow-ups filled at original resolution, then resized (issue 16, metamorphic item 2; spec 2.2
"Where to mutate: at original resolution, before any model-specific resize"), and COCO's ResNet-50
on a store that keeps the aspect ratio (item 1; spec 4.2: "shorter side 256, centre crop 224").

References are PIL's bilinear resize (the data layer's) and torchvision's Resize + CenterCrop,
applied by hand to a hand-filled original; each test names what it checks."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import yaml
from PIL import Image

from labelfree.config import validate_config
from labelfree.data.registry import prepare_dataset
from labelfree.metamorphic import originals as og
from labelfree.metamorphic import plan
from labelfree.metamorphic import run as ex
from labelfree.store import read_image_set
from tests.voc import write_voc

BLACK, WHITE = np.zeros(3, np.uint8), np.full(3, 255, np.uint8)


@pytest.fixture
def imagenet_split(tmp_path):
    """Two originals of different shapes (30 x 45 and 36 x 24) with odd-sized boxes, prepared by
    the data layer at size 16 (shorter side 16, centre square), as the workflow does."""
    img, box = tmp_path / "val", tmp_path / "bbox"
    img.mkdir()
    box.mkdir()
    r = np.random.default_rng(3)
    originals = [r.integers(40, 216, (30, 45, 3), dtype=np.uint8),
                 r.integers(40, 216, (36, 24, 3), dtype=np.uint8)]
    boxes = [[(13, 7, 26, 19)], [(3, 5, 11, 17), (15, 20, 22, 33)]]
    for k, (rgb, bx) in enumerate(zip(originals, boxes, strict=True), start=1):
        Image.fromarray(rgb).save(img / f"ILSVRC2012_val_{k:08d}.png")
        write_voc(box / f"ILSVRC2012_val_{k:08d}.xml", "n01", rgb.shape[1], rgb.shape[0], bx)
    cfg = {"source": "imagenet_val", "splits": {"val": 1.0}, "test_split": "val",
           "options": {"images_dir": str(img), "boxes_dir": str(box), "size": 16}}
    prepare_dataset("inet", cfg, 0, tmp_path / "data")
    meta = json.loads((tmp_path / "data" / "meta.json").read_text())
    order = [int(rec["file"][-9:-4]) - 1 for rec in meta["index"]["val"]]  # rows after the partition
    return tmp_path, [originals[i] for i in order], [boxes[i] for i in order]


def _tv_keep(rgb: np.ndarray, size: int) -> np.ndarray:
    """torchvision Resize(size) + CenterCrop(size) on the PIL image (spec 4.1 "V")."""
    from torchvision.transforms import functional as tf

    return np.asarray(tf.center_crop(tf.resize(Image.fromarray(rgb), size), size))


def _padded(shape, boxes, pad):
    """Spec 2.1 steps 3-4 at original resolution, box by box (half-open, padded, clipped)."""
    m = np.zeros(shape, bool)
    for x0, y0, x1, y1 in boxes:
        m[max(y0 - pad, 0) : min(y1 + pad, shape[0]), max(x0 - pad, 0) : min(x1 + pad, shape[1])] = True
    return m


def _write(tmp, bcfg, fill_at="original", **edits):
    study = {"bbox_pad_px": 2, "mask_pad_px": 0, "chunk": 3, "reencode": "none", "coloursets": {},
          "fill_at": fill_at, **edits}
    out = tmp / f"ts-{fill_at}"
    ex.write_testsets("d", {"b": bcfg}, study, 0, out, {"b": str(tmp / "data" / "val.npz")},
                      {"b": str(tmp / "data" / "meta.json")})
    return read_image_set(out / "metamorphic-b.npz"), read_image_set(out / "metamorphic-b-c3.npz")


def test_fill_at_original_then_resize_matches_pil_and_differs_from_resize_then_fill(imagenet_split):
    """Spec 2.2: obj-black / bg-white are the original with R (boxes padded by 2 original pixels,
    spec 2.1) painted, then torchvision Resize(16) + CenterCrop(16); the stored split filled after
    its resize (fill_at: stored) differs measurably on R's boundary pixels; orig is the split's
    bytes (spec 6: the same artefact the other studies use)."""
    tmp, originals, boxes = imagenet_split
    bcfg = {"split": "val", "region": "box", "coloursets": ["c3"], "parts": 1, "options": {}}
    base, fol = _write(tmp, bcfg)
    split = read_image_set(tmp / "data" / "val.npz")
    v = fol.x.reshape(7, 2, 16, 16, 3)
    assert np.array_equal(v[0], split.x) and np.array_equal(base.x, split.x)
    for i, (rgb, bx) in enumerate(zip(originals, boxes, strict=True)):
        r = _padded(rgb.shape[:2], bx, 2)
        obj, bg = rgb.copy(), rgb.copy()
        obj[r], bg[~r] = BLACK, WHITE
        assert np.array_equal(v[1, i], _tv_keep(obj, 16))  # obj-black
        assert np.array_equal(v[6, i], _tv_keep(bg, 16))  # bg-white
    assert base.extras["has_region"].all()
    _, stored = _write(tmp, bcfg, fill_at="stored")
    w = stored.x.reshape(7, 2, 16, 16, 3)
    assert np.array_equal(w[0], v[0])
    diff = np.abs(w[1:].astype(int) - v[1:].astype(int))
    assert (diff > 20).sum() > 50  # boundary pixels: hard edge vs an edge blended by the resize


def test_store_geometry_from_the_originals(imagenet_split):
    """A base's own store (size 12, squash) is made from the originals (PIL's bilinear resize of
    the whole image, as the data layer's squash and the TResNets' pipeline, spec 4.2); its region
    is the original-resolution R sampled at the store's pixel centres."""
    tmp, originals, boxes = imagenet_split
    bcfg = {"split": "val", "region": "box", "coloursets": ["c3"], "parts": 2, "options": {},
            "size": 12, "aspect": "squash"}
    study = {"bbox_pad_px": 2, "mask_pad_px": 0, "chunk": 3, "reencode": "none", "coloursets": {},
          "fill_at": "original"}
    out = tmp / "ts-sq"
    ex.write_testsets("d", {"b": bcfg}, study, 0, out, {"b": str(tmp / "data" / "val.npz")},
                      {"b": str(tmp / "data" / "meta.json")})
    base = read_image_set(out / "metamorphic-b.npz")
    for i, rgb in enumerate(originals):
        ref = np.asarray(Image.fromarray(rgb).resize((12, 12), Image.BILINEAR))
        assert np.array_equal(base.x[i], ref)
        r = _padded(rgb.shape[:2], boxes[i], 2)
        rows = ((np.arange(12) + 0.5) * rgb.shape[0] / 12).astype(int)
        cols = ((np.arange(12) + 0.5) * rgb.shape[1] / 12).astype(int)
        assert np.array_equal(base.extras["region"][i], r[rows[:, None], cols[None, :]])
        obj = rgb.copy()
        obj[r] = np.array([127, 127, 127], np.uint8)
        part = read_image_set(out / f"metamorphic-b-c3-part{i:03d}.npz")  # one source per part
        assert np.array_equal(part.x.reshape(7, 12, 12, 3)[2],
                              np.asarray(Image.fromarray(obj).resize((12, 12), Image.BILINEAR)))


def test_original_fill_needs_the_index_and_a_geometry_needs_originals(imagenet_split):
    tmp, _, _ = imagenet_split
    bcfg = {"split": "val", "region": "box", "coloursets": ["c3"], "parts": 1, "options": {}}
    study = {"bbox_pad_px": 2, "mask_pad_px": 0, "reencode": "none", "coloursets": {}, "fill_at": "original"}
    with pytest.raises(plan.ExperimentError, match="needs the dataset's meta.json"):
        ex.write_testsets("d", {"b": bcfg}, study, 0, tmp / "x", {"b": str(tmp / "data" / "val.npz")})
    with pytest.raises(plan.ExperimentError, match="needs fill_at 'original'"):
        ex.write_testsets("d", {"b": {**bcfg, "size": 12}}, {**study, "fill_at": "stored"}, 0, tmp / "x",
                          {"b": str(tmp / "data" / "val.npz")})


def _coco(tmp_path):
    """Two COCO originals, 20 x 30 with a square instance and 24 x 16 without annotations."""
    folder = tmp_path / "val2014"
    folder.mkdir()
    r = np.random.default_rng(5)
    rgbs = {1: r.integers(40, 216, (20, 30, 3), dtype=np.uint8),
            2: r.integers(40, 216, (24, 16, 3), dtype=np.uint8)}
    images = []
    for i, rgb in rgbs.items():
        Image.fromarray(rgb).save(folder / f"{i}.png")
        images.append({"id": i, "file_name": f"{i}.png", "width": rgb.shape[1], "height": rgb.shape[0]})
    anns = [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 77, "bbox": [9, 4, 11, 7],
             "segmentation": [[9, 4, 20, 4, 20, 11, 9, 11]]}]
    ann = tmp_path / "instances.json"
    ann.write_text(json.dumps({"images": images, "annotations": anns,
                               "categories": [{"id": 1, "name": "person"}]}))
    cfg = {"source": "coco", "splits": {"val": 1.0}, "test_split": "val",
           "options": {"images_dir": str(folder), "annotations": str(ann), "size": 16}}
    prepare_dataset("coco", cfg, 0, tmp_path / "data")
    meta = json.loads((tmp_path / "data" / "meta.json").read_text())
    return [rgbs[rec["image_id"]] for rec in meta["index"]["val"]], [rec["image_id"] for rec in meta["index"]["val"]]


def test_coco_resnet50_base_keeps_the_aspect_ratio(tmp_path):
    """Spec 4.2: the DeepInspect ResNet-50 resizes the shorter side to 256 and centre-crops 224;
    a base with ``aspect: keep`` (size 8 here) stores torchvision's Resize + CenterCrop of the
    original, not the data layer's 16 x 16 squash, and fills the union mask (pycocotools) at
    original resolution first. The image without annotations keeps its bytes (spec 2.1)."""
    rgbs, ids = _coco(tmp_path)
    bcfg = {"split": "val", "region": "mask", "coloursets": ["c3"], "parts": 1, "options": {},
            "size": 8, "aspect": "keep"}
    base, fol = _write(tmp_path, bcfg)
    v = fol.x.reshape(7, 2, 8, 8, 3)
    for i, (rgb, img_id) in enumerate(zip(rgbs, ids, strict=True)):
        assert np.array_equal(base.x[i], _tv_keep(rgb, 8))
        assert not np.array_equal(base.x[i], np.asarray(Image.fromarray(rgb).resize((8, 8), Image.BILINEAR)))
        if img_id == 2:
            assert not base.extras["has_region"][i]
            assert all(np.array_equal(v[k, i], v[0, i]) for k in range(7))
            continue
        r = og.Originals(tmp_path / "data" / "meta.json", "val").region(i, "mask", 0)
        assert r[5:10, 10:19].all() and not r[:3].any() and not r[:, :8].any()  # the polygon
        obj = rgb.copy()
        obj[r] = WHITE
        assert np.array_equal(v[3, i], _tv_keep(obj, 8))  # obj-white


def _coco_paper(repo_root, **edits):
    cfg = copy.deepcopy(yaml.safe_load((repo_root / "config" / "paper" / "metamorphic-coco.yaml").read_text()))
    for path, value in edits.items():
        node = cfg
        *keys, last = path.split(".")
        for k in keys:
            node = node[k]
        node[last] = value
    full = validate_config(cfg, repo_root / "config" / "schema.yaml")
    return full["metamorphic"], full["zoos"], full["datasets"]


def test_paper_configs_give_each_model_its_geometry(repo_root):
    """Spec 4.2: ResNet-50 keeps the aspect ratio, the TResNets squash; the COCO paper config puts
    each on a base of its own geometry and fills at original resolution (spec 2.2), and
    check_config refuses the ResNet-50 on the squashed store (the state before this fix)."""
    study, zoos, datasets = _coco_paper(repo_root)
    assert study["fill_at"] == "original"
    plan.check_config(study, zoos, datasets)
    coco = datasets["metamorphic_coco"]
    assert plan.base_geometry(study["testsets"]["val_r50"], coco) == (256, "keep")
    assert plan.base_geometry(study["testsets"]["val"], coco) == (640, "squash")
    assert plan.model_aspect("imagenet@256/224") == "keep" and plan.model_aspect("scale01@448") == "squash"
    assert plan.model_aspect("torchvision:ResNet50_Weights.IMAGENET1K_V1") == "keep"
    assert plan.model_aspect("imagenet") is None
    with pytest.raises(plan.ExperimentError,
                       match="'resnet50_coco' of zoo 'metamorphic_coco_r50'.*keeps the aspect"):
        plan.check_config(*_coco_paper(repo_root, **{"metamorphic.testsets.val_r50.aspect": ""}))
    with pytest.raises(plan.ExperimentError, match=r"testsets.val_r50.size: 200 is smaller than the 256 px"):
        plan.check_config(*_coco_paper(repo_root, **{"metamorphic.testsets.val_r50.size": 200}))
    with pytest.raises(plan.ExperimentError, match="COCO annotations are instance masks"):
        plan.check_config(*_coco_paper(repo_root, **{"metamorphic.testsets.val.region": "box"}))
    with pytest.raises(plan.ExperimentError, match="needs a `split` base and fill_at: original"):
        plan.check_config(*_coco_paper(repo_root, **{"metamorphic.fill_at": "stored"}))
    imagenet = validate_config(yaml.safe_load((repo_root / "config" / "paper" / "metamorphic-imagenet.yaml")
                                              .read_text()), repo_root / "config" / "schema.yaml")
    assert imagenet["metamorphic"]["fill_at"] == "original"
