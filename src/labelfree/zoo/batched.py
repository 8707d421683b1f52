"""Hundreds of tiny MLPs trained together: one batched network, per-model semantics.

Used by the `alphatrim` study (alpha-trimming paper, Section V; docs/zoo.md, reading R5), whose
seed-regime zoos need hundreds of runs of one small recipe that differ only in their random seeds.
Training the runs one by one (labelfree.zoo.train) pays Python and framework overhead per step and
per model; here the K models are stacked along a leading axis and every step is one batched matrix
product (``torch.baddbmm``) per layer for all K models at once.

Per-model semantics are exactly those of independent training runs:

- initial weights of model k come only from ``numpy.random.default_rng(init_seeds[k])``
  (He-normal weights N(0, 2/fan_in), zero biases, layer by layer);
- the order of its mini-batches comes only from ``numpy.random.default_rng(batch_seeds[k])``
  (one permutation of the training set per epoch; the last batch may be smaller);
- model k sees only its own batches; gradients, SGD with momentum (PyTorch convention
  v <- mu v + g, p <- p - lr v) and the cross-entropy loss are computed per model (manual
  backward pass, no autograd, no dropout, no augmentation).

Hence S_init (only init varies), S_batch (only batch order) and S_all (both) zoos are obtained by
choosing the two seed lists; the two sources are independently controllable, and the same seeds
give the same logits (float32 CPU kernels: reruns are bitwise identical, and training a model
alone matches training it inside a batch).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from labelfree.zoo.preprocess import standard_nchw


@dataclass(frozen=True)
class BatchedMLPSpec:
    """The training recipe shared by every model of a batched zoo (docs/zoo.md, reading R5).

    hidden: widths of the hidden ReLU layers ((32, 16) gives the 64-32-16-2 MLP on digits);
    epochs, batch_size, lr, momentum: SGD with momentum on the mean cross-entropy.
    """

    hidden: tuple[int, ...] = (32, 16)
    epochs: int = 30
    batch_size: int = 32
    lr: float = 0.01
    momentum: float = 0.9

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or self.lr <= 0 or not 0 <= self.momentum < 1:
            raise ValueError(f"BatchedMLPSpec: invalid recipe {self}")
        if any(int(h) < 1 for h in self.hidden):
            raise ValueError(f"BatchedMLPSpec: hidden widths must be >= 1, got {self.hidden}")


@dataclass(frozen=True)
class BatchedZoo:
    """Outputs of :func:`train_batched_mlp`.

    logits: eval-set name -> float32 (K, N, C) final logits of every model.
    curves: eval-set name -> {"accuracy": (K, E) percent, "loss": (K, E)} after each epoch
            (only for eval sets with labels, when ``curves=True``).
    init_hash / order_hash: per model, a short hash of its initial weights and of its first
            epoch's permutation (equal across an S_batch / S_init zoo respectively).
    seconds: wall-clock training time.
    weights: final parameters stacked over models, (K, ...) each in layer order, only when
            asked for (``keep_weights=True`` of :func:`train_batched_cnn`; reproducibility checks).
    """

    logits: dict[str, np.ndarray]
    curves: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    init_hash: list[str] = field(default_factory=list)
    order_hash: list[str] = field(default_factory=list)
    seconds: float = 0.0
    weights: list[np.ndarray] = field(default_factory=list)


def init_params(sizes: Sequence[int], init_seed: int) -> list[np.ndarray]:
    """He-normal weights and zero biases of one MLP from its init seed: [W1, b1, W2, b2, ...]."""
    gen = np.random.default_rng(int(init_seed))
    params: list[np.ndarray] = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        w = gen.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)
        params += [w.astype(np.float32), np.zeros((1, fan_out), dtype=np.float32)]
    return params


def epoch_orders(batch_seed: int, n: int, epochs: int) -> np.ndarray:
    """The (epochs, n) visiting order of the training points of one model, from its batch seed."""
    gen = np.random.default_rng(int(batch_seed))
    return np.stack([gen.permutation(n) for _ in range(epochs)])


def _short_hash(*arrays: np.ndarray) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _forward(params: list[torch.Tensor], x: torch.Tensor) -> tuple[torch.Tensor, list]:
    """Batched forward pass. x: (K, B, D) or (B, D) shared. Returns logits and activations."""
    acts = []
    h = x
    n_layers = len(params) // 2
    for i in range(n_layers):
        w, b = params[2 * i], params[2 * i + 1]
        # a 2-D input is shared by all models (evaluation); 3-D holds per-model batches
        a = torch.matmul(h, w) + b if h.dim() == 2 else torch.baddbmm(b, h, w)
        acts.append((h, a))
        h = torch.relu(a) if i < n_layers - 1 else a
    return h, acts


def _evaluate(
    params: list[torch.Tensor], x: torch.Tensor, y: torch.Tensor | None, block: int
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """Logits (K, N, C) of all models on a shared input, evaluated in blocks of models."""
    k = params[0].shape[0]
    out, acc, loss = [], [], []
    for s in range(0, k, block):
        logits, _ = _forward([p[s : s + block] for p in params], x)
        out.append(logits)
        if y is not None:
            acc.append((logits.argmax(-1) == y).double().mean(-1) * 100.0)
            logp = torch.log_softmax(logits.double(), dim=-1)
            loss.append(-logp.gather(-1, y.expand(logits.shape[0], -1)[..., None]).mean((1, 2)))
    logits = torch.cat(out).numpy()
    if y is None:
        return logits, None, None
    return logits, torch.cat(acc).numpy(), torch.cat(loss).numpy()


def train_batched_mlp(
    x_train: np.ndarray,
    y_train: np.ndarray,
    init_seeds: Sequence[int],
    batch_seeds: Sequence[int],
    recipe: BatchedMLPSpec,
    eval_sets: Mapping[str, tuple[np.ndarray, np.ndarray | None]],
    num_classes: int | None = None,
    curves: bool = False,
    threads: int = 1,
    model_block: int = 256,
    progress: Callable[[int, int], None] | None = None,
) -> BatchedZoo:
    """Train K = len(init_seeds) MLPs of one recipe together; return their logits (see module).

    x_train: (n, D) float features; y_train: (n,) int labels in [0, C).
    init_seeds, batch_seeds: per-model seeds of the two independent RNG streams.
    eval_sets: name -> (x (N, D), y (N,) or None); logits of every model on each are returned.
    curves: also record per-epoch accuracy/loss on the labelled eval sets (alpha-trimming paper, Fig. 4 right).
    threads: torch intra-op threads; keep 1 on shared machines (small batched products gain
        little from threads and lose much under contention: 10x slower measured at load 8 on 2 cores).
    model_block: models trained together per block (bounds memory; results do not depend on it).
    progress: called as progress(models_done, K) after each block.

    Long (about 100 lines) on purpose: the manual forward and backward pass of every layer
    and the per-model RNG draws are one numerical recipe, kept in the order that makes
    results bitwise reproducible; splitting it would spread that order over several frames.
    """
    if len(init_seeds) != len(batch_seeds) or len(init_seeds) == 0:
        raise ValueError(
            f"train_batched_mlp: need as many init seeds ({len(init_seeds)}) as batch seeds "
            f"({len(batch_seeds)}), at least one"
        )
    x_np = np.asarray(x_train, dtype=np.float32)
    y_np = np.asarray(y_train, dtype=np.int64)
    if x_np.ndim != 2 or y_np.shape != (x_np.shape[0],):
        raise ValueError(f"train_batched_mlp: x {x_np.shape} / y {y_np.shape} must be (n, D), (n,)")
    n, dim = x_np.shape
    c = int(num_classes or int(y_np.max()) + 1)
    if y_np.min() < 0 or y_np.max() >= c:
        raise ValueError(f"train_batched_mlp: labels must lie in [0, {c}), got {y_np.min()}..")
    sizes = [dim, *map(int, recipe.hidden), c]
    t0 = time.perf_counter()
    prev_threads = torch.get_num_threads()
    torch.set_num_threads(max(1, int(threads)))
    try:
        x = torch.from_numpy(x_np)
        y = torch.from_numpy(y_np)
        evals = {
            name: (
                torch.from_numpy(np.asarray(xe, dtype=np.float32)),
                None if ye is None else torch.from_numpy(np.asarray(ye, dtype=np.int64)),
            )
            for name, (xe, ye) in eval_sets.items()
        }
        k_total = len(init_seeds)
        logits = {name: [] for name in evals}
        curve_acc = {name: [] for name, (_, ye) in evals.items() if ye is not None and curves}
        curve_loss = {name: [] for name in curve_acc}
        init_hash, order_hash = [], []
        with torch.no_grad():
            for s in range(0, k_total, model_block):
                seeds_i = list(init_seeds[s : s + model_block])
                seeds_b = list(batch_seeds[s : s + model_block])
                per_model = [init_params(sizes, sd) for sd in seeds_i]
                init_hash += [_short_hash(*p) for p in per_model]
                params = [
                    torch.from_numpy(np.stack([p[j] for p in per_model]))
                    for j in range(len(per_model[0]))
                ]
                orders = np.stack([epoch_orders(sd, n, recipe.epochs) for sd in seeds_b])
                order_hash += [_short_hash(o[0]) for o in orders]
                block_curves = _train_block(params, x, y, orders, recipe, evals if curves else {})
                for name, (xe, ye) in evals.items():
                    lg, _, _ = _evaluate(params, xe, ye, block=64)
                    logits[name].append(lg)
                for name in curve_acc:
                    curve_acc[name].append(block_curves[name][0])
                    curve_loss[name].append(block_curves[name][1])
                if progress is not None:
                    progress(min(s + model_block, k_total), k_total)
    finally:
        torch.set_num_threads(prev_threads)
    out_curves = (
        {
            name: {
                "accuracy": np.concatenate(curve_acc[name]),
                "loss": np.concatenate(curve_loss[name]),
            }
            for name in curve_acc
        }
        if curves
        else {}
    )
    return BatchedZoo(
        logits={name: np.concatenate(v).astype(np.float32) for name, v in logits.items()},
        curves=out_curves,
        init_hash=init_hash,
        order_hash=order_hash,
        seconds=time.perf_counter() - t0,
    )


def _train_block(
    params: list[torch.Tensor],
    x: torch.Tensor,
    y: torch.Tensor,
    orders: np.ndarray,
    recipe: BatchedMLPSpec,
    evals: Mapping[str, tuple[torch.Tensor, torch.Tensor | None]],
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """SGD with momentum for one block of models, in place on ``params``; per-epoch curves."""
    k, epochs, n = orders.shape
    velocity = [torch.zeros_like(p) for p in params]
    n_layers = len(params) // 2
    curves: dict[str, tuple[list, list]] = {name: ([], []) for name, (_, ye) in evals.items()
                                            if ye is not None}
    orders_t = torch.from_numpy(orders)
    for e in range(epochs):
        for start in range(0, n, recipe.batch_size):
            idx = orders_t[:, e, start : start + recipe.batch_size]  # (K, B) per-model batches
            bsz = idx.shape[1]
            xb, yb = x[idx], y[idx]
            out, acts = _forward(params, xb)
            # d(mean CE)/d logits = (softmax - onehot) / B
            grad = torch.softmax(out, dim=-1)
            grad.scatter_add_(-1, yb[..., None], torch.full_like(yb[..., None], -1.0,
                                                                 dtype=grad.dtype))
            grad /= bsz
            for i in range(n_layers - 1, -1, -1):
                h_in, a = acts[i]
                if i < n_layers - 1:
                    grad = grad * (a > 0)
                gw = torch.bmm(h_in.transpose(1, 2), grad)
                gb = grad.sum(dim=1, keepdim=True)
                if i > 0:
                    grad_prev = torch.bmm(grad, params[2 * i].transpose(1, 2))
                for j, g in ((2 * i, gw), (2 * i + 1, gb)):
                    velocity[j].mul_(recipe.momentum).add_(g)
                    params[j].sub_(recipe.lr * velocity[j])
                if i > 0:
                    grad = grad_prev
        for name, (xe, ye) in evals.items():
            if ye is None:
                continue
            _, acc, loss = _evaluate(params, xe, ye, block=64)
            curves[name][0].append(acc)
            curves[name][1].append(loss)
    return {name: (np.stack(a, axis=1), np.stack(lo, axis=1)) for name, (a, lo) in curves.items()}


# ---------------------------------------------------------------------------------------------
# the alpha-trimming paper's small CNN (Section V; docs/zoo.md, reading R5), K models as convolution
# groups
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchedCNNSpec:
    """Conv(c1,3x3,same)-ReLU-AvgPool2 -> Conv(c2,3x3,same)-ReLU-AvgPool2 -> Dense(hidden)-ReLU
    -> Dense(C) (alpha-trimming paper, Section V: conv (32, 16), dense (64,), batch 32; docs/zoo.md,
    reading R5)."""

    conv: tuple[int, ...] = (32, 16)
    hidden: tuple[int, ...] = (64,)
    epochs: int = 50
    batch_size: int = 32
    lr: float = 0.001
    momentum: float = 0.9

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or self.lr <= 0 or not 0 <= self.momentum < 1:
            raise ValueError(f"BatchedCNNSpec: invalid recipe {self}")
        if not self.conv or any(int(c) < 1 for c in (*self.conv, *self.hidden)):
            raise ValueError(f"BatchedCNNSpec: widths must be >= 1, got {self}")


def init_cnn_params(
    in_shape: tuple[int, int, int], recipe: BatchedCNNSpec, num_classes: int, init_seed: int
) -> list[np.ndarray]:
    """He-normal weights / zero biases of one CNN from its init seed, in layer order:
    conv weights (out, in, 3, 3) and biases, then dense weights (in, out) and biases (1, out)."""
    h, w, c = in_shape
    gen = np.random.default_rng(int(init_seed))
    params: list[np.ndarray] = []
    cin = c
    for cout in recipe.conv:
        params += [(gen.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9))
                    ).astype(np.float32), np.zeros(cout, dtype=np.float32)]
        cin, h, w = cout, h // 2, w // 2
    dims = [cin * h * w, *recipe.hidden, num_classes]
    for a, b in zip(dims[:-1], dims[1:], strict=True):
        params += [(gen.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32),
                   np.zeros((1, b), dtype=np.float32)]
    return params


def _cnn_forward(params: list[torch.Tensor], x: torch.Tensor, n_conv: int) -> torch.Tensor:
    """x: (K, B, C, H, W) per-model batches -> logits (K, B, classes); models = conv groups."""
    k, b = x.shape[:2]
    # Standard strides at the conv input (a reshape may return a view; see standard_nchw).
    h = standard_nchw(x.transpose(0, 1).reshape(b, k * x.shape[2], *x.shape[3:]))
    for i in range(n_conv):
        w, bias = params[2 * i], params[2 * i + 1]  # (K, out, in, 3, 3), (K, out)
        h = torch.nn.functional.conv2d(h, w.reshape(-1, *w.shape[2:]), bias.reshape(-1),
                                       padding=1, groups=k)
        h = torch.nn.functional.avg_pool2d(torch.relu(h), 2)
    h = h.reshape(b, k, -1).transpose(0, 1)  # (K, B, features), per-model channel-major
    n_dense = (len(params) - 2 * n_conv) // 2
    for j in range(n_dense):
        w, bias = params[2 * (n_conv + j)], params[2 * (n_conv + j) + 1]
        h = torch.baddbmm(bias, h, w)
        if j < n_dense - 1:
            h = torch.relu(h)
    return h


#: cuBLAS workspace setting required for deterministic cuBLAS results (CUDA >= 10.2; PyTorch
#: "Reproducibility" notes); ":16:8" is the other documented value (less memory, maybe slower).
CUBLAS_WORKSPACE = ":4096:8"


@contextlib.contextmanager
def deterministic_cuda() -> Iterator[None]:
    """Bit-reproducible CUDA training (the alpha-trimming study measures seed variability, so
    one seed must give one result): ``CUBLAS_WORKSPACE_CONFIG`` (kept if already set),
    ``torch.use_deterministic_algorithms(True)`` (an op without a deterministic kernel raises
    instead of silently varying), cuDNN deterministic and no autotuning. The previous torch
    flags are restored on exit, so nothing leaks into later code of the process.

    The environment variable stays set: cuBLAS splits work across its workspaces, and PyTorch
    sizes them from ``CUBLAS_WORKSPACE_CONFIG`` once, at the first cuBLAS call of the process
    (a function-static in ``getChosenWorkspaceSize``, aten/src/ATen/cuda/CublasHandlePool.cpp), so
    it only takes effect if set before that call. :func:`train_batched_cnn` enters this context
    before its first CUDA operation; in a process that already used CUDA without the variable a
    warning says the workspace setting may come too late (set it in the environment instead).
    """
    if "CUBLAS_WORKSPACE_CONFIG" not in os.environ and torch.cuda.is_initialized():
        warnings.warn("deterministic_cuda: CUDA was used before CUBLAS_WORKSPACE_CONFIG was set; "
                      "cuBLAS may already have sized its workspace (set CUBLAS_WORKSPACE_CONFIG="
                      f"{CUBLAS_WORKSPACE} in the environment before starting Python)",
                      RuntimeWarning, stacklevel=3)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    prev = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.backends.cudnn.deterministic,
        torch.backends.cudnn.benchmark,
    )
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(prev[0], warn_only=prev[1])
        torch.backends.cudnn.deterministic, torch.backends.cudnn.benchmark = prev[2], prev[3]


def train_batched_cnn(
    x_train: np.ndarray,
    y_train: np.ndarray,
    init_seeds: Sequence[int],
    batch_seeds: Sequence[int],
    recipe: BatchedCNNSpec,
    eval_sets: Mapping[str, tuple[np.ndarray, np.ndarray | None]],
    num_classes: int | None = None,
    curves: bool = False,
    threads: int = 1,
    model_block: int = 16,
    eval_block: int = 512,
    device: str = "cpu",
    progress: Callable[[int, int], None] | None = None,
    keep_weights: bool = False,
) -> BatchedZoo:
    """Train K CNNs of one recipe together (grouped convolutions, autograd, SGD with momentum).

    x_train: (n, H, W, C) float images; per-model semantics as for the MLPs (module docstring):
    the loss is the sum over models of each model's mean cross-entropy, so every model's
    gradient is its own, and torch.optim.SGD acts elementwise. ``device`` may be ``cuda``
    (trained under :func:`deterministic_cuda`). ``keep_weights``: also return the final weights.

    Long (about 110 lines) on purpose: as :func:`train_batched_mlp`, one training recipe whose
    order of RNG draws and updates makes results bitwise reproducible.
    """
    if len(init_seeds) != len(batch_seeds) or len(init_seeds) == 0:
        raise ValueError("train_batched_cnn: need as many init seeds as batch seeds, at least one")
    x_np = np.asarray(x_train, dtype=np.float32)
    y_np = np.asarray(y_train, dtype=np.int64)
    if x_np.ndim != 4 or y_np.shape != (x_np.shape[0],):
        raise ValueError(f"train_batched_cnn: x {x_np.shape} must be (n, H, W, C), y (n,)")
    n = len(x_np)
    c = int(num_classes or int(y_np.max()) + 1)
    dev = torch.device(device)
    t0 = time.perf_counter()
    prev = torch.get_num_threads()
    torch.set_num_threads(max(1, int(threads)))
    n_conv = len(recipe.conv)
    det = contextlib.ExitStack()
    if dev.type == "cuda":
        det.enter_context(deterministic_cuda())
    try:
        x = standard_nchw(torch.from_numpy(x_np).permute(0, 3, 1, 2)).to(dev)
        y = torch.from_numpy(y_np).to(dev)
        evals = {name: (standard_nchw(torch.from_numpy(np.asarray(xe, np.float32))
                                      .permute(0, 3, 1, 2)).to(dev),
                        None if ye is None else torch.from_numpy(np.asarray(ye, np.int64)).to(dev))
                 for name, (xe, ye) in eval_sets.items()}

        def evaluate(params: list[torch.Tensor], xe: torch.Tensor) -> torch.Tensor:
            k = params[0].shape[0]
            with torch.no_grad():
                outs = [_cnn_forward(params, xe[s : s + eval_block][None].expand(k, -1, -1, -1, -1),
                                     n_conv) for s in range(0, len(xe), eval_block)]
            return torch.cat(outs, dim=1)

        logits = {name: [] for name in evals}
        cur: dict[str, tuple[list, list]] = {name: ([], []) for name, (_, ye) in evals.items()
                                             if ye is not None and curves}
        init_hash, order_hash = [], []
        weights: list[list[np.ndarray]] = []
        k_total = len(init_seeds)
        for s in range(0, k_total, model_block):
            per_model = [init_cnn_params(x_np.shape[1:], recipe, c, sd)
                         for sd in init_seeds[s : s + model_block]]
            init_hash += [_short_hash(*p) for p in per_model]
            params = [torch.from_numpy(np.stack([p[j] for p in per_model])).to(dev)
                      .requires_grad_(True) for j in range(len(per_model[0]))]
            orders = np.stack([epoch_orders(sd, n, recipe.epochs)
                               for sd in batch_seeds[s : s + model_block]])
            order_hash += [_short_hash(o[0]) for o in orders]
            opt = torch.optim.SGD(params, lr=recipe.lr, momentum=recipe.momentum)
            orders_t = torch.from_numpy(orders).to(dev)
            block_acc = {name: [] for name in cur}
            block_loss = {name: [] for name in cur}
            for e in range(recipe.epochs):
                for st in range(0, n, recipe.batch_size):
                    idx = orders_t[:, e, st : st + recipe.batch_size]
                    out = _cnn_forward(params, x[idx], n_conv)
                    loss = torch.nn.functional.cross_entropy(
                        out.reshape(-1, c), y[idx].reshape(-1), reduction="none"
                    ).reshape(idx.shape).mean(dim=1).sum()
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                for name in cur:
                    xe, ye = evals[name]
                    lg = evaluate(params, xe)
                    block_acc[name].append(((lg.argmax(-1) == ye).double().mean(-1) * 100).cpu())
                    logp = torch.log_softmax(lg.double(), -1)
                    block_loss[name].append(
                        -logp.gather(-1, ye.expand(lg.shape[0], -1)[..., None]).mean((1, 2)).cpu())
            for name, (xe, _) in evals.items():
                logits[name].append(evaluate(params, xe).cpu().numpy())
            if keep_weights:
                weights.append([p.detach().cpu().numpy() for p in params])
            for name in cur:
                cur[name][0].append(torch.stack(block_acc[name], 1).numpy())
                cur[name][1].append(torch.stack(block_loss[name], 1).numpy())
            if progress is not None:
                progress(min(s + model_block, k_total), k_total)
    finally:
        torch.set_num_threads(prev)
        det.close()
    return BatchedZoo(
        logits={name: np.concatenate(v).astype(np.float32) for name, v in logits.items()},
        curves={name: {"accuracy": np.concatenate(a), "loss": np.concatenate(lo)}
                for name, (a, lo) in cur.items()},
        init_hash=init_hash,
        order_hash=order_hash,
        seconds=time.perf_counter() - t0,
        weights=[np.concatenate(w) for w in zip(*weights, strict=True)] if weights else [],
    )
