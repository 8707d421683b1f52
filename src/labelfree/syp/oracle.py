"""SYP oracle networks ORA-A and ORA-B and their training on meta-sets (paper Section 3.4,
Fig. 3; the authors' code, docs/syp.md, readings R6 and R7).

One oracle per classifier; each training iteration consumes exactly one whole meta-set as its
batch (iteration ``i`` uses set ``i mod M``), SGD with momentum and a polynomial learning-rate decay,
MSE loss on the sigmoid output with the optional low-accuracy loss adjustment. ORA-A starts from
He-normal weights by default (``oracle.ora_a_init``; docs/syp.md, reading R15): from PyTorch's default
draw, as the authors' code, it can stay at the constant base-rate output for thousands of iterations.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import nn

from labelfree.syp.plan import OracleConfig

ARCHS = ("A", "B")
#: ORA-A weight initialisations (docs/syp.md, reading R15): ``he`` = He-normal weights (fan-in,
#: ReLU gain) and zero biases; ``torch`` = PyTorch's default ``nn.Linear`` initialisation, which the
#: authors' code (``model.py``, ``Mlp``) inherits.
ORA_A_INITS = ("he", "torch")


class OracleA(nn.Module):
    """ORA-A (docs/syp.md, reading R6):
    Linear(F,m)-GELU-[Linear(m,m)-GELU-Dropout]x2-Linear(m,m/2)-GELU-Dropout-Linear(m/2,1)-sigmoid
    with ``m = F r``; 6,241 parameters at F = 6, r = 8."""

    def __init__(self, n_features: int = 6, expand: int = 8, dropout: float = 0.0) -> None:
        super().__init__()
        m = n_features * expand
        self.net = nn.Sequential(
            nn.Linear(n_features, m),
            nn.GELU(),
            nn.Linear(m, m),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(m, m),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(m, m // 2),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(m // 2, 1),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.net(x)).squeeze(-1)


class Attention(nn.Module):
    """Multi-head self-attention as in the reference code (timm-style; qkv with bias, no norm)."""

    def __init__(self, dim: int, heads: int = 3, attn_drop: float = 0.1, proj_drop: float = 0.1):
        super().__init__()
        if dim % heads:
            raise ValueError(f"ORA-B: width {dim} is not divisible by {heads} heads")
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        #: force the general (batched-matmul) path even for length-1 sequences (tests)
        self.general = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        if n == 1 and not self.general:
            # Sequence length 1: softmax over one logit is exactly 1.0 and its gradient exactly 0,
            # so attn @ v == dropout(1) * v and q, k get exactly zero gradient. Only the v rows of
            # the qkv projection are computed (same values and gradients, a third of the work).
            v = nn.functional.linear(x, self.qkv.weight[2 * c :], self.qkv.bias[2 * c :])
            v = v.reshape(b, n, self.heads, c // self.heads)
            keep = self.attn_drop(torch.ones(b, 1, self.heads, 1, dtype=x.dtype))
            out = (keep * v).reshape(b, n, c)
            return self.proj_drop(self.proj(out))
        qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads)
        qkv = qkv.permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = self.attn_drop(attn.softmax(dim=-1))
        out = (attn @ v).transpose(1, 2).reshape(b, n, c)
        return self.proj_drop(self.proj(out))


class OracleB(nn.Module):
    """ORA-B (docs/syp.md, reading R6): Linear(F,m)-GELU, each sample as a length-1 sequence, two
    residual blocks ``x += MHSA(x); x += Linear(GELU(Linear(x)))`` (Dropout 0.1 after the first),
    head Linear(m,1)-sigmoid; truncated-normal(0.02) weights, zero biases. 28,609 parameters at F=6, r=8.
    With sequence length 1 the attention softmax is identically 1 (kept as the authors wrote it)."""

    def __init__(
        self, n_features: int = 6, expand: int = 8, dropout: float = 0.1, heads: int = 3
    ) -> None:
        super().__init__()
        m = n_features * expand
        self.embed = nn.Sequential(nn.Linear(n_features, m), nn.GELU())
        self.attn1 = Attention(m, heads, dropout, dropout)
        self.mlp1 = nn.Sequential(nn.Linear(m, m), nn.GELU(), nn.Linear(m, m))
        self.drop = nn.Dropout(dropout)
        self.attn2 = Attention(m, heads, dropout, dropout)
        self.mlp2 = nn.Sequential(nn.Linear(m, m), nn.GELU(), nn.Linear(m, m))
        self.head = nn.Linear(m, 1)
        self.apply(self._init)

    @staticmethod
    def _init(mod: nn.Module) -> None:
        if isinstance(mod, nn.Linear):
            nn.init.trunc_normal_(mod.weight, std=0.02, a=-2.0, b=2.0)
            nn.init.zeros_(mod.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x).unsqueeze(1)
        h = h + self.attn1(h)
        h = h + self.mlp1(h)
        h = self.drop(h)
        h = h + self.attn2(h)
        h = h + self.mlp2(h)
        return torch.sigmoid(self.head(h[:, 0])).squeeze(-1)


def he_init(model: nn.Module) -> nn.Module:
    """He-normal weights (fan-in, ReLU gain, as for GELU) and zero biases on every linear layer
    (docs/syp.md, reading R15)."""
    for mod in model.modules():
        if isinstance(mod, nn.Linear):
            nn.init.kaiming_normal_(mod.weight, nonlinearity="relu")
            nn.init.zeros_(mod.bias)
    return model


def build_oracle(
    arch: str,
    n_features: int,
    expand: int = 8,
    dropout: float | None = None,
    ora_a_init: str = "he",
):
    """ORA-A (``arch='A'``, dropout default 0.0, initialised as ``ora_a_init``) or ORA-B (``'B'``,
    dropout default 0.1, truncated-normal weights as the authors' code)."""
    if arch == "A":
        if ora_a_init not in ORA_A_INITS:
            raise ValueError(f"ORA-A init {ora_a_init!r} is not one of {ORA_A_INITS}")
        model = OracleA(n_features, expand, 0.0 if dropout is None else dropout)
        return he_init(model) if ora_a_init == "he" else model
    if arch == "B":
        return OracleB(n_features, expand, 0.1 if dropout is None else dropout)
    raise ValueError(f"oracle arch {arch!r} is not one of {ARCHS}")


def count_parameters(model: nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def poly_lr(base: float, i: int, iters: int, power: float = 0.9) -> float:
    """Polynomial decay ``base (1 - i/iters)^power`` (docs/syp.md, reading R7; the paper calls it
    linear)."""
    return base * max(0.0, 1.0 - i / iters) ** power


def weighted_mse(
    q: torch.Tensor, c: torch.Tensor, adjust: bool, low_acc: float = 0.3, pos_weight: float = 3.0
) -> torch.Tensor:
    """MSE between sigmoid outputs and 0/1 targets (docs/syp.md, reading R7). With ``adjust`` and a
    batch mean target below ``low_acc``, positives are weighted ``pos_weight`` and negatives 1, then
    averaged."""
    err = (q - c) ** 2
    if adjust and float(c.mean()) < low_acc:
        w = torch.where(c > 0.5, torch.full_like(c, pos_weight), torch.ones_like(c))
        return (w * err).mean()
    return err.mean()


@dataclass
class TrainResult:
    """One trained oracle. ``seconds``: wall time of the stack it was trained in
    (:func:`train_oracles`) divided by the stack's size."""

    model: nn.Module
    iters: int
    seconds: float
    losses: np.ndarray = field(repr=False)


#: OracleConfig fields that may differ between the oracles of one stack (:func:`train_oracles`).
STACK_FREE = ("passes", "lr", "loss_adjust")


def dropout_p(cfg: OracleConfig) -> float:
    """The oracle's dropout probability: ``cfg.dropout``, else 0 for ORA-A and 0.1 for ORA-B."""
    if cfg.dropout is not None:
        return float(cfg.dropout)
    return 0.0 if cfg.arch == "A" else 0.1


def paddable(cfg: OracleConfig) -> bool:
    """ORA-A without dropout: narrower oracles (fewer indicators, smaller ``expand``) can share a
    stack, zero-padded to the widest (:func:`_stacked`)."""
    return cfg.arch == "A" and dropout_p(cfg) == 0.0


def stack_key(cfg: OracleConfig) -> OracleConfig:
    """What oracles trained together in one stack must share: ``cfg`` without :data:`STACK_FREE`
    (and without ``expand`` where :func:`paddable`)."""
    out = replace(cfg, passes=0.0, lr=None, loss_adjust=False)
    return replace(out, expand=0) if paddable(cfg) else out


def low_accuracy_batches(c: np.ndarray, groups: np.ndarray, low_acc: float) -> np.ndarray:
    """(M,) bool: meta-sets whose mean target is below ``low_acc``, where a loss-adjusted oracle
    weights the positives (:func:`weighted_mse`, computed as there on the float32 batch)."""
    ct = torch.as_tensor(np.asarray(c, dtype=np.float32))
    g = np.asarray(groups, dtype=np.int64)
    bounds = np.searchsorted(g, np.arange(int(g.max()) + 2))
    return np.array(
        [float(ct[bounds[k] : bounds[k + 1]].mean()) < low_acc for k in range(len(bounds) - 1)]
    )


def _stacked(models: Sequence[nn.Module]) -> dict[str, torch.Tensor]:
    """The parameters of K oracles of one architecture as leaf tensors with a leading model axis:
    linear weights transposed to (K, in, out), biases as (K, 1, out), so ``baddbmm(b, h, w)`` is
    ``nn.Linear`` applied to every model's rows at once. Narrower models are zero-padded to the
    widest: a padded unit has zero weights in and out, so its output (GELU(0) = 0), its gradients
    and hence its weights stay exactly zero, and the model computes what it computes alone."""
    out = {}
    for name, _ in models[0].named_parameters():
        ts = [m.get_parameter(name).detach() for m in models]
        ts = [u.T if u.ndim == 2 else u.unsqueeze(0) for u in ts]
        shape = [max(u.shape[d] for u in ts) for d in range(2)]
        t = torch.zeros((len(ts), *shape))
        for k, u in enumerate(ts):
            t[k, : u.shape[0], : u.shape[1]] = u
        out[name] = t.requires_grad_()
    return out


def _unstack(params: Mapping[str, torch.Tensor], k: int, model: nn.Module) -> nn.Module:
    """Copy model ``k`` of a stack back into ``model`` (inverse of :func:`_stacked`)."""
    with torch.no_grad():
        for name, t in params.items():
            p = model.get_parameter(name)
            if p.ndim == 2:
                p.copy_(t[k, : p.shape[1], : p.shape[0]].T)
            else:
                p.copy_(t[k, 0, : p.shape[0]])
    return model


class _Dropout:
    """Dropout for a stack with one generator per model: model k's masks are the draws that
    ``nn.functional.dropout`` (``bernoulli_(1 - p)``, scaled by ``1 / (1 - p)``) would make from
    generator k, in the same order as the oracle's forward, whatever else is in the stack."""

    def __init__(self, gens: list[torch.Generator]) -> None:
        self.gens = gens

    def mask(self, shape: tuple[int, ...], p: float) -> torch.Tensor:
        noise = torch.empty((len(self.gens), *shape))
        for k, g in enumerate(self.gens):
            noise[k].bernoulli_(1.0 - p, generator=g)
        return noise.div_(1.0 - p)

    def __call__(self, h: torch.Tensor, p: float) -> torch.Tensor:
        return h if p == 0.0 else h * self.mask(tuple(h.shape[1:]), p)


def _linear(params: Mapping[str, torch.Tensor], name: str, h: torch.Tensor) -> torch.Tensor:
    return torch.baddbmm(params[f"{name}.bias"], h, params[f"{name}.weight"])


def _forward_a(
    params: Mapping[str, torch.Tensor], x: torch.Tensor, drop: _Dropout, p: float
) -> torch.Tensor:
    """:class:`OracleA`'s forward on a stack: ``x`` (K, B, F) -> scores (K, B)."""
    gelu = nn.functional.gelu
    h = gelu(_linear(params, "net.0", x))
    for name in ("net.2", "net.5", "net.8"):
        h = drop(gelu(_linear(params, name, h)), p)
    return torch.sigmoid(_linear(params, "net.11", h)).squeeze(-1)


def _forward_b(
    params: Mapping[str, torch.Tensor], x: torch.Tensor, drop: _Dropout, p: float, heads: int
) -> torch.Tensor:
    """:class:`OracleB`'s forward on a stack (sequence length 1: :class:`Attention`'s value-only
    path), with its dropout draws in the same order: ``x`` (K, B, F) -> scores (K, B)."""
    gelu = nn.functional.gelu
    h = gelu(_linear(params, "embed.0", x))
    k, b, m = h.shape
    for i, (attn, mlp) in enumerate((("attn1", "mlp1"), ("attn2", "mlp2"))):
        w, bias = params[f"{attn}.qkv.weight"], params[f"{attn}.qkv.bias"]
        v = torch.baddbmm(bias[:, :, 2 * m :], h, w[:, :, 2 * m :])
        v = v.reshape(k, b, heads, m // heads)
        if p:
            v = v * drop.mask((b, heads, 1), p)
        h = h + drop(_linear(params, f"{attn}.proj", v.reshape(k, b, m)), p)
        h = h + _linear(params, f"{mlp}.2", gelu(_linear(params, f"{mlp}.0", h)))
        if i == 0:
            h = drop(h, p)
    return torch.sigmoid(_linear(params, "head", h)).squeeze(-1)


def train_oracles(
    x: np.ndarray,
    c: np.ndarray,
    groups: np.ndarray,
    cfgs: Sequence[OracleConfig],
    seeds: Sequence[int],
    threads: int | None = None,
) -> list[TrainResult]:
    """Train K oracles on the same rows at once (docs/syp.md, reading R7), oracle k from ``cfgs[k]``
    and ``seeds[k]``; the configurations may differ only in :data:`STACK_FREE` (:func:`stack_key`).

    ``x`` (R, F) normalised indicators, or K such arrays, one per oracle (e.g. with and without
    normalisation; ORA-A without dropout also with different indicator counts and widths,
    zero-padded to the widest, :func:`_stacked`), ``c`` (R,) 0/1 correctness, ``groups`` (R,) meta-set id 0..M-1 with rows of a
    set contiguous. Oracle k runs ``iters_k = round(passes_k * M)``
    iterations; iteration ``i`` uses the whole meta-set ``i mod M`` as its batch (no shuffling).
    The K models are stacked along a leading axis (batched matrix products) and each one's loss,
    gradient, SGD step (momentum, weight decay, polynomial decay) and dropout draws are its own:
    oracle k gets the weights it would get trained alone (same initial draw after
    ``torch.manual_seed(seeds[k])``, same dropout masks), up to floating-point summation order.
    A finished oracle leaves the stack. Deterministic for fixed seeds on CPU.
    """
    if len(cfgs) != len(seeds) or not cfgs:
        raise ValueError(f"train_oracles: {len(cfgs)} configurations for {len(seeds)} seeds")
    keys = {stack_key(cf) for cf in cfgs}
    if len(keys) > 1:
        raise ValueError(f"train_oracles: configurations differ beyond {STACK_FREE}: {keys}")
    cfg0 = cfgs[0]
    if threads:
        torch.set_num_threads(threads)
    if isinstance(x, np.ndarray) and x.ndim == 2:
        x = [x] * len(cfgs)
    xs = [np.asarray(u, dtype=np.float32) for u in x]
    if len(xs) != len(cfgs) or any(u.ndim != 2 or len(u) != len(xs[0]) for u in xs):
        raise ValueError(
            f"train_oracles: x does not give (R, F) rows for each of {len(cfgs)} oracles"
        )
    widths = {(u.shape[1], cf.expand) for u, cf in zip(xs, cfgs, strict=True)}
    if len(widths) > 1 and not paddable(cfg0):
        raise ValueError(f"train_oracles: widths (features, expand) {sorted(widths)} differ")
    xt = torch.zeros((len(xs), len(xs[0]), max(u.shape[1] for u in xs)))
    for k, u in enumerate(xs):
        xt[k, :, : u.shape[1]] = torch.as_tensor(u)  # padded columns meet zero weights
    g = np.asarray(groups, dtype=np.int64)
    if len(g) != xt.shape[1] or len(c) != xt.shape[1]:
        raise ValueError(f"train_oracle: rows x={xt.shape[1]}, c={len(c)}, groups={len(g)} differ")
    if np.any(np.diff(g) < 0):
        raise ValueError("train_oracle: rows of each meta-set must be contiguous and ordered")
    n_sets = int(g.max()) + 1
    bounds = np.searchsorted(g, np.arange(n_sets + 1))
    iters = [max(1, int(round(cf.passes * n_sets))) for cf in cfgs]
    models, gens = [], []
    for k, (cf, seed) in enumerate(zip(cfgs, seeds, strict=True)):
        torch.manual_seed(seed)
        models.append(build_oracle(cf.arch, xs[k].shape[1], cf.expand, cf.dropout, cf.ora_a_init))
        gen = torch.Generator()
        gen.set_state(torch.get_rng_state())  # dropout draws continue the seeded stream
        gens.append(gen)
    p_drop = dropout_p(cfg0)
    heads = models[0].attn1.heads if cfg0.arch == "B" else 0
    params = _stacked(models)
    names = list(params)
    # weight decay per tensor; the biases are exempt without decay_bias
    decayed = [
        n for n in names if cfg0.weight_decay and (cfg0.decay_bias or not n.endswith("bias"))
    ]
    ct = torch.as_tensor(np.asarray(c, dtype=np.float32))
    batches = [(int(bounds[k]), int(bounds[k + 1])) for k in range(n_sets)]
    targets = [ct[lo:hi] for lo, hi in batches]
    # weighted_mse per oracle: a loss-adjusted oracle weights the positives of a batch whose mean
    # target is below low_acc_threshold by pos_weight
    adjust = torch.tensor([cf.loss_adjust for cf in cfgs])
    low = low_accuracy_batches(c, g, cfg0.low_acc_threshold)
    pos_w = [torch.where(cb > 0.5, cfg0.pos_weight, 1.0) for cb in targets]
    # the negated learning rate of every oracle at every iteration (poly_lr), float32 as the step
    neg_lr_all = torch.tensor(
        [
            [-poly_lr(cf.base_lr, i, n, cfg0.poly_power) for cf, n in zip(cfgs, iters, strict=True)]
            for i in range(max(iters))
        ]
    )
    active = list(range(len(cfgs)))  # the oracle (index into cfgs) of each stack row
    losses = [np.empty(n, dtype=np.float32) for n in iters]
    results: dict[int, TrainResult] = {}
    drop = _Dropout(list(gens))
    bufs: list[torch.Tensor] = []
    t0 = time.perf_counter()
    i, n_iter = 0, max(iters)
    while i < n_iter:
        # one segment: the iterations until the next oracle leaves the stack; the stack's rows,
        # batches, learning rates and loss weights are fixed within it
        end = min(iters[k] for k in active)
        xb = [xt[:, lo:hi].contiguous() for lo, hi in batches]
        neg_lr = neg_lr_all[:, active]
        weight = [
            torch.where(adjust[active, None], pos_w[s], 1.0)
            if low[s] and bool(adjust[active].any())
            else None
            for s in range(n_sets)
        ]
        plist = [params[n] for n in names]
        dec = [params[n] for n in decayed]
        dec_at = [names.index(n) for n in decayed]
        seg_losses = []
        for it in range(i, end):
            s = it % n_sets
            if cfg0.arch == "A":
                q = _forward_a(params, xb[s], drop, p_drop)
            else:
                q = _forward_b(params, xb[s], drop, p_drop, heads)
            err = (q - targets[s]) ** 2
            if weight[s] is not None:
                err = weight[s] * err
            per_model = err.mean(dim=1)
            # oracle k's gradient is that of its own loss only
            grads = list(torch.autograd.grad(per_model.sum(), plist))
            seg_losses.append(per_model.detach())
            with torch.no_grad():  # torch.optim.SGD's step (dampening 0, no Nesterov), per oracle
                if dec:
                    for j, d in zip(
                        dec_at,
                        torch._foreach_add(
                            [grads[j] for j in dec_at], dec, alpha=cfg0.weight_decay
                        ),
                        strict=True,
                    ):
                        grads[j] = d
                if cfg0.momentum:
                    if bufs:
                        torch._foreach_mul_(bufs, cfg0.momentum)
                        torch._foreach_add_(bufs, grads)
                    else:
                        bufs = [d.clone() for d in grads]
                    grads = bufs
                step = neg_lr[it].view(-1, 1, 1)
                torch._foreach_addcmul_(plist, grads, [step] * len(plist))
        i = end
        seg = torch.stack(seg_losses).numpy()
        for j, k in enumerate(active):
            losses[k][i - len(seg) : i] = seg[:, j]
        done = [j for j, k in enumerate(active) if iters[k] == end]
        for j in done:  # finished oracles leave the stack (later steps would have lr 0)
            k = active[j]
            results[k] = TrainResult(
                _unstack(params, j, models[k]).eval(), iters[k], 0.0, losses[k]
            )
        keep = [j for j in range(len(active)) if j not in done]
        if not keep:
            break
        params = {n: t.detach()[keep].clone().requires_grad_() for n, t in params.items()}
        bufs = [b[keep].clone() for b in bufs]
        active = [active[j] for j in keep]
        xt = xt[keep]
        drop.gens = [gens[k] for k in active]
    seconds = (time.perf_counter() - t0) / len(cfgs)
    return [replace(results[k], seconds=seconds) for k in range(len(cfgs))]


def train_oracle(
    x: np.ndarray,
    c: np.ndarray,
    groups: np.ndarray,
    cfg: OracleConfig,
    seed: int,
    threads: int | None = None,
) -> TrainResult:
    """Train one oracle (:func:`train_oracles` with a stack of one; docs/syp.md, reading R7)."""
    return train_oracles(x, c, groups, [cfg], [seed], threads)[0]


@torch.no_grad()
def predict_scores(model: nn.Module, x: np.ndarray) -> np.ndarray:
    """Oracle scores ``q`` in (0, 1) for the rows of ``x`` (eval mode, float64 out)."""
    model.eval()
    return model(torch.as_tensor(np.asarray(x, dtype=np.float32))).double().numpy()
