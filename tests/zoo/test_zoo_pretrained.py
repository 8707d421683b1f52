"""Pretrained sources: torchvision weights from the cache, offline errors, torch.hub repositories."""

from __future__ import annotations

import urllib.error

import numpy as np
import pytest
import torch

from labelfree.inference import predict
from labelfree.zoo.io import load_model
from labelfree.zoo.pretrained import WeightsMissingError, resolve_row

TV_ARCH = "mobilenet_v3_small"
TV_FILE = "mobilenet_v3_small-047dcff4.pth"  # torchvision's file name for IMAGENET1K_V1


@pytest.fixture
def torch_home(tmp_path, monkeypatch):
    """An empty torch cache and no network: downloads fail at once."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setattr(torch.hub, "_hub_dir", None, raising=False)

    def offline(*args, **kwargs):
        raise urllib.error.URLError("network disabled in tests")

    monkeypatch.setattr(torch.hub, "download_url_to_file", offline)
    monkeypatch.setattr(torch.hub, "urlopen", offline)
    return tmp_path / "torch"


def _row(**kw):
    return {"model": "tv", "source": "torchvision", "arch": TV_ARCH, "weights": "IMAGENET1K_V1",
            "width": 32, "depth": 1, "preprocessing": "scale01", **kw}


def test_missing_torchvision_weights_say_where_to_put_them(torch_home, tmp_path):
    with pytest.raises(WeightsMissingError) as err:
        resolve_row("z", _row(), tmp_path / "out")
    msg = str(err.value)
    assert "MobileNet_V3_Small_Weights.IMAGENET1K_V1" in msg
    assert str(torch_home / "hub" / "checkpoints" / TV_FILE) in msg
    assert "https://download.pytorch.org/models/" + TV_FILE in msg
    assert not (tmp_path / "out" / "meta.json").exists()


def test_cached_torchvision_weights_resolve_offline(torch_home, tmp_path):
    # deferred: torchvision takes seconds to import; this test only
    from torchvision.models import get_model

    torch.manual_seed(0)
    reference = get_model(TV_ARCH, weights=None, num_classes=1000).eval()
    cache = torch_home / "hub" / "checkpoints"
    cache.mkdir(parents=True)
    torch.save(reference.state_dict(), cache / TV_FILE)  # stands in for the downloaded file
    meta = resolve_row("z", _row(), tmp_path / "out")
    assert meta["preprocessing"] == "torchvision:MobileNet_V3_Small_Weights.IMAGENET1K_V1"
    assert meta["num_classes"] == 1000 and len(meta["categories"]) == 1000
    assert meta["input_shape"] == [224, 224, 3]
    model, meta2 = load_model(tmp_path / "out")
    x = np.random.default_rng(0).integers(0, 256, (2, 40, 48, 3), dtype=np.uint8)
    out = predict(model, x, meta2["preprocessing"], device="cpu", features=("penultimate",))
    assert out["logits"].shape == (2, 1000) and out["penultimate"].shape == (2, 1024)
    ref = predict(reference, x, meta2["preprocessing"], device="cpu")
    np.testing.assert_array_equal(out["logits"], ref["logits"])


def test_unknown_torchvision_weights_name(torch_home, tmp_path):
    with pytest.raises(ValueError, match="unknown weights 'NOPE'"):
        resolve_row("z", _row(weights="NOPE"), tmp_path / "out")


def test_hub_repository_from_a_local_directory(tmp_path, torch_home):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(
        "dependencies = ['torch']\n"
        "import torch\n"
        "def tiny(pretrained=False):\n"
        "    torch.manual_seed(1 if pretrained else 2)\n"
        "    return torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))\n"
    )
    row = {"model": "hubm", "source": "hub", "arch": "tiny", "weights": str(repo),
           "width": 32, "depth": 1, "preprocessing": "scale01"}
    meta = resolve_row("z", row, tmp_path / "out", in_shape=(8, 8, 1))
    assert meta["family"] == "hub" and meta["num_classes"] == 10
    model, _ = load_model(tmp_path / "out")  # rebuilt from the repo, weights from safetensors
    torch.manual_seed(1)
    pretrained = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 10))
    assert torch.equal(model[1].weight, pretrained[1].weight)


def test_hub_repository_offline_is_a_clear_error(tmp_path, torch_home):
    row = {"model": "hubm", "source": "hub", "arch": "resnet18", "weights": "someone/missing_repo",
           "width": 32, "depth": 1, "preprocessing": "imagenet"}
    with pytest.raises(WeightsMissingError, match=r"someone/missing_repo:resnet18 is not available offline"):
        resolve_row("z", row, tmp_path / "out")
