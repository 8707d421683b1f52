"""The imagefolder source: labelled and flat folders of generated JPEGs, label maps, class
subsets, bad files named, chunked writing."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from labelfree.data.base import DataError
from labelfree.data.imagefolder import ImageFolder, square_resize
from labelfree.data.registry import prepare_dataset, resolve_option_paths
from labelfree.store import read_image_set, read_labels


def _jpeg(path, h, w, seed):
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(img).save(path, quality=90)


def _folder(root, classes=("goldfish", "tench", "zebra"), per=3):
    for c, name in enumerate(classes):
        for i in range(per):
            _jpeg(root / name / f"{i}.jpg", 30 + 7 * i, 40 - 3 * c, 10 * c + i)
    return root


def _cfg(root, **opts):
    return {"source": "imagefolder", "splits": {"test": 1.0}, "test_split": "test",
            "options": {"images_dir": str(root), "size": 16, **opts}}


def test_labelled_folder_written_in_chunks(tmp_path):
    root = _folder(tmp_path / "imgs")
    (tmp_path / "map.txt").write_text("# folder -> ImageNet index\ntench 0\ngoldfish 1\nzebra,340\n")
    meta = prepare_dataset("mine", _cfg(root, label_map=str(tmp_path / "map.txt")), 0,
                           tmp_path / "out", chunk=2)
    s = read_image_set(tmp_path / "out" / "test.npz")
    assert s.x.shape == (9, 16, 16, 3) and meta["splits"]["test"]["n"] == 9
    files = [r["file"] for r in meta["index"]["test"]]
    want = {"goldfish": 1, "tench": 0, "zebra": 340}
    assert s.y.tolist() == [want[f.split("/")[0]] for f in files]
    first = np.asarray(Image.open(root / files[0]).convert("RGB"))
    np.testing.assert_array_equal(s.x[0], square_resize(first, 16))
    assert meta["classes"][340] == "zebra" and meta["classes"][1] == "goldfish"
    default = ImageFolder(root)  # no label map: sorted folder names from 0
    assert sorted(set(default.index["label"])) == [0, 1, 2] and default.classes[2] == "zebra"


def test_unlabelled_flat_folder(tmp_path):
    for i in range(4):
        _jpeg(tmp_path / "flat" / f"{i}.png", 20, 25, i)
    prepare_dataset("u", _cfg(tmp_path / "flat"), 0, tmp_path / "out")
    assert read_labels(tmp_path / "out" / "test.npz") is None
    assert read_image_set(tmp_path / "out" / "test.npz").extras["unlabelled"].all()


def test_bad_images_are_named_not_skipped(tmp_path):
    root = _folder(tmp_path / "imgs")
    (root / "tench" / "broken.jpg").write_bytes(b"\xff\xd8 not really a jpeg")
    (root / "zebra" / "empty.png").write_bytes(b"")
    with pytest.raises(DataError, match=r"2 unreadable image\(s\): .*tench/broken.jpg: .*"
                                        r"zebra/empty.png"):
        ImageFolder(root)
    (root / "tench" / "broken.jpg").unlink()
    (root / "zebra" / "empty.png").unlink()
    (root / "zebra" / "notes.txt").write_text("hi")
    with pytest.raises(DataError, match=r"zebra/notes.txt: not an image file"):
        ImageFolder(root)
    (root / "zebra" / "notes.txt").unlink()
    _jpeg(root / "stray.jpg", 10, 10, 0)
    with pytest.raises(DataError, match=r"stray.jpg: a file beside class folders"):
        ImageFolder(root)


def test_label_map_and_subset_errors(tmp_path):
    root = _folder(tmp_path / "imgs")
    (tmp_path / "map.txt").write_text("tench 0\ngoldfish 1\n")
    with pytest.raises(DataError, match=r"no class index for folder\(s\) \['zebra'\]"):
        ImageFolder(root, tmp_path / "map.txt")
    (tmp_path / "map.txt").write_text("tench zero\n")
    with pytest.raises(DataError, match=r"map.txt, line 1: 'tench zero' is not"):
        ImageFolder(root, tmp_path / "map.txt")
    (tmp_path / "map.txt").write_text("tench 0\ngoldfish 1\nzebra 340\n")
    (tmp_path / "subset.txt").write_text("1 0\n")
    with pytest.raises(DataError, match=r"folder\(s\) \['zebra'\] map to classes outside"):
        ImageFolder(root, tmp_path / "map.txt", tmp_path / "subset.txt")


def test_class_subset_relabels_by_position(tmp_path):
    root = _folder(tmp_path / "imgs")
    (tmp_path / "map.txt").write_text("tench 0\ngoldfish 1\nzebra 340\n")
    (tmp_path / "subset.txt").write_text("340, 7, 1, 0\n")
    ds = ImageFolder(root, tmp_path / "map.txt", tmp_path / "subset.txt")
    got = dict(zip(ds.index["folder"], ds.index["label"], strict=True))
    assert got == {"zebra": 0, "goldfish": 2, "tench": 3}


def test_relative_paths_resolve_against_the_config_file(tmp_path):
    cfg_file = tmp_path / "conf" / "c.yaml"
    cfg_file.parent.mkdir()
    cfg_file.write_text("datasets:\n  mine:\n    source: imagefolder\n    options:\n"
                        "      images_dir: ../imgs\n      label_map: map.txt\n")
    cfg = {"source": "imagefolder", "options": {"images_dir": "../imgs", "label_map": "map.txt"}}
    opts = resolve_option_paths("mine", cfg, [cfg_file])
    assert opts["images_dir"] == str(tmp_path / "imgs")
    assert opts["label_map"] == str(tmp_path / "conf" / "map.txt")
