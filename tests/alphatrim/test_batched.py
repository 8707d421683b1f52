"""Batched seed-regime zoo trainer (labelfree.zoo.batched): spec 7.16-7.17 and 7.11."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import make_classification

from labelfree.alphatrim.bootstrap import alpha_hat
from labelfree.alphatrim.metrics import logit_gap
from labelfree.zoo.batched import BatchedMLPSpec, epoch_orders, init_params, train_batched_mlp


def _task(n: int = 600, d: int = 10, seed: int = 0):
    x, y = make_classification(n_samples=n, n_features=d, n_informative=5, random_state=seed)
    x = ((x - x.mean(0)) / x.std(0)).astype(np.float32)
    return x[: n // 2], y[: n // 2], x[n // 2 :], y[n // 2 :]


SPEC = BatchedMLPSpec(hidden=(16, 8), epochs=4, batch_size=32, lr=0.05, momentum=0.9)


def test_seed_regimes_control_the_two_sources_independently():
    """Spec 7.16: S_batch -> identical initial weights; S_init -> identical batch sequences."""
    xtr, ytr, xte, yte = _task()
    s_batch = train_batched_mlp(xtr, ytr, [7] * 4, [1, 2, 3, 4], SPEC, {"test": (xte, yte)})
    assert len(set(s_batch.init_hash)) == 1 and len(set(s_batch.order_hash)) == 4
    s_init = train_batched_mlp(xtr, ytr, [1, 2, 3, 4], [7] * 4, SPEC, {"test": (xte, yte)})
    assert len(set(s_init.order_hash)) == 1 and len(set(s_init.init_hash)) == 4
    # each source alone changes the trained function
    assert len({lg.tobytes() for lg in s_batch.logits["test"]}) == 4
    assert len({lg.tobytes() for lg in s_init.logits["test"]}) == 4


def test_rerun_and_batch_composition_reproduce_logits_exactly():
    """Spec 7.17: re-running a seed reproduces its logits; training alone == inside a batch."""
    xtr, ytr, xte, yte = _task()
    a = train_batched_mlp(xtr, ytr, range(6), range(10, 16), SPEC, {"t": (xte, None)})
    b = train_batched_mlp(xtr, ytr, range(6), range(10, 16), SPEC, {"t": (xte, None)},
                          model_block=4)
    alone = train_batched_mlp(xtr, ytr, [3], [13], SPEC, {"t": (xte, None)})
    np.testing.assert_array_equal(a.logits["t"], b.logits["t"])
    # measured max |diff| 0.0 here; the tolerance allows float32 reduction orders of other BLAS
    # builds (logits up to ~12, float32 spacing ~1e-6 there)
    np.testing.assert_allclose(alone.logits["t"][0], a.logits["t"][3], atol=1e-5)


def test_matches_autograd_sgd_momentum_reference():
    """Manual batched backward pass == torch autograd + torch.optim.SGD for one model."""
    xtr, ytr, xte, _ = _task(n=400)
    spec = BatchedMLPSpec(hidden=(12, 6), epochs=3, batch_size=25, lr=0.05, momentum=0.9)
    got = train_batched_mlp(xtr, ytr, [5], [9], spec, {"t": (xte, None)}).logits["t"][0]

    params = [torch.tensor(p, requires_grad=True) for p in init_params([10, 12, 6, 2], 5)]
    opt = torch.optim.SGD(params, lr=spec.lr, momentum=spec.momentum)
    x, y = torch.from_numpy(xtr), torch.from_numpy(ytr.astype(np.int64))

    def net(inp):
        h = torch.relu(inp @ params[0] + params[1])
        h = torch.relu(h @ params[2] + params[3])
        return h @ params[4] + params[5]

    for order in epoch_orders(9, len(xtr), spec.epochs):
        for s in range(0, len(order), spec.batch_size):
            idx = torch.from_numpy(order[s : s + spec.batch_size])
            opt.zero_grad()
            torch.nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
            opt.step()
    with torch.no_grad():
        ref = net(torch.from_numpy(xte)).numpy()
    # measured max |diff| 1.4e-6 on logits up to 11 (float32, 3 epochs of SGD with momentum:
    # rounding differences between the manual and the autograd pass accumulate); 7x margin
    np.testing.assert_allclose(got, ref, atol=1e-5, rtol=1e-5)


def test_undertrained_run_gets_high_alpha_hat():
    """Spec 7.11: held-out runs of the recipe have alpha-hat ~ 0 (median; a tail is normal);
    a 1-epoch run is far above all of them."""
    xtr, ytr, xte, yte = _task(n=1600, seed=3)
    spec = BatchedMLPSpec(hidden=(16, 8), epochs=12, batch_size=32, lr=0.02, momentum=0.9)
    zoo = train_batched_mlp(xtr, ytr, range(26), range(100, 126), spec, {"t": (xte, yte)})
    short = BatchedMLPSpec(hidden=(16, 8), epochs=1, batch_size=32, lr=0.02, momentum=0.9)
    weak = train_batched_mlp(xtr, ytr, [50], [150], short, {"t": (xte, yte)})
    gaps = logit_gap(zoo.logits["t"])
    cand = np.vstack([gaps[20:], logit_gap(weak.logits["t"])])  # 6 held-out runs + the weak one
    res = alpha_hat(gaps[:20], cand, n_boot=30, seed=0)
    held_out, weak_alpha = res.alpha_hat[:6], res.alpha_hat[6]
    assert np.median(held_out) < 0.02
    assert weak_alpha > 0.3 and weak_alpha > held_out.max() + 0.1


def test_batched_cnn_matches_single_model_autograd():
    """The paper's CNN (spec 3.2) trained as conv groups == each model trained on its own."""
    from labelfree.zoo.batched import BatchedCNNSpec, init_cnn_params, train_batched_cnn

    gen = np.random.default_rng(0)
    x = gen.random((64, 8, 8, 1)).astype(np.float32)
    y = (x[:, :4].mean((1, 2, 3)) > x[:, 4:].mean((1, 2, 3))).astype(np.int64)
    xe = gen.random((20, 8, 8, 1)).astype(np.float32)
    spec = BatchedCNNSpec(conv=(4, 3), hidden=(8,), epochs=2, batch_size=16, lr=0.05)
    both = train_batched_cnn(x, y, [1, 2], [3, 4], spec, {"t": (xe, None)}, num_classes=2)
    alone = train_batched_cnn(x, y, [2], [4], spec, {"t": (xe, None)}, num_classes=2)
    # measured max |diff| 4.5e-8 (logits ~0.26, float32); 20x margin
    np.testing.assert_allclose(both.logits["t"][1], alone.logits["t"][0], atol=1e-6)

    params = [torch.tensor(p, requires_grad=True)
              for p in init_cnn_params((8, 8, 1), spec, 2, 2)]
    opt = torch.optim.SGD(params, lr=spec.lr, momentum=spec.momentum)
    f = torch.nn.functional

    def net(inp):
        h = torch.from_numpy(inp).permute(0, 3, 1, 2)
        for i in range(2):
            h = f.avg_pool2d(torch.relu(f.conv2d(h, params[2 * i], params[2 * i + 1], padding=1)), 2)
        h = torch.relu(h.flatten(1) @ params[4] + params[5])
        return h @ params[6] + params[7]

    for order in epoch_orders(4, len(x), spec.epochs):
        for s in range(0, len(x), spec.batch_size):
            idx = order[s : s + spec.batch_size]
            opt.zero_grad()
            f.cross_entropy(net(x[idx]), torch.from_numpy(y[idx])).backward()
            opt.step()
    with torch.no_grad():
        np.testing.assert_allclose(alone.logits["t"][0], net(xe).numpy(), atol=1e-6)  # 3.0e-8


