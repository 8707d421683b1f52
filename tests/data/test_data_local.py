"""Local files instead of downloads (datasets.<name>.local; labelfree.data.download.copy_local).

The files are small IDX files in the real format, gzip-compressed by the tests; the expected
checksum table (classic.FILES) is patched to their digests. "Re-compressed" copies are the same
IDX bytes gzip-compressed at another level with another header (mtime, name), as a mirror or a
package cache writes them, so the archive's md5 differs while the content's md5 does not.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import stat
from pathlib import Path

import numpy as np
import pytest

from labelfree.data import classic
from labelfree.data.base import DataError
from labelfree.data.download import FileSpec, copy_local, fetch, verify_file
from labelfree.data.registry import (
    download_dataset,
    prepare_dataset,
    resolve_local,
    resolve_option_paths,
)

NAMES = [f.name for f in classic.FILES["mnist"]]


def _md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _recompress(path: Path, dest: Path) -> None:
    """Same content, other gzip bytes: level 1 and a different header mtime."""
    raw = gzip.decompress(path.read_bytes())
    dest.write_bytes(gzip.compress(raw, compresslevel=1, mtime=123456789))


def _snapshot(folder: Path) -> dict:
    """Names, bytes, mode and mtime of everything in a folder (and of the folder itself)."""
    out = {".": (folder.stat().st_mode, folder.stat().st_mtime_ns)}
    for p in sorted(folder.rglob("*")):
        st = p.stat()
        out[str(p.relative_to(folder))] = (p.read_bytes(), st.st_mode, st.st_mtime_ns)
    return out


@pytest.fixture
def official(tmp_path, w, monkeypatch):
    """The four MNIST files as 'published' (level 9 gzip), the spec table patched to them.

    Returns the folder of the published files; classic.FILES["mnist"] then has their archive
    md5s and the md5s of their decompressed IDX bytes, as the real table has for the real files.
    """
    pub = tmp_path / "published"
    w.write_mnist_files(pub, n_train=50, n_test=30)
    specs = [
        FileSpec(
            f.name,
            f.urls,
            md5=_md5((pub / f.name).read_bytes()),
            content_md5=_md5(gzip.decompress((pub / f.name).read_bytes())),
        )
        for f in classic.FILES["mnist"]
    ]
    monkeypatch.setitem(classic.FILES, "mnist", specs)
    return pub


def _readonly(folder: Path) -> None:
    for p in folder.iterdir():
        p.chmod(0o444)
    folder.chmod(0o555)


def _cfg(tmp_path: Path, local: Path) -> dict:
    return {"source": "mnist", "root": str(tmp_path / "raw"), "local": str(local),
            "url": "http://127.0.0.1:9/never-contacted",
            "splits": {"train": 1.0, "test": 1.0}, "test_split": "test"}  # fmt: skip


def test_archive_md5_match_is_copied_and_source_untouched(official, tmp_path):
    _readonly(official)
    before = _snapshot(official)
    manifest = tmp_path / "manifest.json"
    paths = download_dataset("m", _cfg(tmp_path, official), manifest=manifest)
    assert _snapshot(official) == before
    for name in NAMES:
        assert paths[name].read_bytes() == (official / name).read_bytes()
        assert not paths[name].is_symlink() and paths[name].stat().st_mode & stat.S_IWUSR
        assert official not in paths[name].parents
    m = json.loads(manifest.read_text())
    assert m["local"] == str(official)
    assert {e["verified_by"] for e in m["files"].values()} == {"archive"}
    assert sorted(p.name for p in (tmp_path / "raw" / "mnist").iterdir()) == sorted(NAMES)


def test_recompressed_copy_accepted_by_content_md5(official, tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    for name in NAMES:
        _recompress(official / name, mirror / name)
        assert _md5((mirror / name).read_bytes()) != _md5((official / name).read_bytes())
    _readonly(mirror)
    before = _snapshot(mirror)
    manifest = tmp_path / "manifest.json"
    cfg = _cfg(tmp_path, mirror)
    paths = download_dataset("m", cfg, manifest=manifest)
    assert _snapshot(mirror) == before
    m = json.loads(manifest.read_text())
    spec = {s.name: s for s in classic.FILES["mnist"]}
    for name in NAMES:
        assert m["files"][name]["verified_by"] == "content"
        assert m["files"][name]["content_md5"] == spec[name].content_md5
        assert m["files"][name]["md5"] == _md5(paths[name].read_bytes()) != spec[name].md5
    # the copies are the data: prepare reads them, and a second run verifies what is there
    meta = prepare_dataset("m", cfg, 0, tmp_path / "out")
    assert meta["splits"]["train"]["n"] == 50 and meta["splits"]["test"]["n"] == 30
    assert download_dataset("m", cfg) == paths


def test_neither_checksum_matches_names_the_file(official, tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in NAMES:
        (bad / name).write_bytes((official / name).read_bytes())
    # same length, one label changed: both the archive md5 and the content md5 differ
    raw = bytearray(gzip.decompress((official / "t10k-labels-idx1-ubyte.gz").read_bytes()))
    raw[-1] = (raw[-1] + 1) % 10
    (bad / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(bytes(raw)))
    _readonly(bad)
    before = _snapshot(bad)
    with pytest.raises(DataError) as err:
        download_dataset("m", _cfg(tmp_path, bad), manifest=tmp_path / "manifest.json")
    msg = str(err.value)
    assert str(bad / "t10k-labels-idx1-ubyte.gz") in msg
    assert "neither checksum matches" in msg and "decompressed content" in msg
    assert _snapshot(bad) == before
    assert not (tmp_path / "manifest.json").exists()
    dest = tmp_path / "raw" / "mnist"
    assert "t10k-labels-idx1-ubyte.gz" not in [p.name for p in dest.iterdir()]
    assert not [p for p in dest.iterdir() if p.name.endswith(".part")]


def test_not_gzip_and_missing_files_are_named(official, tmp_path):
    spec = next(s for s in classic.FILES["mnist"] if s.name == "train-labels-idx1-ubyte.gz")
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / spec.name).write_bytes(b"not a gzip file")
    with pytest.raises(DataError, match=r"junk/train-labels-idx1-ubyte\.gz.*not a readable gzip"):
        copy_local(spec, junk, tmp_path / "dest")
    with pytest.raises(DataError, match=r"empty/train-labels-idx1-ubyte\.gz: file not found"):
        (tmp_path / "empty").mkdir()
        copy_local(spec, tmp_path / "empty", tmp_path / "dest")


def test_uncompressed_idx_accepted_and_compressed(official, tmp_path):
    raw_dir = tmp_path / "raw_idx"
    raw_dir.mkdir()
    for name in NAMES:
        (raw_dir / name.removesuffix(".gz")).write_bytes(
            gzip.decompress((official / name).read_bytes())
        )
    _readonly(raw_dir)
    before = _snapshot(raw_dir)
    spec = next(s for s in classic.FILES["mnist"] if s.name == "t10k-images-idx3-ubyte.gz")
    path, how = copy_local(spec, raw_dir, tmp_path / "dest")
    assert how == "content" and path.name == spec.name
    assert gzip.decompress(path.read_bytes()) == (raw_dir / "t10k-images-idx3-ubyte").read_bytes()
    assert _snapshot(raw_dir) == before
    # an uncompressed file with other bytes is refused, naming it
    other = tmp_path / "other"
    other.mkdir()
    (other / "t10k-images-idx3-ubyte").write_bytes(b"\0\0\x08\x01\0\0\0\0")
    with pytest.raises(DataError, match=r"other/t10k-images-idx3-ubyte: md5 .* does not match"):
        copy_local(spec, other, tmp_path / "dest2")


def test_existing_target_is_verified_not_replaced(official, tmp_path):
    spec = classic.FILES["mnist"][0]
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / spec.name).write_bytes(b"stale")
    with pytest.raises(DataError, match=r"dest/train-images-idx3-ubyte\.gz.*delete the file"):
        copy_local(spec, official, dest)
    assert (dest / spec.name).read_bytes() == b"stale"


def test_verify_file_archive_first_then_content(tmp_path):
    data = gzip.compress(b"\0\0\x08\x01\0\0\0\x02ab")
    (tmp_path / "f.gz").write_bytes(data)
    content = _md5(b"\0\0\x08\x01\0\0\0\x02ab")
    assert verify_file(tmp_path / "f.gz", FileSpec("f.gz", (), md5=_md5(data))) == "archive"
    spec = FileSpec("f.gz", (), md5="0" * 32, content_md5=content)
    assert verify_file(tmp_path / "f.gz", spec) == "content"
    # without content_md5 a mismatch stays the plain checksum error
    with pytest.raises(DataError, match="checksum .* does not match expected"):
        verify_file(tmp_path / "f.gz", FileSpec("f.gz", (), md5="0" * 32))


def test_resolve_local_against_the_config_file(tmp_path, monkeypatch):
    (tmp_path / "conf" / "paper").mkdir(parents=True)
    (tmp_path / "data" / "mnist").mkdir(parents=True)
    (tmp_path / "elsewhere" / "mnist").mkdir(parents=True)
    first = tmp_path / "conf" / "paper" / "a.yaml"
    first.write_text("datasets:\n  m:\n    source: mnist\n    local: ../../data/mnist\n")
    second = tmp_path / "conf" / "b.yaml"
    second.write_text("seed: 1\n")
    cfg = {"source": "mnist", "local": "../../data/mnist"}
    monkeypatch.chdir(tmp_path / "elsewhere")
    want = str(tmp_path / "data" / "mnist")
    assert resolve_local("m", cfg, [first, second]) == want
    # the last file that sets the key wins: conf/x/y/c.yaml resolves it to conf/data/mnist
    (tmp_path / "conf" / "x" / "y").mkdir(parents=True)
    (tmp_path / "conf" / "data" / "mnist").mkdir(parents=True)
    third = tmp_path / "conf" / "x" / "y" / "c.yaml"
    third.write_text("datasets:\n  m:\n    local: ../../data/mnist\n")
    assert resolve_local("m", cfg, [third, first]) == want
    assert resolve_local("m", cfg, [first, third]) == str(tmp_path / "conf" / "data" / "mnist")
    # set by no file (--config): the working directory
    assert resolve_local("m", {"source": "mnist", "local": "mnist"}, [first]) == str(
        tmp_path / "elsewhere" / "mnist"
    )
    assert resolve_local("m", {"source": "mnist", "local": want}, []) == want
    assert resolve_local("m", {"source": "mnist"}, [first]) == ""
    with pytest.raises(DataError, match=r"datasets\.m\.local: folder .*nothere.* does not exist"):
        resolve_local("m", {"source": "mnist", "local": "nothere"}, [first])
    with pytest.raises(DataError, match=r"datasets\.d\.local: source 'digits' is not downloaded"):
        resolve_local("d", {"source": "digits", "local": want}, [])
    with pytest.raises(DataError, match="is relative"):
        download_dataset("m", {**cfg, "root": str(tmp_path / "r"), "splits": {"test": 1.0}})


@pytest.mark.skipif(
    not Path("/work/shared/data/mnist").is_dir(), reason="real MNIST not on this machine"
)
def test_real_recompressed_mnist_verifies(tmp_path):
    """The real, re-compressed MNIST (../shared/data/README.md): every file passes by content."""
    src = Path("/work/shared/data/mnist")
    before = {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in src.iterdir()}
    for spec in classic.FILES["mnist"]:
        path, how = copy_local(spec, src, tmp_path)
        assert how == "content", spec.name
        assert os.path.getsize(path) == before[spec.name][0]
    assert {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in src.iterdir()} == before
    x = np.frombuffer(gzip.decompress((tmp_path / "t10k-labels-idx1-ubyte.gz").read_bytes())[8:],
                      np.uint8)  # fmt: skip
    assert len(x) == 10_000 and np.bincount(x).min() > 800


def test_download_of_recompressed_mirror_copy_accepted(official, tmp_path, http_root):
    """A mirror (``url``) serving re-compressed files: accepted by content, a wrong one refused."""
    served, url = http_root
    spec = next(s for s in classic.FILES["mnist"] if s.name == "train-labels-idx1-ubyte.gz")
    _recompress(official / spec.name, served / spec.name)

    path = fetch(spec, tmp_path / "dl", base_url=url)
    assert verify_file(path, spec) == "content"
    raw = bytearray(gzip.decompress((official / spec.name).read_bytes()))
    raw[-1] = (raw[-1] + 1) % 10
    (served / spec.name).write_bytes(gzip.compress(bytes(raw)))
    with pytest.raises(DataError, match=r"train-labels-idx1-ubyte\.gz.*checksum"):
        fetch(spec, tmp_path / "dl2", base_url=url)
    assert not list((tmp_path / "dl2").iterdir())


def test_imagenet_and_coco_paths_resolve_against_the_config_file(tmp_path, monkeypatch):
    """Issue 14 item 5: the user-supplied ImageNet/COCO options (images_dir, boxes_dir, synsets,
    annotations) resolve like `local`: against the folder of the config file that sets them,
    not the working directory; absolute and empty values pass unchanged."""
    (tmp_path / "conf").mkdir()
    cfgfile = tmp_path / "conf" / "c.yaml"
    cfgfile.write_text("datasets:\n  inet:\n    source: imagenet_val\n    options:\n"
                       "      images_dir: val/images\n      synsets: ../maps/syn.txt\n"
                       "  co:\n    source: coco\n    options: {annotations: ann.json}\n")
    monkeypatch.chdir(tmp_path)  # the working directory is not the config's folder
    inet = {"source": "imagenet_val",
            "options": {"images_dir": "val/images", "synsets": "../maps/syn.txt",
                        "boxes_dir": "/abs/boxes", "size": 32}}
    got = resolve_option_paths("inet", inet, [cfgfile])
    assert got == {"images_dir": str(tmp_path / "conf" / "val" / "images"),
                   "synsets": str(tmp_path / "maps" / "syn.txt"), "boxes_dir": "/abs/boxes",
                   "size": 32}
    co = {"source": "coco", "options": {"annotations": "ann.json", "images_dir": ""}}
    assert resolve_option_paths("co", co, [cfgfile]) == {
        "annotations": str(tmp_path / "conf" / "ann.json"), "images_dir": ""}
    # set with --config (no file says it): the working directory
    assert resolve_option_paths("co", {"source": "coco", "options": {"annotations": "x.json"}},
                                [cfgfile])["annotations"] == str(tmp_path / "x.json")
    # other sources' options are not paths
    assert resolve_option_paths("d", {"source": "digits", "options": {"a": "b"}}, [cfgfile]) == {
        "a": "b"}
