"""timm and hf-hub rows: tiny timm models with random weights saved locally (no network)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

timm = pytest.importorskip("timm")
from PIL import Image  # noqa: E402
from safetensors.torch import save_file  # noqa: E402
from timm.data import create_transform, resolve_data_config  # noqa: E402

from labelfree.inference import predict  # noqa: E402
from labelfree.zoo.evalspec import EvalSpecError, from_timm_config, parse_eval_spec  # noqa: E402
from labelfree.zoo.io import load_model  # noqa: E402
from labelfree.zoo.preprocess import preprocess  # noqa: E402
from labelfree.zoo.pretrained import resolve_row  # noqa: E402
from labelfree.zoo.sheet import ZooError, build_sheet  # noqa: E402
from labelfree.zoo.sources import SourceError  # noqa: E402


def _save(tmp_path, name, num_classes=5, seed=0):
    torch.manual_seed(seed)
    model = timm.create_model(name, pretrained=False, num_classes=num_classes).eval()
    path = tmp_path / f"{name}.safetensors"
    save_file(model.state_dict(), str(path))
    return model, path


def _row(path, arch, **kw):
    return {"model": arch, "source": "timm", "arch": arch, "weights": str(path),
            "preprocessing": "model", "class_subset": "", **kw}


def _image(h=211, w=173, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (h // 8 + 1, w // 8 + 1, 3), dtype=np.uint8)
    return np.kron(base, np.ones((8, 8, 1), np.uint8))[:h, :w]  # blocks: resampling matters


@pytest.mark.parametrize("arch", ["test_vit", "test_resnet"])
def test_transform_equals_timms_own(tmp_path, arch):
    """The model's own preprocessing (from meta.json) gives timm's eval tensor, bit for bit."""
    model, path = _save(tmp_path, arch)
    meta = resolve_row("z", _row(path, arch), tmp_path / "m", in_shape=(211, 173, 3))
    cfg = resolve_data_config(model=model)
    assert meta["preprocessing"] == str(from_timm_config(cfg))
    img = _image()
    theirs = create_transform(**cfg)(Image.fromarray(img))
    ours = preprocess(img[None], meta["preprocessing"], channels=3)
    assert ours.shape == (1, *theirs.shape)
    assert torch.equal(ours[0], theirs)


def test_squash_mode_and_grey_images_match_timm():
    cfg = {"input_size": (3, 32, 32), "interpolation": "bilinear", "crop_pct": 0.8,
           "crop_mode": "squash", "mean": (0.1, 0.2, 0.3), "std": (0.3, 0.2, 0.1)}
    spec = str(from_timm_config(cfg))
    img = _image(50, 37)[:, :, :1]
    theirs = create_transform(**cfg)(Image.fromarray(img[:, :, 0], "L").convert("RGB"))
    assert torch.equal(preprocess(img[None], spec, channels=3)[0], theirs)


def test_timm_model_runs_like_timm(tmp_path):
    """Logits and penultimate features through our path equal timm's forward on its tensor."""
    model, path = _save(tmp_path, "test_resnet", num_classes=5)
    meta = resolve_row("z", _row(path, "test_resnet"), tmp_path / "m", in_shape=(180, 180, 3))
    assert (meta["num_classes"], meta["family"], meta["input_shape"]) == (5, "timm", [160, 160, 3])
    loaded, meta2 = load_model(tmp_path / "m")
    x = np.stack([_image(180, 180, s) for s in range(3)])
    tf = create_transform(**resolve_data_config(model=model))
    with torch.no_grad():
        ref = model(torch.stack([tf(Image.fromarray(i)) for i in x]))
        ref_pen = model.forward_head(model.forward_features(
            torch.stack([tf(Image.fromarray(i)) for i in x])), pre_logits=True)
    out = predict(loaded, x, meta2["preprocessing"], batch_size=3, device="cpu",
                  features=["penultimate"])
    np.testing.assert_array_equal(out["logits"], ref.numpy())
    np.testing.assert_array_equal(out["penultimate"], ref_pen.numpy())


