"""SYP oracle networks ORA-A and ORA-B and their training on meta-sets (paper Section 3.4,
Fig. 3; the authors' code, docs/syp.md, readings R6 and R7).

One oracle per classifier; each training iteration consumes exactly one whole meta-set as its
batch (iteration ``i`` uses set ``i mod M``), SGD with momentum and a polynomial learning-rate decay,
MSE loss on the sigmoid output with the optional low-accuracy loss adjustment.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from labelfree.syp.plan import OracleConfig

ARCHS = ("A", "B")


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


def build_oracle(arch: str, n_features: int, expand: int = 8, dropout: float | None = None):
    """ORA-A (``arch='A'``, dropout default 0.0) or ORA-B (``'B'``, dropout default 0.1)."""
    if arch == "A":
        return OracleA(n_features, expand, 0.0 if dropout is None else dropout)
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
    model: nn.Module
    iters: int
    seconds: float
    losses: np.ndarray = field(repr=False)


def train_oracle(
    x: np.ndarray,
    c: np.ndarray,
    groups: np.ndarray,
    cfg: OracleConfig,
    seed: int,
    threads: int | None = None,
) -> TrainResult:
    """Train one oracle on stacked meta-set rows (docs/syp.md, reading R7).

    ``x`` (R, F) normalised indicators, ``c`` (R,) 0/1 correctness, ``groups`` (R,) meta-set id
    0..M-1 with rows of a set contiguous. ``iters = round(passes * M)``; iteration ``i`` uses the
    whole meta-set ``i mod M`` as its batch (no shuffling). Deterministic for a fixed seed on CPU.
    """
    if threads:
        torch.set_num_threads(threads)
    g = np.asarray(groups, dtype=np.int64)
    if len(g) != len(x) or len(c) != len(x):
        raise ValueError(f"train_oracle: rows x={len(x)}, c={len(c)}, groups={len(g)} differ")
    if np.any(np.diff(g) < 0):
        raise ValueError("train_oracle: rows of each meta-set must be contiguous and ordered")
    n_sets = int(g.max()) + 1
    bounds = np.searchsorted(g, np.arange(n_sets + 1))
    iters = max(1, int(round(cfg.passes * n_sets)))
    torch.manual_seed(seed)
    model = build_oracle(cfg.arch, x.shape[1], cfg.expand, cfg.dropout)
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        (no_decay if (name.endswith("bias") and not cfg.decay_bias) else decay).append(p)
    groups_opt = [{"params": decay, "weight_decay": cfg.weight_decay}]
    if no_decay:
        groups_opt.append({"params": no_decay, "weight_decay": 0.0})
    base = cfg.base_lr
    opt = torch.optim.SGD(groups_opt, lr=base, momentum=cfg.momentum)
    xt = torch.as_tensor(np.asarray(x, dtype=np.float32))
    ct = torch.as_tensor(np.asarray(c, dtype=np.float32))
    batches = [
        (xt[bounds[k] : bounds[k + 1]], ct[bounds[k] : bounds[k + 1]]) for k in range(n_sets)
    ]
    losses = np.empty(iters, dtype=np.float32)
    model.train()
    t0 = time.perf_counter()
    for i in range(iters):
        lr = poly_lr(base, i, iters, cfg.poly_power)
        for pg in opt.param_groups:
            pg["lr"] = lr
        xb, cb = batches[i % n_sets]
        loss = weighted_mse(model(xb), cb, cfg.loss_adjust, cfg.low_acc_threshold, cfg.pos_weight)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses[i] = loss.detach()
    model.eval()
    return TrainResult(model, iters, time.perf_counter() - t0, losses)


@torch.no_grad()
def predict_scores(model: nn.Module, x: np.ndarray) -> np.ndarray:
    """Oracle scores ``q`` in (0, 1) for the rows of ``x`` (eval mode, float64 out)."""
    model.eval()
    return model(torch.as_tensor(np.asarray(x, dtype=np.float32))).double().numpy()