def test_cuda_determinism_settings_are_applied_and_restored():
    """Issue 16: batched CUDA training runs with deterministic algorithms, the cuBLAS workspace
    setting and deterministic cuDNN without autotuning; the previous flags come back after.
    (No GPU on the test machine: the settings are checked, not a CUDA rerun.)"""
    import os

    from labelfree.zoo import batched

    before = (torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.deterministic,
              torch.backends.cudnn.benchmark)
    torch.backends.cudnn.benchmark = True
    try:
        with batched.deterministic_cuda():
            assert torch.are_deterministic_algorithms_enabled()
            assert not torch.is_deterministic_algorithms_warn_only_enabled()
            assert torch.backends.cudnn.deterministic and not torch.backends.cudnn.benchmark
            assert os.environ["CUBLAS_WORKSPACE_CONFIG"] in (":4096:8", ":16:8")
        assert torch.backends.cudnn.benchmark  # restored
        assert torch.are_deterministic_algorithms_enabled() == before[0]
    finally:
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = before[1:]


def test_cnn_trainer_enters_determinism_for_cuda_only(monkeypatch):
    """train_batched_cnn(device="cuda") applies deterministic_cuda before touching the device;
    on CPU it does not change the global flags."""
    import contextlib

    from labelfree.zoo import batched

    entered = []

    class Entered(Exception):
        pass

    @contextlib.contextmanager
    def spy():
        entered.append(True)
        raise Entered
        yield  # pragma: no cover

    monkeypatch.setattr(batched, "deterministic_cuda", spy)
    x = np.zeros((8, 6, 6, 1), np.float32)
    y = np.arange(8) % 2
    spec = batched.BatchedCNNSpec(conv=(2,), hidden=(), epochs=1, batch_size=4)
    with pytest.raises(Entered):
        batched.train_batched_cnn(x, y, [0], [0], spec, {}, device="cuda")
    assert entered == [True]
    batched.train_batched_cnn(x, y, [0], [0], spec, {}, device="cpu")
    assert entered == [True]


