"""The oracle, its training, the aggregation and the metric (docs/syp.md, readings R6-R8, R10)."""

from __future__ import annotations

from dataclasses import replace

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
    """Check 12: iteration i uses exactly meta-set i mod M as its batch, for every oracle of a
    stack; a shorter oracle leaves the stack after its own iterations."""
    x, c, g = _toy(sets=4, n=7)
    x[:, 5] = g  # tag rows by set
    batches = []
    real = orc._forward_a

    def spy(params, xk, *a, **k):
        batches.append([np.unique(xk[j, :, 5].numpy()).tolist() for j in range(len(xk))])
        return real(params, xk, *a, **k)

    monkeypatch.setattr(orc, "_forward_a", spy)
    res = orc.train_oracle(x, c, g, OracleConfig(passes=2.5), seed=0)
    assert res.iters == 10 and len(res.losses) == 10
    assert batches == [[[float(i % 4)]] for i in range(10)]
    batches.clear()
    short, long = orc.train_oracles(
        x, c, g, [OracleConfig(passes=1), OracleConfig(passes=2.5)], [0, 0]
    )
    assert (short.iters, long.iters) == (4, 10)
    assert batches == [[[float(i % 4)]] * (2 if i < 4 else 1) for i in range(10)]


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


def _plateau_case(sets: int = 10, n: int = 200):
    """One indicator in [0, 1] and about 85 % positive targets, the harder the larger the value:
    the shape of the default run's H-only ORA-A rows (docs/syp.md, reading R15)."""
    g = np.random.default_rng(0)
    h = g.uniform(0.0, 1.0, (sets, n)) ** 2
    c = (g.uniform(size=(sets, n)) > 0.45 * h).astype(np.float32)
    return h.reshape(-1, 1).astype(np.float32), c.reshape(-1), np.repeat(np.arange(sets), n)


def test_he_init_escapes_the_constant_plateau():
    """Reading R15: with PyTorch's default initialisation (the authors' code) ORA-A stays at the
    constant "base rate" output for 300 iterations on a small one-indicator case; with the He
    initialisation (the default) it learns a per-sample score on every seed tried."""
    from labelfree.syp.report import COLLAPSE_MIN_STD

    x, c, g = _plateau_case()
    assert 0.8 < c.mean() < 0.9
    old = orc.train_oracle(x, c, g, OracleConfig(passes=30, ora_a_init="torch"), seed=0, threads=1)
    q_old = orc.predict_scores(old.model, x)
    assert q_old.std() < 1e-3 and abs(q_old.mean() - c.mean()) < 0.02
    for seed in (0, 1):
        new = orc.train_oracle(x, c, g, OracleConfig(passes=30), seed=seed, threads=1)
        q = orc.predict_scores(new.model, x)
        assert q.std() > 3 * COLLAPSE_MIN_STD
        assert new.losses[-20:].mean() < old.losses[-20:].mean() - 0.005


def test_ora_a_init_switch():
    """``ora_a_init``: he = He-normal weights and zero biases; torch keeps PyTorch's default (the
    authors' code); anything else is refused; ORA-B keeps its truncated-normal init either way."""
    torch.manual_seed(0)
    a = orc.build_oracle("A", 6, 8, ora_a_init="he")
    assert all(
        torch.count_nonzero(m.bias) == 0 for m in a.modules() if isinstance(m, torch.nn.Linear)
    )
    w = a.net[2].weight
    assert w.std().item() == pytest.approx((2 / w.shape[1]) ** 0.5, rel=0.15)
    torch.manual_seed(0)
    t = orc.build_oracle("A", 6, 8, ora_a_init="torch")
    assert t.net[2].weight.abs().max().item() <= 1 / t.net[2].weight.shape[1] ** 0.5
    with pytest.raises(ValueError, match="ORA-A init"):
        orc.build_oracle("A", 6, 8, ora_a_init="xavier")
    torch.manual_seed(0)
    b1 = orc.build_oracle("B", 6, 8, ora_a_init="he").state_dict()
    torch.manual_seed(0)
    b2 = orc.build_oracle("B", 6, 8, ora_a_init="torch").state_dict()
    assert all(torch.equal(b1[k], b2[k]) for k in b1)


