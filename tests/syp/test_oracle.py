"""The oracle, its training, the aggregation and the metric (docs/syp.md, readings R6-R8, R10)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import root_mean_squared_error

from labelfree.syp import aggregate as ag
from labelfree.syp import oracle as orc
from labelfree.syp.plan import OracleConfig


def test_parameter_counts_and_output_range():
    """Check 9: ORA-A 6,241 and ORA-B 28,609 parameters at F = 6, r = 8; outputs in (0,1)."""
    a, b = orc.OracleA(6, 8), orc.OracleB(6, 8)
    assert orc.count_parameters(a) == 6241
    assert orc.count_parameters(b) == 28609
    x = torch.randn(64, 6) * 10
    for m in (a, b):
        m.eval()
        q = m(x)
        assert q.shape == (64,)
        assert torch.all((q > 0) & (q < 1))


def test_orab_attention_fast_path_matches_general():
    """Reading R6: with sequence length 1 the softmax is 1, so the fast path (v only) gives the
    general attention's outputs and gradients; q and k get zero gradient in both."""
    torch.manual_seed(0)
    m = orc.OracleB(dropout=0.0)
    x = torch.randn(32, 6)
    c = (torch.rand(32) > 0.3).float()

    def run(general: bool):
        for mod in m.modules():
            if isinstance(mod, orc.Attention):
                mod.general = general
        m.zero_grad()
        q = m(x)
        ((q - c) ** 2).mean().backward()
        return q.detach().clone(), {k: p.grad.clone() for k, p in m.named_parameters()}

    q_fast, g_fast = run(False)
    q_gen, g_gen = run(True)
    torch.testing.assert_close(q_fast, q_gen, rtol=1e-6, atol=1e-7)
    for k in g_fast:
        torch.testing.assert_close(g_fast[k], g_gen[k], rtol=1e-5, atol=1e-8)
    qk_rows = g_gen["attn1.qkv.weight"][:96]
    assert torch.count_nonzero(qk_rows) == 0


def test_weighted_loss():
    """Check 10: mean target 0.2 -> positives weighted 3, negatives 1; >= 0.3 -> plain MSE."""
    q = torch.tensor([0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])
    c = torch.tensor([1.0, 1.0] + [0.0] * 8)  # mean 0.2
    expected = (2 * 3 * 0.25 + 8 * 0.25) / 10
    assert float(orc.weighted_mse(q, c, adjust=True)) == pytest.approx(expected)
    assert float(orc.weighted_mse(q, c, adjust=False)) == pytest.approx(0.25)
    c3 = torch.tensor([1.0] * 3 + [0.0] * 7)  # mean 0.3: plain MSE
    assert float(orc.weighted_mse(q, c3, adjust=True)) == pytest.approx(0.25)


def test_poly_schedule():
    """Check 11: lr(0) = base, lr(15000) ~ 0.536 base, lr -> 0 at the end (30,000 iterations)."""
    assert orc.poly_lr(0.1, 0, 30000) == 0.1
    # the halfway factor "~0.536" is (1 - 1/2)^0.9 = 0.535898...: checked to the exact value
    assert orc.poly_lr(1.0, 15000, 30000) == pytest.approx(0.5**0.9, rel=1e-12)
    assert round(orc.poly_lr(1.0, 15000, 30000), 3) == 0.536
    assert orc.poly_lr(0.1, 7500, 30000) == pytest.approx(0.1 * 0.75**0.9, rel=1e-12)
    assert orc.poly_lr(1.0, 29999, 30000) < 1e-3
    assert orc.poly_lr(1.0, 30000, 30000) == 0.0


def _toy(sets=6, n=30, seed=0):
    g = np.random.default_rng(seed)
    x = g.random((sets * n, 6)).astype(np.float32)
    c = (x[:, 0] + 0.3 * g.standard_normal(len(x)) > 0.4).astype(np.float32)
    return x, c, np.repeat(np.arange(sets), n)


