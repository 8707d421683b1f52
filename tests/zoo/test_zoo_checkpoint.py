"""Safe loading: malicious pickles are refused without running; wrong architectures are named."""

from __future__ import annotations

import os

import pytest
import torch
from safetensors.torch import save_file

from labelfree.zoo.arch import build_model
from labelfree.zoo.checkpoint import CheckpointError, read_state_dict
from labelfree.zoo.io import load_model
from labelfree.zoo.pretrained import resolve_row


class _Payload:
    """Unpickling this object would create a marker file (arbitrary code execution)."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _row(**kw):
    base = {"model": "user1", "source": "checkpoint", "arch": "lenet", "width": 4, "depth": 1,
            "weights": "", "preprocessing": "scale01"}
    return {**base, **kw}


@pytest.mark.parametrize("nested", [False, True])
def test_malicious_pickle_is_refused_and_never_runs(tmp_path, nested):
    marker = tmp_path / "pwned"
    ckpt = tmp_path / "evil.pt"
    payload = _Payload(str(marker))
    obj = {"state_dict": {"w": torch.zeros(2)}, "extra": payload} if nested else payload
    torch.save(obj, ckpt)
    with pytest.raises(CheckpointError, match=r"evil\.pt was refused: it needs pickle beyond tensors"):
        read_state_dict(ckpt)
    assert not marker.exists()
    # the workflow path (zoo_resolve) refuses it the same way
    with pytest.raises(CheckpointError, match="evil.pt"):
        resolve_row("z", _row(weights=str(ckpt)), tmp_path / "out", ".", (8, 8, 1), 10)
    assert not marker.exists() and not (tmp_path / "out" / "meta.json").exists()


def _user_model():
    torch.manual_seed(0)
    return build_model("lenet", (8, 8, 1), 10, width=4, depth=1).eval()


@pytest.mark.parametrize("fmt", ["safetensors", "plain", "nested_dataparallel"])
def test_user_checkpoint_resolves_into_the_zoo_layout(tmp_path, digits_small, fmt):
    model = _user_model()
    state = model.state_dict()
    if fmt == "safetensors":
        ckpt = tmp_path / "m.safetensors"
        save_file({k: v.contiguous() for k, v in state.items()}, str(ckpt))
    elif fmt == "plain":
        ckpt = tmp_path / "m.pt"
        torch.save(state, ckpt)
    else:
        ckpt = tmp_path / "m.pth"
        torch.save({"epoch": 3, "state_dict": {f"module.{k}": v for k, v in state.items()}}, ckpt)
    out = tmp_path / "zoo" / "user1"
    meta = resolve_row("z", _row(weights=str(ckpt)), out, ".", (8, 8, 1), 10)
    assert meta["source"] == "checkpoint" and meta["checkpoint"] == str(ckpt)
    loaded, meta2 = load_model(out)
    x = torch.from_numpy(digits_small[0][:50]).permute(0, 3, 1, 2).float() / 255
    with torch.no_grad():
        assert torch.equal(loaded(x), model(x))
    assert meta2["arch"] == "lenet" and meta2["num_classes"] == 10


def test_wrong_architecture_names_model_and_keys(tmp_path):
    torch.save(build_model("mlp", (8, 8, 1), 10, width=16).state_dict(), tmp_path / "mlp.pt")
    with pytest.raises(CheckpointError) as err:
        resolve_row("z", _row(model="mine", weights=str(tmp_path / "mlp.pt")), tmp_path / "o", ".",
                    (8, 8, 1), 10)
    msg = str(err.value)
    assert "model mine" in msg and "mlp.pt" in msg and "LeNet" in msg
    assert "missing keys" in msg and "body.0.0.weight" in msg
    # same keys, wrong widths -> the shape mismatch is named
    torch.save(build_model("lenet", (8, 8, 1), 10, width=6).state_dict(), tmp_path / "w6.pt")
    with pytest.raises(CheckpointError, match=r"shape mismatches \[body\.0\.0\.bias: checkpoint \(6,\) vs model \(4,\)"):
        resolve_row("z", _row(weights=str(tmp_path / "w6.pt")), tmp_path / "o", ".", (8, 8, 1), 10)


def test_unreadable_or_missing_checkpoint(tmp_path):
    with pytest.raises(CheckpointError, match="not found"):
        read_state_dict(tmp_path / "nope.pt")
    bad = tmp_path / "junk.safetensors"
    bad.write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointError, match="junk.safetensors"):
        read_state_dict(bad)
    torch.save([1, 2, 3], tmp_path / "list.pt")
    with pytest.raises(CheckpointError, match="expected a state dict"):
        read_state_dict(tmp_path / "list.pt")