def _reference_training(x, c, g, cfg: OracleConfig, seed: int):
    """The plain recipe of reading R7, one oracle at a time: the nn.Module oracle, weighted_mse,
    torch.optim.SGD (momentum, weight decay, bias exemption) and the polynomial decay."""
    n_sets = int(g.max()) + 1
    torch.manual_seed(seed)
    model = orc.build_oracle(cfg.arch, x.shape[1], cfg.expand, cfg.dropout, cfg.ora_a_init)
    decay = [p for n, p in model.named_parameters() if cfg.decay_bias or not n.endswith("bias")]
    rest = [p for n, p in model.named_parameters() if not cfg.decay_bias and n.endswith("bias")]
    opt = torch.optim.SGD(
        [
            {"params": decay, "weight_decay": cfg.weight_decay},
            {"params": rest, "weight_decay": 0.0},
        ],
        lr=cfg.base_lr,
        momentum=cfg.momentum,
    )
    iters = int(round(cfg.passes * n_sets))
    model.train()
    for i in range(iters):
        for pg in opt.param_groups:
            pg["lr"] = orc.poly_lr(cfg.base_lr, i, iters, cfg.poly_power)
        rows = g == i % n_sets
        q = model(torch.as_tensor(x[rows]))
        loss = orc.weighted_mse(q, torch.as_tensor(c[rows]), cfg.loss_adjust)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def _low_acc_toy():
    """Six sets, two of them with fewer than 30 % positives (the loss adjustment fires there)."""
    x, c, g = _toy(sets=6, n=30)
    c[g == 1] = (np.arange(30) % 5 == 0).astype(np.float32)  # 20 % positives
    c[g == 4] = (np.arange(30) % 4 == 0).astype(np.float32)  # 26.7 %
    return x, c, g


@pytest.mark.parametrize("arch", ["A", "B"])
def test_stacked_training_equals_the_plain_recipe(arch):
    """Reading R7: each oracle of a stack (different iterations, learning rates, loss adjustment,
    bias decay, seeds; ORA-B with its dropout) gets the weights of the plain one-at-a-time loop,
    up to float summation order. Fails on any cross-talk between stacked oracles (a shared loss
    mean, momentum or learning rate), a wrong SGD step, a wrong dropout stream, or an oracle that
    does not leave the stack at its own iteration count."""
    x, c, g = _low_acc_toy()
    assert orc.low_accuracy_batches(c, g, 0.3).tolist() == [0, 1, 0, 0, 1, 0]
    base = OracleConfig(arch=arch, decay_bias=False)
    cfgs = [
        replace(base, passes=4),
        replace(base, passes=2.5, lr=0.2),
        replace(base, passes=4, loss_adjust=True),
        replace(base, passes=4),
    ]
    seeds = [3, 3, 3, 4]
    stacked = orc.train_oracles(x, c, g, cfgs, seeds, threads=1)
    for cfg, seed, res in zip(cfgs, seeds, stacked, strict=True):
        ref = _reference_training(x, c, g, cfg, seed).state_dict()
        got = res.model.state_dict()
        assert res.iters == int(round(cfg.passes * 6))
        for k in ref:
            torch.testing.assert_close(got[k], ref[k], rtol=1e-4, atol=1e-6)
    w = [r.model.state_dict()["head.weight" if arch == "B" else "net.11.weight"] for r in stacked]
    assert not torch.allclose(w[0], w[2], atol=1e-4)  # the adjustment fired and changed the run
    assert not torch.allclose(w[0], w[3], atol=1e-4)


def test_stack_refuses_mixed_shapes():
    """Only iterations, learning rate and loss adjustment may differ within a stack, and the width
    only for ORA-A without dropout (padding would change the dropout draws)."""
    x, c, g = _toy()
    with pytest.raises(ValueError, match="differ beyond"):
        orc.train_oracles(
            x, c, g, [OracleConfig(arch="B"), OracleConfig(arch="B", expand=4)], [0, 0]
        )
    with pytest.raises(ValueError, match="differ beyond"):
        drop = OracleConfig(dropout=0.1)
        orc.train_oracles(x, c, g, [drop, replace(drop, expand=4)], [0, 0])
    with pytest.raises(ValueError, match="differ beyond"):
        orc.train_oracles(x, c, g, [OracleConfig(), OracleConfig(arch="B")], [0, 0])


def test_padded_stack_equals_the_plain_recipe():
    """ORA-A runs of different indicator counts and widths (Tables 3-4) share one zero-padded
    stack; each still gets the plain loop's weights, and its padded units stay exactly zero inside
    the stack (a padded unit that learnt would change the narrower model's function)."""
    x, c, g = _low_acc_toy()
    cols = [[0], [0, 1], [0, 1, 2, 3, 4, 5]]
    cfgs = [
        OracleConfig(passes=3),
        OracleConfig(passes=3, loss_adjust=True),
        OracleConfig(passes=2, expand=4),
    ]
    xs = [np.ascontiguousarray(x[:, k]) for k in cols]
    stacked = orc.train_oracles(xs, c, g, cfgs, [5, 5, 6], threads=1)
    for xk, cfg, seed, res in zip(xs, cfgs, [5, 5, 6], stacked, strict=True):
        ref = _reference_training(xk, c, g, cfg, seed).state_dict()
        got = res.model.state_dict()
        assert got["net.0.weight"].shape == (len(xk[0]) * cfg.expand, len(xk[0]))
        for k in ref:
            torch.testing.assert_close(got[k], ref[k], rtol=1e-4, atol=1e-6)
    with pytest.raises(ValueError, match="widths"):
        orc.train_oracles(xs[:2], c, g, [OracleConfig(arch="B")] * 2, [0, 1])