def test_row_preprocessing_overrides_the_models(tmp_path):
    _, path = _save(tmp_path, "test_resnet")
    meta = resolve_row("z", _row(path, "test_resnet", preprocessing="imagenet@180/160"),
                       tmp_path / "m", in_shape=(180, 180, 3))
    assert meta["preprocessing"] == "imagenet@180/160"
    assert meta["model_preprocessing"].startswith("pil:mode=center,interp=bilinear")


def test_classifier_of_another_size_and_errors(tmp_path):
    _, path = _save(tmp_path, "test_resnet", num_classes=3)
    meta = resolve_row("z", _row(path, "test_resnet"), tmp_path / "m", in_shape=(160, 160, 3))
    assert meta["num_classes"] == 3
    with pytest.raises(SourceError, match="timm has no model 'no_such_net'"):
        resolve_row("z", _row(path, "no_such_net"), tmp_path / "n", in_shape=(160, 160, 3))
    with pytest.raises(Exception, match=r"missing keys"):  # weights of another architecture
        resolve_row("z", _row(path, "test_vit"), tmp_path / "n", in_shape=(160, 160, 3))


def test_class_subset_restricts_logits(tmp_path):
    """A row's class_subset: the logits are the model's at those classes, in that order."""
    model, path = _save(tmp_path, "test_resnet", num_classes=6)
    (tmp_path / "subset.txt").write_text("4\n1  # a comment\n5\n")
    row = _row(path, "test_resnet", class_subset=str(tmp_path / "subset.txt"))
    meta = resolve_row("z", row, tmp_path / "m", in_shape=(160, 160, 3))
    assert (meta["num_classes"], meta["class_subset"], meta["num_classes_full"]) == (3, [4, 1, 5], 6)
    full = resolve_row("z", _row(path, "test_resnet"), tmp_path / "f", in_shape=(160, 160, 3))
    x = np.stack([_image(160, 160, s) for s in range(4)])
    sub = predict(load_model(tmp_path / "m")[0], x, meta["preprocessing"], device="cpu")
    ref = predict(load_model(tmp_path / "f")[0], x, full["preprocessing"], device="cpu")
    np.testing.assert_array_equal(sub["logits"], ref["logits"][:, [4, 1, 5]])
    (tmp_path / "bad.txt").write_text("1\n9\n")
    with pytest.raises(SourceError, match=r"bad.txt: indices \[9\] are outside"):
        resolve_row("z", _row(path, "test_resnet", class_subset=str(tmp_path / "bad.txt")),
                    tmp_path / "b", in_shape=(160, 160, 3))


def test_sheet_rows(tmp_path):
    _, path = _save(tmp_path, "test_resnet")
    (tmp_path / "zoo.tsv").write_text(
        "model\tsource\tarch\tweights\n"
        f"a\ttimm\ttest_resnet\t{path.name}\n"
        "b\ttimm\tresnet18\tpretrained\n"
        "c\thf-hub\tx\ttimm/resnet18.a1_in1k\n")
    sheet = build_sheet("z", {"sheet": "zoo.tsv"}, tmp_path)
    assert sheet["preprocessing"].tolist() == ["model"] * 3
    assert sheet["weights"].tolist()[0] == str(path)
    assert "url" not in sheet.columns  # optional columns only when a row sets one
    (tmp_path / "bad.tsv").write_text(
        "model\tsource\tarch\tweights\tpreprocessing\turl\n"
        "a\ttimm\ttest_resnet\tmissing.pt\tpil:mode=center,resize=10,crop=20\t\n"
        "b\ttimm\ttest_resnet\tgone.pt\tmodel\thttps://example.org/w.pt\n")
    with pytest.raises(ZooError) as err:
        build_sheet("z", {"sheet": "bad.tsv"}, tmp_path)
    msg = str(err.value)
    assert "row 1: timm file" in msg and "missing.pt not found" in msg
    assert "crop=20 exceeds resize=10" in msg
    assert "row 2: url 'https://example.org/w.pt' needs a sha256" in msg
    (tmp_path / "s.txt").write_text("1\n")
    (tmp_path / "other.tsv").write_text(
        "model\tsource\tarch\tweights\tclass_subset\n"
        "a\ttorchvision\tresnet18\tDEFAULT\ts.txt\n"
        f"b\ttimm\ttest_resnet\t{path.name}\ts.txt\n")
    with pytest.raises(ZooError, match=r"row 1: class_subset: only \('keras', 'timm', 'hf-hub'\)"
                                       r"[^;]*$"):
        build_sheet("z", {"sheet": "other.tsv"}, tmp_path)


