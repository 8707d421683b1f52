"""Regions and fills: metamorphic.md section 8, checks 1-3."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labelfree.metamorphic import followups as fu
from labelfree.metamorphic import regions as rg

# ---- 8.1 boxes --------------------------------------------------------------------------------


def test_pad_clips_at_border():
    b = rg.normalise_boxes(np.array([[0, 2, 10, 20]]), None, (32, 24), pad_px=5)
    assert b.tolist() == [[0, 0, 15, 24]]


def test_inverted_min_max_are_swapped():
    a = rg.normalise_boxes(np.array([[20, 15, 4, 3]]), None, (32, 32), pad_px=0)
    assert a.tolist() == [[4, 3, 20, 15]]


def test_annotation_size_differs_from_decoded_image():
    # XML <size> 200x100, decoded image 400x300: x scales by 2, y by 3, then pad 5
    b = rg.normalise_boxes(np.array([[50, 10, 100, 50]]), (200, 100), (400, 300), pad_px=5)
    assert b.tolist() == [[95, 25, 205, 155]]
    # coordinates beyond the annotation size clamp to the image
    c = rg.normalise_boxes(np.array([[-10, 0, 260, 100]]), (200, 100), (400, 300), pad_px=0)
    assert c.tolist() == [[0, 0, 400, 300]]


def test_overlapping_boxes_count_once():
    boxes = np.array([[0, 0, 4, 4], [2, 2, 6, 6], [1, 1, 2, 2]])
    m = rg.box_masks(boxes, 8, 8, owner=np.array([0, 0, 1]), n=2)
    assert m.shape == (2, 8, 8)
    assert m[0].sum() == 16 + 16 - 4
    assert m[1].sum() == 1 and m[1, 1, 1]
    # half-open ranges [ymin:ymax, xmin:xmax]
    assert m[0, 3, 3] and not m[0, 6, 6] and m[0, 5, 5]


def test_box_region_from_image_set_pads_and_skips_empty():
    extras = {"boxes": np.array([[10, 10, 12, 12], [0, 0, 0, 0]])}
    r = rg.regions_from_image_set(extras, (32, 32), "box", pad_px=1)
    assert r[0].sum() == 16 and r[0, 9, 9] and not r[0, 8, 8]
    assert r[1].sum() == 0
    with pytest.raises(rg.RegionError, match="masks"):
        rg.regions_from_image_set(extras, (32, 32), "mask", 0)
    with pytest.raises(rg.RegionError, match="region mode"):
        rg.regions_from_image_set(extras, (32, 32), "circle", 0)


# ---- 8.2 masks (tiny synthetic COCO: a polygon and a crowd RLE) --------------------------------


def test_coco_union_is_pixel_exact_or(tmp_path):
    from pycocotools import mask as mask_util
    from pycocotools.coco import COCO

    h, w = 12, 10
    crowd = np.zeros((h, w), dtype=np.uint8)
    crowd[6:11, 2:9] = 1
    rle = mask_util.encode(np.asfortranarray(crowd))
    # uncompressed RLE (column-major run lengths), as COCO stores crowd annotations
    flat = crowd.flatten(order="F")
    runs, cur, cnt = [], 0, 0
    for v in flat:
        if v == cur:
            cnt += 1
        else:
            runs.append(cnt)
            cur, cnt = v, 1
    runs.append(cnt)
    poly = [1.0, 1.0, 6.0, 1.0, 6.0, 8.0, 1.0, 8.0]
    data = {
        "images": [{"id": 1, "height": h, "width": w}, {"id": 2, "height": 5, "width": 5}],
        "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}],
        "annotations": [
            {"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "segmentation": [poly],
             "area": 35.0, "bbox": [1, 1, 5, 7]},
            {"id": 2, "image_id": 1, "category_id": 2, "iscrowd": 1,
             "segmentation": {"size": [h, w], "counts": runs}, "area": 35.0, "bbox": [2, 6, 7, 5]},
        ],
    }
    p = tmp_path / "ann.json"
    p.write_text(json.dumps(data))
    coco = COCO(str(p))
    masks, has = rg.coco_union_masks(coco, [1, 2])
    poly_mask = mask_util.decode(mask_util.merge(mask_util.frPyObjects([poly], h, w))).astype(bool)
    expected = poly_mask | crowd.astype(bool)
    assert np.array_equal(masks[0], expected)
    assert masks[0].sum() == poly_mask.sum() + crowd.sum() - (poly_mask & crowd.astype(bool)).sum()
    assert mask_util.decode(rle).sum() == crowd.sum()
    # the image without annotation is reported and gets an empty region
    assert has.tolist() == [True, False] and masks[1].shape == (5, 5) and not masks[1].any()


def test_mask_padding_dilates():
    m = np.zeros((1, 9, 9), dtype=bool)
    m[0, 4, 4] = True
    assert rg.pad_masks(m, 0).sum() == 1
    assert rg.pad_masks(m, 1).sum() == 9
    assert rg.pad_masks(m, 2).sum() == 25


# ---- 8.3 fills ----------------------------------------------------------------------------------


@pytest.fixture
def batch():
    r = np.random.default_rng(0)
    x = r.integers(0, 256, (5, 16, 20, 3), dtype=np.uint8)
    region = r.random((5, 16, 20)) < 0.3
    return x, region


def test_object_fill_leaves_background_bytes(batch):
    x, region = batch
    cols = fu.colour_array(fu.COLOURSETS["c3"])
    obj = fu.fill(x, region, cols, "obj")
    bg = fu.fill(x, region, cols, "bg")
    for c in range(3):
        assert np.array_equal(obj[c][~region], x[~region])
        assert (obj[c][region] == cols[c]).all()
        assert np.array_equal(bg[c][region], x[region])
        assert (bg[c][~region] == cols[c]).all()


def test_vectorised_fill_equals_loop(batch):
    x, region = batch
    cols = fu.colour_array(fu.COLOURSETS["c15"])
    for kind in ("obj", "bg"):
        assert np.array_equal(fu.fill(x, region, cols, kind), fu.fill_loop(x, region, cols, kind))


def test_red_is_rgb_after_bgr_decode(tmp_path):
    from PIL import Image

    x = np.zeros((1, 8, 8, 3), dtype=np.uint8)
    region = np.ones((1, 8, 8), dtype=bool)
    red = fu.fill(x, region, fu.colour_array(["red"]), "obj")[0, 0]
    assert red[0, 0].tolist() == [255, 0, 0]
    # an OpenCV-style decode returns BGR; converting back must give red (255, 0, 0)
    Image.fromarray(red).save(tmp_path / "red.png")
    decoded_bgr = np.asarray(Image.open(tmp_path / "red.png"))[..., ::-1]
    assert fu.bgr_to_rgb(decoded_bgr[None])[0, 0, 0].tolist() == [255, 0, 0]
    # and the JPEG-95 round trip of the authors' files keeps it red
    jp = fu.jpeg_roundtrip(red[None])[0]
    assert jp[..., 0].min() > 240 and jp[..., 1:].max() < 15


def test_followup_set_is_model_independent_and_variant_major(batch):
    x, region = batch
    has = np.array([True, True, False, True, True])
    a = fu.make_followup_set(x, region, fu.COLOURSETS["c3"], has_region=has)
    b = fu.make_followup_set(x.copy(), region.copy(), ["black", "gray", "white"], has_region=has)
    for u, v in zip(a, b, strict=True):
        assert np.array_equal(u, v)
    xs, variant, src = a
    assert xs.shape == (7 * 5, 16, 20, 3)
    assert variant.tolist() == np.repeat(np.arange(7), 5).tolist()
    assert src.tolist() == list(range(5)) * 7
    assert np.array_equal(xs[:5], x)
    # images without a region are left untouched in every variant
    assert all(np.array_equal(xs[v * 5 + 2], x[2]) for v in range(7))
    assert fu.variant_names(["black"]) == ["orig", "obj-black", "bg-black"]


def test_bad_colour_and_kind_raise(batch):
    x, region = batch
    with pytest.raises(fu.FollowupError, match="unknown colour"):
        fu.colour_array(["mauve"])
    with pytest.raises(fu.FollowupError, match="kind"):
        fu.fill(x, region, fu.colour_array(["red"]), "both")