def test_iteration_consumes_meta_set_i_mod_m(monkeypatch):
    """Check 12: iteration i uses exactly meta-set i mod M as its batch."""
    x, c, g = _toy(sets=4, n=7)
    x[:, 5] = g  # tag rows by set
    seen = []
    real = orc.weighted_mse

    def spy(q, cb, *a, **k):
        seen.append(len(cb))
        return real(q, cb, *a, **k)

    batches = []
    orig_forward = orc.OracleA.forward

    def fwd(self, xb):
        batches.append(np.unique(xb[:, 5].numpy()).tolist())
        return orig_forward(self, xb)

    monkeypatch.setattr(orc, "weighted_mse", spy)
    monkeypatch.setattr(orc.OracleA, "forward", fwd)
    res = orc.train_oracle(x, c, g, OracleConfig(passes=2.5), seed=0)
    assert res.iters == 10
    assert batches == [[float(i % 4)] for i in range(10)]
    assert seen == [7] * 10


def test_fixed_seed_gives_identical_weights():
    """Check 13: fixed seed -> bit-identical oracle weights on CPU across two runs (A and B)."""
    x, c, g = _toy()
    for arch in ("A", "B"):
        cfg = OracleConfig(arch=arch, passes=3)
        w1 = orc.train_oracle(x, c, g, cfg, seed=7, threads=1).model.state_dict()
        w2 = orc.train_oracle(x, c, g, cfg, seed=7, threads=1).model.state_dict()
        w3 = orc.train_oracle(x, c, g, cfg, seed=8, threads=1).model.state_dict()
        assert all(torch.equal(w1[k], w2[k]) for k in w1)
        assert not all(torch.equal(w1[k], w3[k]) for k in w1)


def test_training_learns_the_toy_signal():
    """The oracle fits a per-sample rule (correct iff feature 0 > 0.5) with the SGD recipe of reading R7."""
    g = np.random.default_rng(0)
    x = g.random((200, 6)).astype(np.float32)
    c = (x[:, 0] > 0.5).astype(np.float32)
    groups = np.repeat(np.arange(10), 20)
    res = orc.train_oracle(x, c, groups, OracleConfig(passes=100), seed=0, threads=1)
    q = orc.predict_scores(res.model, x)
    assert res.losses[-20:].mean() < 0.2 * res.losses[:20].mean()
    assert np.mean((q > 0.5) == (c > 0.5)) > 0.95


def test_threshold_aggregation_and_tau_grid():
    """Check 14: accuracy = % of q > tau; tau only from the grid; ensemble averages q first."""
    q = np.array([0.2, 0.46, 0.5, 0.52, 0.9])
    assert ag.set_accuracy(q, 0.45) == 80.0
    assert ag.set_accuracy(q, 0.5) == 40.0  # strictly greater: 0.5 itself is not counted
    assert ag.set_accuracy(q, 0.55) == 20.0
    assert ag.set_accuracy(q, mode="mean") == pytest.approx(100 * q.mean())
    scores = [q, q[::-1] * 0.9]
    tau, table = ag.select_tau(scores, np.array([60.0, 20.0]), [0.45, 0.5, 0.55])
    assert tau in (0.45, 0.5, 0.55) and set(table) == {0.45, 0.5, 0.55}
    assert table[tau] == min(table.values())
    qa, qb = np.array([0.4, 0.8]), np.array([0.62, 0.1])
    np.testing.assert_allclose(ag.ensemble_scores(qa, qb), [0.51, 0.45])
    assert ag.set_accuracy(ag.ensemble_scores(qa, qb), 0.5) == 50.0


def test_rmse_matches_sklearn():
    """Check 15: RMSE = sqrt(mean(diff^2)), equals sklearn, in percent."""
    g = np.random.default_rng(0)
    t, p = g.random(40) * 100, g.random(40) * 100
    assert ag.rmse(t, p) == pytest.approx(root_mean_squared_error(t, p))
    assert ag.rmse(t, p) == pytest.approx(np.sqrt(np.mean((t - p) ** 2)))