def test_eval_spec_round_trip_and_errors():
    s = "pil:mode=squash,interp=lanczos,resize=40,crop=32,mean=0.48145466/0.4578275/0.40821073,std=1.0/2.0/3.0"
    assert str(parse_eval_spec(s)) == s
    with pytest.raises(EvalSpecError, match="mode='x' is not one of.*resize is missing"):
        parse_eval_spec("pil:mode=x,crop=3")


def test_weights_file_checksum(tmp_path):
    """A row's sha256 is checked against the file; a wrong one stops with the file named."""
    from labelfree.data.download import file_digest

    _, path = _save(tmp_path, "test_resnet")
    good = file_digest(path)
    resolve_row("z", _row(path, "test_resnet", sha256=good), tmp_path / "m", in_shape=(160, 160, 3))
    with pytest.raises(SourceError, match=r"test_resnet.safetensors: sha256 checksum .* does not match"):
        resolve_row("z", _row(path, "test_resnet", sha256="0" * 64), tmp_path / "n",
                    in_shape=(160, 160, 3))


def test_weights_downloaded_from_the_rows_url(tmp_path):
    """A row whose weights file is absent downloads it from ``url``, verified by ``sha256``."""
    import functools
    import http.server
    import threading

    from labelfree.data.download import file_digest

    served = tmp_path / "served"
    served.mkdir()
    _, path = _save(served, "test_resnet")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/{path.name}"
        target = tmp_path / "models" / "net.safetensors"
        with pytest.raises(SourceError, match=r"net.safetensors: sha256 checksum of the download"):
            resolve_row("z", _row(target, "test_resnet", url=url, sha256="1" * 64),
                        tmp_path / "n", in_shape=(160, 160, 3))
        assert not target.exists()  # nothing unverified under the file's name
        meta = resolve_row("z", _row(target, "test_resnet", url=url, sha256=file_digest(path)),
                           tmp_path / "m", in_shape=(160, 160, 3))
        assert target.read_bytes() == path.read_bytes() and meta["weights_file"] == str(target)
    finally:
        server.shutdown()
        server.server_close()


def _fake_hf_cache(root, repo, files):
    """The layout huggingface_hub keeps: models--owner--name/{refs/main, snapshots/<sha>/...}."""
    owner, name = repo.split("/")
    base = root / f"models--{owner}--{name}"
    snap = base / "snapshots" / ("a" * 40)
    snap.mkdir(parents=True)
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text("a" * 40)
    for fname, content in files.items():
        if fname.endswith(".json"):
            (snap / fname).write_text(json.dumps(content))
        else:
            save_file(content, str(snap / fname))
    return snap