def _cnn_zoo(device: str):
    from labelfree.zoo import batched

    gen = np.random.default_rng(3)
    y = gen.integers(0, 2, 96)
    x = (gen.standard_normal((96, 8, 8, 3)) + y[:, None, None, None]).astype(np.float32)
    spec = batched.BatchedCNNSpec(conv=(4, 2), hidden=(8,), epochs=2, batch_size=16)
    return batched.train_batched_cnn(x[:64], y[:64], [5, 6, 7], [5, 6, 7], spec,
                                     {"t": (x[64:], y[64:])}, num_classes=2, device=device,
                                     keep_weights=True)


def test_cnn_keep_weights_returns_final_weights_in_layer_order():
    """keep_weights stacks each layer's final weights over the models, in init_cnn_params'
    layer order (conv (K, out, in, 3, 3), bias (K, out), dense (K, in, out), bias (K, 1, out));
    the weights differ from the initial ones (training moved them) and CPU reruns match."""
    from labelfree.zoo import batched

    a, b = _cnn_zoo("cpu"), _cnn_zoo("cpu")
    init = batched.init_cnn_params((8, 8, 3), batched.BatchedCNNSpec(conv=(4, 2), hidden=(8,)),
                                   2, 5)
    assert [w.shape for w in a.weights] == [(3, *p.shape) for p in init]
    assert not np.array_equal(a.weights[0][0], init[0])
    assert all(np.array_equal(p, q) for p, q in zip(a.weights, b.weights, strict=True))
    plain = batched.train_batched_cnn(np.zeros((4, 4, 4, 1), np.float32), np.arange(4) % 2, [0],
                                      [0], batched.BatchedCNNSpec(conv=(1,), hidden=(), epochs=1), {})
    assert plain.weights == []  # only when asked for


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_batched_cnn_rerun_is_bit_identical():
    """Issue 16: on CUDA (under deterministic_cuda) the same seeds give bit-identical final
    weights and logits. Skipped without a GPU; bench/gpu_checks.py records the same check at
    paper-like sizes on the lent GPU machine."""
    a, b = _cnn_zoo("cuda"), _cnn_zoo("cuda")
    assert all(np.array_equal(p, q) for p, q in zip(a.weights, b.weights, strict=True))
    np.testing.assert_array_equal(a.logits["t"], b.logits["t"])


def test_cuda_determinism_warns_when_cublas_setting_comes_after_cuda_use(monkeypatch):
    """PyTorch reads CUBLAS_WORKSPACE_CONFIG once, at the first cuBLAS call (function-static in
    aten/src/ATen/cuda/CublasHandlePool.cpp): entering deterministic_cuda in a process that
    already used CUDA without it warns; with CUDA unused, or the variable already set, it
    does not."""
    import warnings

    from labelfree.zoo import batched

    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    with pytest.warns(RuntimeWarning, match="CUBLAS_WORKSPACE_CONFIG"), batched.deterministic_cuda():
        pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with batched.deterministic_cuda():  # now set (the variable stays)
            pass
        monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG")
        monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
        with batched.deterministic_cuda():
            pass
