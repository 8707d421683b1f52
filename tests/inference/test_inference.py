"""Inference: identical to a bare eval loop, batch-size invariant, features via hooks, artefacts."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch

from labelfree.accuracy import accuracy_heatmap, accuracy_long, accuracy_wide
from labelfree.device import DeviceError, resolve_device
from labelfree.inference import (
    InferenceError,
    infer_group,
    predict,
    predict_dir,
)
from labelfree.store import (
    ArtefactError,
    open_inference_files,
    read_features,
    read_logits,
    write_image_set,
    write_inference,
)
from labelfree.zoo.arch import build_model
from labelfree.zoo.io import save_model
from labelfree.zoo.preprocess import PreprocessError, preprocess


def _model(arch, in_shape=(8, 8, 1), k=10, width=4, depth=1, seed=0):
    torch.manual_seed(seed)
    return build_model(arch, in_shape, k, width, depth).eval()


def _bare_loop(model, x, batch_size):
    """The reference: a plain model.eval() loop over the same tensors."""
    model.eval()
    t = torch.from_numpy(x).permute(0, 3, 1, 2).float() / 255.0
    outs = []
    with torch.no_grad():
        for s in range(0, len(t), batch_size):
            outs.append(model(t[s : s + batch_size]))
    return torch.cat(outs).numpy()


@pytest.mark.parametrize("arch", ["mlp", "lenet", "resnet", "cnn_tiny"])
def test_logits_identical_to_a_bare_eval_loop(digits_small, arch):
    x = digits_small[0][:200]
    model = _model(arch)
    for bs in (64, 200):
        out = predict(model, x, "scale01", batch_size=bs, device="cpu")
        assert out["logits"].dtype == np.float32
        np.testing.assert_array_equal(out["logits"], _bare_loop(model, x, bs))


@pytest.mark.parametrize("arch", ["mlp", "lenet", "resnet"])
def test_batch_size_invariance(digits_small, arch):
    x = digits_small[0][:60]
    model = _model(arch)
    ref = predict(model, x, batch_size=60, device="cpu")["logits"]
    for bs in (1, 7, 32):
        got = predict(model, x, batch_size=bs, device="cpu")["logits"]
        # BLAS kernels may block differently per batch size: equal to float32 rounding
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-5)
        assert np.array_equal(got.argmax(1), ref.argmax(1))


def test_features_are_the_named_layers(digits_small):
    x = digits_small[0][:50]
    mlp = _model("mlp", width=16, depth=2)
    out = predict(mlp, x, device="cpu", features=("first", "penultimate"))
    t = torch.from_numpy(x).permute(0, 3, 1, 2).float() / 255
    with torch.no_grad():
        first = torch.relu(mlp.body[1][0](t.flatten(1)))
        penult = mlp.body(t)
    np.testing.assert_array_equal(out["first"], first.numpy())
    np.testing.assert_array_equal(out["penultimate"], penult.numpy())
    assert not mlp.body[1]._forward_hooks and not mlp.head._forward_pre_hooks  # hooks removed
    for arch, width, first_dim, pen_dim in (("lenet", 6, 6 * 8 * 8, 8 * 6), ("resnet", 8, 8 * 8 * 8, 32)):
        # lenet: conv1 map after ReLU, flattened / the hidden fc (LeNet's 84-unit layer);
        # resnet: stem conv-BN-ReLU map / the global-average-pooled vector
        net = _model(arch, width=width)
        got = predict(net, x, device="cpu", features=("first", "penultimate"))
        with torch.no_grad():
            first, penult = net.body[0](t), net.body(t)
            logits = net.head(penult)
        assert got["first"].shape == (50, first_dim) and got["penultimate"].shape == (50, pen_dim)
        np.testing.assert_array_equal(got["first"], first.flatten(1).numpy())
        np.testing.assert_array_equal(got["penultimate"], penult.numpy())
        np.testing.assert_array_equal(got["logits"], logits.numpy())
    with pytest.raises(InferenceError, match="unknown feature"):
        predict(mlp, x, features=("last",))


def test_preprocessing_kinds():
    x = np.array([[[[0], [255]]]], dtype=np.uint8)  # (1, 1, 2, 1)
    assert preprocess(x, "scale01").tolist() == [[[[0.0, 1.0]]]]
    assert preprocess(x, "center").tolist() == [[[[-1.0, 1.0]]]]
    rgb = preprocess(x, "imagenet", channels=3)  # grey repeated to three channels
    assert rgb.shape == (1, 3, 1, 2)
    np.testing.assert_allclose(rgb[0, :, 0, 0].numpy(), [-0.485 / 0.229, -0.456 / 0.224, -0.406 / 0.225], rtol=1e-6)
    big = preprocess(np.zeros((2, 30, 40, 3), np.uint8), "torchvision:ResNet18_Weights.IMAGENET1K_V1")
    assert big.shape == (2, 3, 224, 224)
    with pytest.raises(PreprocessError, match="unknown preprocessing 'zscore'"):
        preprocess(x, "zscore")
    with pytest.raises(PreprocessError, match="'imagenet' preprocessing needs 3 channels"):
        preprocess(x, "imagenet")
    xf = torch.full((1, 2, 2, 1), 128.0, requires_grad=True)  # differentiable (PACE FGSM)
    preprocess(xf, "scale01").sum().backward()
    assert torch.allclose(xf.grad, torch.full_like(xf, 1 / 255))


def test_device_resolution():
    assert resolve_device("cpu").type == "cpu"
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="no CUDA device"):
            resolve_device("cuda")
    with pytest.raises(DeviceError, match="'tpu'"):
        resolve_device("tpu")


def _saved_models(root: Path, archs: tuple[str, ...]) -> list[Path]:
    """One saved local model per architecture under ``root`` (seed = its position)."""
    dirs = []
    for i, arch in enumerate(archs):
        d = root / arch
        save_model(d, _model(arch, seed=i), {"model": arch, "arch": arch, "width": 4, "depth": 1,
                                              "num_classes": 10, "input_shape": [8, 8, 1],
                                              "preprocessing": "scale01", "family": "local"})
        dirs.append(d)
    return dirs


def test_infer_group_writes_every_model_on_every_test_set(tmp_path, digits_small):
    x, y = digits_small
    sets = []
    for name, xs in (("id", x[:120]), ("noisy", np.clip(x[:120].astype(int) + 60, 0, 255).astype(np.uint8))):
        write_image_set(tmp_path / f"{name}.npz", xs, y[:120])
        sets.append(tmp_path / f"{name}.npz")
    dirs = _saved_models(tmp_path / "zoo", ("mlp", "lenet"))
    out = [tmp_path / "infer" / d.name / "grp.npz" for d in dirs]
    log = io.StringIO()
    named = [(s.stem, s) for s in sets]
    infer_group(dirs, named, out, features=("penultimate",), batch_size=50, device="cpu", progress_file=log)
    assert "inference" in log.getvalue() and "4/4" in log.getvalue()
    grid = [[o for _ in sets] for o in out]  # one group file per model holds both sets
    for i, d in enumerate(dirs):
        for s in sets:
            direct = predict_dir(d, np.load(s)["x"], batch_size=50, device="cpu", features=("penultimate",))
            np.testing.assert_array_equal(read_logits(out[i], s.stem), direct["logits"])
            feat = read_features(out[i], "penultimate", s.stem)
            np.testing.assert_allclose(feat, direct["penultimate"], rtol=1e-3, atol=1e-3)  # float16
    long = accuracy_long(["mlp", "lenet"], ["id", "noisy"], grid, sets)
    assert len(long) == 4 and set(long.columns) == {"model", "testset", "n", "accuracy"}
    acc = (read_logits(out[1], "id").argmax(1) == y[:120]).mean()
    assert long.query("model == 'lenet' and testset == 'id'")["accuracy"].item() == pytest.approx(acc)
    metas = [{"model": "mlp", "arch": "mlp", "params": 1, "val_accuracy": 0.5},
             {"model": "lenet", "arch": "lenet", "params": 2, "val_accuracy": None}]
    wide = accuracy_wide(long, metas)
    assert wide.columns.tolist() == ["model", "arch", "params", "val_accuracy", "id", "noisy"]
    assert wide["model"].tolist() == ["mlp", "lenet"]
    fig = accuracy_heatmap(wide, ["id", "noisy"], title="t")
    assert fig.axes[0].get_xticklabels()[1].get_text() == "noisy"


def test_feature_sets_keep_features_on_those_sets_only_and_the_same_logits(tmp_path, digits_small):
    """A group whose readers read features on some sets (the -C suite: the scorecard's sets):
    the others hold logits only, equal to a run with features everywhere (a hook that changed
    the forward pass, or features stored under the wrong set, would fail)."""
    x, y = digits_small
    named = []
    for name, shift in (("a-1", 0), ("a-5", 60), ("b-5", 120)):
        xs = np.clip(x[:90].astype(int) + shift, 0, 255).astype(np.uint8)
        write_image_set(tmp_path / f"{name}.npz", xs, y[:90])
        named.append((name, tmp_path / f"{name}.npz"))
    dirs = _saved_models(tmp_path / "zoo", ("lenet", "mlp"))
    every = [tmp_path / "every" / f"{d.name}.npz" for d in dirs]
    some = [tmp_path / "some" / f"{d.name}.npz" for d in dirs]
    feats = ("first", "penultimate")
    infer_group(dirs, named, every, features=feats, batch_size=40, device="cpu")
    infer_group(dirs, named, some, features=feats, batch_size=40, device="cpu",
                feature_sets=["b-5", "a-5"])
    for full, part in zip(every, some, strict=True):
        z = np.load(part)
        assert sorted(k for k in z.files if k.startswith("feat_")) == [
            "feat_first.a-5", "feat_first.b-5", "feat_penultimate.a-5", "feat_penultimate.b-5"]
        for name, _ in named:
            assert read_logits(part, name).tobytes() == read_logits(full, name).tobytes()
        for name in ("a-5", "b-5"):
            for f in feats:
                assert read_features(part, f, name).tobytes() == read_features(full, f, name).tobytes()
    with pytest.raises(InferenceError, match=r"feature_sets \['c-5'\]"):
        infer_group(dirs, named, some, features=feats, device="cpu", feature_sets=["c-5"])


def test_mismatched_outputs_are_an_error(tmp_path):
    with pytest.raises(InferenceError, match="one file per model"):
        infer_group([tmp_path / "a"], [("s", tmp_path / "s.npz")], [])
    with pytest.raises(InferenceError, match="at least one test set"):
        infer_group([tmp_path / "a"], [], [tmp_path / "o.npz"])


def test_open_inference_files_reads_what_read_logits_reads(tmp_path):
    """The accuracy table's reader keeps files open: same arrays, same errors as read_logits
    (a cache keyed wrongly would hand one set's logits for another)."""
    rng = np.random.default_rng(0)
    sets = {t: {"logits": rng.normal(size=(5, 3)).astype(np.float32)} for t in ("a", "b")}
    write_inference(tmp_path / "g.npz", sets)
    with open_inference_files() as read:
        for t in ("b", "a", "b"):
            assert read(tmp_path / "g.npz", t).tobytes() == read_logits(tmp_path / "g.npz", t).tobytes()
        with pytest.raises(ArtefactError, match="no test set 'c'"):
            read(tmp_path / "g.npz", "c")
        with pytest.raises(ArtefactError, match="file not found"):
            read(tmp_path / "none.npz", "a")