def test_hf_hub_row_from_the_local_cache(tmp_path, monkeypatch):
    from huggingface_hub import constants

    torch.manual_seed(1)
    model = timm.create_model("test_efficientnet", pretrained=False, num_classes=4).eval()
    cfg = {"architecture": "test_efficientnet", "num_classes": 4,
           "pretrained_cfg": {"input_size": [3, 64, 64], "interpolation": "bicubic",
                              "crop_pct": 0.9, "mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}}
    cache = tmp_path / "hub"
    _fake_hf_cache(cache, "someone/tiny-net",
                   {"config.json": cfg, "model.safetensors": model.state_dict()})
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    row = {"model": "tiny", "source": "hf-hub", "arch": "x", "weights": "someone/tiny-net",
           "preprocessing": "model", "class_subset": ""}
    meta = resolve_row("z", row, tmp_path / "m", in_shape=(80, 80, 3))
    assert meta["preprocessing"] == ("pil:mode=center,interp=bicubic,resize=71,crop=64,"
                                     "mean=0.5/0.5/0.5,std=0.25/0.25/0.25")
    loaded, _ = load_model(tmp_path / "m")
    x = np.stack([_image(80, 80, s) for s in range(2)])
    tf = create_transform(**resolve_data_config(model=loaded))
    with torch.no_grad():
        ref = model(torch.stack([tf(Image.fromarray(i)) for i in x]))
    out = predict(loaded, x, meta["preprocessing"], batch_size=2, device="cpu")
    np.testing.assert_array_equal(out["logits"], ref.numpy())
    from labelfree.zoo.hub import WeightsMissingError

    with pytest.raises(WeightsMissingError, match="'someone/absent' is not in the cache"):
        resolve_row("z", {**row, "weights": "someone/absent"}, tmp_path / "n")
    _fake_hf_cache(cache, "someone/bert", {"config.json": {"model_type": "bert"}})
    with pytest.raises(SourceError, match="config.json: no 'architecture' key"):
        resolve_row("z", {**row, "weights": "someone/bert"}, tmp_path / "n")


def test_infer_group_converts_a_pil_set_once_with_the_same_logits(tmp_path, monkeypatch):
    """Two timm models with the same pipeline: the job converts the set once (labelfree.inference
    .prepare) and each model's logits equal predict's on the uint8 images."""
    import labelfree.inference as inference
    from labelfree.store import read_logits, write_image_set

    dirs = []
    for seed in (0, 1):
        _, path = _save(tmp_path, "test_resnet", num_classes=4, seed=seed)
        resolve_row("z", _row(path, "test_resnet"), tmp_path / f"m{seed}", in_shape=(168, 168, 3))
        dirs.append(tmp_path / f"m{seed}")
    x = np.stack([_image(168, 168, s) for s in range(5)])
    write_image_set(tmp_path / "id.npz", x, np.zeros(5, np.int64))
    calls = []
    real = inference.prepare
    monkeypatch.setattr(inference, "prepare", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    outs = [tmp_path / "o0.npz", tmp_path / "o1.npz"]
    inference.infer_group(dirs, [("id", tmp_path / "id.npz")], outs, batch_size=2, device="cpu")
    assert len(calls) == 1 and calls[0].startswith("pil:")
    for d, o in zip(dirs, outs, strict=True):
        model, meta = load_model(d)
        want = predict(model, x, meta["preprocessing"], batch_size=2, device="cpu")["logits"]
        np.testing.assert_array_equal(read_logits(o, "id"), want)


def test_pretrained_weights_from_the_users_cache(tmp_path, monkeypatch):
    """``weights: pretrained`` takes timm's own weights from the Hugging Face cache (offline
    here: a cache filled by hand with the repository timm names for the model)."""
    from huggingface_hub import constants

    torch.manual_seed(3)
    ref = timm.create_model("test_resnet", pretrained=False)
    repo = ref.pretrained_cfg["hf_hub_id"]
    _fake_hf_cache(tmp_path / "hub", repo, {"model.safetensors": ref.state_dict()})
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    row = _row("pretrained", "test_resnet")
    meta = resolve_row("z", row, tmp_path / "m", in_shape=(168, 168, 3))
    assert meta["weights_file"] == "" and meta["num_classes"] == 1000
    loaded, _ = load_model(tmp_path / "m")
    got, want = loaded.state_dict(), ref.state_dict()
    assert list(got) == list(want) and all(torch.equal(got[k], want[k]) for k in want)
    from labelfree.zoo.hub import WeightsMissingError

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty"))
    with pytest.raises(WeightsMissingError, match="timm weights of 'test_resnet' are not in"):
        resolve_row("z", row, tmp_path / "n", in_shape=(168, 168, 3))
