"""Seeded, deterministic training of local zoo models (docs/zoo.md).

Two independent sources of randomness, each exactly reproducible (the alpha-trimming paper's
S_init and S_batch, Section V; docs/zoo.md, reading R5):

- ``seed`` (init seed): torch's RNG when the network is built, on the CPU, before it moves to
  the device, so the same seed gives bitwise identical initial weights anywhere.
- ``batch_seed`` (data seed, defaults to ``seed``): a numpy Generator that draws the training
  subset (``data_fraction``) and the order of every epoch, and torch's RNG while training
  (forked, seeded from the data seed), which draws the dropout masks of the networks that have
  dropout (the LaF authors' MNIST networks, zoo.arch). Nothing else is random (no augmentation).

The validation split is held out from the training split with a zoo-level seed, so every model of
a zoo is validated on the same images. ``label_map`` (e.g. ``"0:8,8:0"``) relabels the training
data, producing PACE's label-swap mutants (PACE paper, Section 4: LeNet-5-M1..M3 swap
labels 8/0, 7/1, 9/3); validation accuracy is measured against
the true labels (``val_accuracy``) and against the mapped ones (``val_accuracy_mapped``).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import torch
from torch import nn

from labelfree.seeds import derive_seed
from labelfree.zoo.arch import build_model
from labelfree.zoo.io import state_dict_hash
from labelfree.zoo.preprocess import check_kind, preprocess

OPTIMIZERS = ("sgd", "adam", "adadelta", "adagrad", "adamax", "nadam", "rmsprop")


class TrainError(ValueError):
    """Invalid training parameters; the message names the model and the value."""


@dataclass(frozen=True)
class TrainSpec:
    """One local model: the sheet columns that define its training (docs/zoo.md)."""

    arch: str = "mlp"
    width: int = 32
    depth: int = 1
    optimizer: str = "adam"
    lr: float = 1e-3
    epochs: int = 10
    batch_size: int = 64
    data_fraction: float = 1.0
    seed: int = 0
    batch_seed: int | None = None
    label_map: str = ""
    preprocessing: str = "scale01"

    @property
    def data_seed(self) -> int:
        return self.seed if self.batch_seed is None else int(self.batch_seed)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> TrainSpec:
        """Build from a normalised sheet row (extra columns are ignored)."""
        bs = row.get("batch_seed")
        if bs is not None and (isinstance(bs, float) and np.isnan(bs)):
            bs = None
        return cls(
            arch=str(row["arch"]),
            width=int(row["width"]),
            depth=int(row["depth"]),
            optimizer=str(row["optimizer"]),
            lr=float(row["lr"]),
            epochs=int(row["epochs"]),
            batch_size=int(row["batch_size"]),
            data_fraction=float(row["data_fraction"]),
            seed=int(row["seed"]),
            batch_seed=None if bs is None else int(bs),
            label_map=str(row.get("label_map") or ""),
            preprocessing=str(row.get("preprocessing") or "scale01"),
        )


@dataclass
class TrainResult:
    """A trained model (eval mode, on CPU) and its metadata for meta.json."""

    model: nn.Module
    meta: dict[str, Any]


def parse_label_map(text: str, num_classes: int | None = None) -> dict[int, int]:
    """Parse ``"0:8,8:0,1:7,7:1"`` into ``{0: 8, 8: 0, 1: 7, 7: 1}``; empty text -> ``{}``."""
    out: dict[int, int] = {}
    if not text:
        return out
    for pair in str(text).split(","):
        try:
            a, b = (int(v) for v in pair.split(":"))
        except ValueError:
            raise TrainError(f"label_map {text!r}: entry {pair!r} is not 'from:to'") from None
        if a in out:
            raise TrainError(f"label_map {text!r}: class {a} mapped twice")
        if num_classes is not None and not (0 <= a < num_classes and 0 <= b < num_classes):
            raise TrainError(f"label_map {text!r}: class ids must be in [0, {num_classes})")
        out[a] = b
    return out


def apply_label_map(y: np.ndarray, mapping: dict[int, int]) -> np.ndarray:
    """Relabel class ids (N,) with ``mapping``; unmapped classes keep their label."""
    if not mapping:
        return y
    lut = np.arange(max(int(y.max()) + 1, max(max(mapping), max(mapping.values())) + 1))
    for a, b in mapping.items():
        lut[a] = b
    return lut[y]


def validation_split(
    y: np.ndarray, val_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Stratified, seeded split of indices into (train, val); ``val_fraction=0`` -> no val."""
    n = len(y)
    if val_fraction <= 0:
        return np.arange(n), np.arange(0)
    strata = y if y.ndim == 1 else np.zeros(n, dtype=np.int64)
    gen = np.random.default_rng(seed)
    order = gen.permutation(n)
    # rank of each item within its class, in random order -> first round(f * n_c) go to val
    s = strata[order]
    sort = np.argsort(s, kind="stable")
    counts = np.bincount(s)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(n, dtype=np.int64)
    rank[sort] = np.arange(n) - np.repeat(starts, counts)
    n_val = np.round(counts * val_fraction).astype(np.int64)
    is_val = rank < n_val[s]
    return np.sort(order[~is_val]), np.sort(order[is_val])


def _optimizer(name: str, params: Any, lr: float) -> torch.optim.Optimizer:
    name = name.lower()
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    table = {
        "adam": torch.optim.Adam,
        "adadelta": torch.optim.Adadelta,
        "adagrad": torch.optim.Adagrad,
        "adamax": torch.optim.Adamax,
        "nadam": torch.optim.NAdam,
        "rmsprop": torch.optim.RMSprop,
    }
    if name not in table:
        raise TrainError(f"unknown optimizer {name!r}; known: {OPTIMIZERS}")
    return table[name](params, lr=lr)


@contextlib.contextmanager
def deterministic(device: torch.device) -> Iterator[None]:
    """Deterministic kernels while training (cuDNN/cuBLAS on CUDA); restores settings after."""
    prev = torch.are_deterministic_algorithms_enabled()
    prev_bench = torch.backends.cudnn.benchmark
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.benchmark = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(prev)
        torch.backends.cudnn.benchmark = prev_bench


def init_model(recipe: TrainSpec, in_shape: tuple[int, int, int], num_classes: int) -> nn.Module:
    """Build the network with initial weights drawn from ``recipe.seed`` only (global RNG untouched)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(recipe.seed)
        return build_model(recipe.arch, in_shape, num_classes, recipe.width, recipe.depth)


def _accuracy(logits: torch.Tensor, y: torch.Tensor) -> float:
    if y.ndim == 2:
        return float(((logits > 0) == (y > 0)).all(dim=1).float().mean())
    return float((logits.argmax(1) == y).float().mean())


def _check_recipe(recipe: TrainSpec) -> None:
    """Refuse an unknown optimizer, preprocessing kind or out-of-range sizes, naming the value."""
    if recipe.optimizer not in OPTIMIZERS:
        raise TrainError(f"unknown optimizer {recipe.optimizer!r}; known: {OPTIMIZERS}")
    if recipe.epochs < 0 or recipe.batch_size < 1 or not 0 < recipe.data_fraction <= 1:
        raise TrainError(
            f"epochs={recipe.epochs} must be >= 0, batch_size={recipe.batch_size} >= 1, "
            f"data_fraction={recipe.data_fraction} in (0, 1]"
        )
    check_kind(recipe.preprocessing)


def _train_epoch(
    model: nn.Module, opt: torch.optim.Optimizer, loss_fn: nn.Module, xt: torch.Tensor,
    yt: torch.Tensor, perm_t: torch.Tensor, recipe: TrainSpec, channels: int,
    loss_sum: torch.Tensor,
) -> None:
    """One epoch of mini-batch steps in the order ``perm_t``; adds each batch's summed loss to
    ``loss_sum`` in place."""
    for start in range(0, len(perm_t), recipe.batch_size):
        idx = perm_t[start : start + recipe.batch_size]
        if len(idx) < 2 and any(isinstance(m, nn.BatchNorm2d) for m in model.modules()):
            continue  # BatchNorm cannot train on a single sample
        xb = preprocess(xt[idx], recipe.preprocessing, channels=channels)
        loss = loss_fn(model(xb), yt[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_sum += loss.detach() * len(idx)


def _final_validation(
    model: nn.Module, x_val: np.ndarray | None, y_val: np.ndarray | None,
    mapping: dict[int, int], recipe: TrainSpec, dev: torch.device,
) -> tuple[float | None, float | None]:
    """(accuracy on the true labels, on the mapped labels when a label map applies); None
    without a validation set."""
    if x_val is None or y_val is None or not len(x_val):
        return None, None
    val_acc = evaluate(model, x_val, y_val, recipe.preprocessing, dev)
    if not mapping:
        return val_acc, None
    return val_acc, evaluate(model, x_val, apply_label_map(y_val, mapping), recipe.preprocessing,
                             dev)


def train_model(
    recipe: TrainSpec,
    x: np.ndarray,
    y: np.ndarray,
    x_val: np.ndarray | None = None,
    y_val: np.ndarray | None = None,
    num_classes: int | None = None,
    device: str | torch.device = "cpu",
    on_epoch_end: Callable[[int, nn.Module, dict[str, float]], None] | None = None,
    progress: Any = None,
) -> TrainResult:
    """Train one local model on uint8 NHWC images ``x`` with labels ``y`` (N,) or multi-hot (N, K).

    ``on_epoch_end(epoch, model, stats)`` is called after every epoch (per-epoch checkpoints of
    the metamorphic paper's RQ6); ``progress`` is an optional tqdm bar updated once per epoch.
    Returns the model in eval mode on the CPU and its metadata. Deterministic for given seeds.
    """
    return _train(recipe, (recipe.epochs,), x, y, x_val, y_val, num_classes, device,
                  on_epoch_end, progress)[recipe.epochs]


def epoch_family(recipe: TrainSpec) -> TrainSpec:
    """What a recipe's training run is apart from its length: recipes with the same family are
    the per-epoch checkpoints of one run (:func:`train_family`)."""
    return replace(recipe, epochs=0)


def train_family(
    epochs: Sequence[int],
    recipe: TrainSpec,
    x: np.ndarray,
    y: np.ndarray,
    x_val: np.ndarray | None = None,
    y_val: np.ndarray | None = None,
    num_classes: int | None = None,
    device: str | torch.device = "cpu",
    progress: Any = None,
) -> dict[int, TrainResult]:
    """Every ``replace(recipe, epochs=e)`` for e in ``epochs`` from one run of ``max(epochs)``
    epochs: {e: what :func:`train_model` returns for that recipe}, bit for bit.

    The first e epochs of a run do not depend on its length (one generator draws the subset,
    then each epoch's order; the optimisers keep no schedule over the run), so the model after
    epoch e of the longest run is the e-epoch model, and its metadata is that model's
    (``train_time_s`` aside: the time to that epoch). ``progress`` advances once per epoch run.
    """
    stops = tuple(sorted(set(int(e) for e in epochs)))
    if not stops:
        return {}
    return _train(replace(recipe, epochs=stops[-1]), stops, x, y, x_val, y_val, num_classes,
                  device, None, progress)


def _train(
    recipe: TrainSpec,
    stops: Sequence[int],
    x: np.ndarray,
    y: np.ndarray,
    x_val: np.ndarray | None,
    y_val: np.ndarray | None,
    num_classes: int | None,
    device: str | torch.device,
    on_epoch_end: Callable[[int, nn.Module, dict[str, float]], None] | None,
    progress: Any,
) -> dict[int, TrainResult]:
    """Train ``recipe`` (``recipe.epochs`` = the last of ``stops``) and return the model and
    metadata after each epoch count in ``stops`` (0: the initial model). The model after an
    earlier stop is a copy taken at the end of that epoch; its validation runs after the loop,
    as the last one's does. About 90 lines: one generator draws the training subset, then each
    epoch's order, so its draws stay visible in one function.
    """
    _check_recipe(recipe)
    multi = y.ndim == 2
    if num_classes is None:
        num_classes = int(y.shape[1]) if multi else int(y.max()) + 1
    mapping = parse_label_map(recipe.label_map, num_classes)
    if mapping and multi:
        raise TrainError("label_map applies to single-label data only")
    y_train = apply_label_map(y, mapping)
    dev = torch.device(device)
    in_shape = tuple(int(s) for s in x.shape[1:])

    model = init_model(recipe, in_shape, num_classes)

    init_hash = state_dict_hash(model.state_dict())
    model.to(dev)

    gen = np.random.default_rng(derive_seed(recipe.data_seed, "batch"))
    n_use = max(1, int(round(recipe.data_fraction * len(x))))
    subset = np.sort(gen.permutation(len(x))[:n_use])
    xt = torch.from_numpy(np.ascontiguousarray(x[subset])).to(dev)
    yt = torch.from_numpy(np.ascontiguousarray(y_train[subset])).to(dev)
    yt = yt.float() if multi else yt.long()
    loss_fn: nn.Module = nn.BCEWithLogitsLoss() if multi else nn.CrossEntropyLoss()
    opt = _optimizer(recipe.optimizer, model.parameters(), recipe.lr)

    order_hash = ""
    loss_sum = torch.zeros((), device=dev)
    stats: dict[str, float] = {"loss": float("nan")}
    # epochs -> (model, final loss, seconds, first epoch's order hash) at that stop
    taken: dict[int, tuple[nn.Module, float, float, str]] = {}
    t0 = time.perf_counter()
    with deterministic(dev), torch.random.fork_rng(devices=_rng_devices(dev)):
        torch.manual_seed(derive_seed(recipe.data_seed, "dropout"))
        for epoch in range(recipe.epochs):
            if epoch in stops:
                taken[epoch] = (_copy(model), stats["loss"], time.perf_counter() - t0, order_hash)
            perm = gen.permutation(n_use)
            if epoch == 0:
                order_hash = hashlib.sha256(subset[perm].astype(np.int64).tobytes()).hexdigest()[:16]
            model.train()
            loss_sum.zero_()
            _train_epoch(model, opt, loss_fn, xt, yt, torch.from_numpy(perm).to(dev), recipe,
                         in_shape[2], loss_sum)
            stats = {"loss": float(loss_sum) / n_use}
            if x_val is not None and y_val is not None and len(x_val) and on_epoch_end is not None:
                stats["val_accuracy"] = evaluate(model, x_val, y_val, recipe.preprocessing, dev)
            if on_epoch_end is not None:
                on_epoch_end(epoch, model, stats)
            if progress is not None:
                progress.set_postfix(loss=f"{stats['loss']:.3f}", refresh=False)
                progress.update(1)
    taken[recipe.epochs] = (model, stats["loss"], time.perf_counter() - t0, order_hash)
    out = {}
    for epochs in stops:
        net, loss, train_time, order = taken[epochs]
        net.eval()
        val_acc, val_acc_mapped = _final_validation(net, x_val, y_val, mapping, recipe, dev)
        net.cpu()
        meta: dict[str, Any] = {
            **asdict(replace(recipe, epochs=epochs)),
            "batch_seed": recipe.data_seed,
            "label_map_dict": {str(k): v for k, v in mapping.items()},
            "source": "local",
            "family": "local",
            "task": "multi" if multi else "single",
            "num_classes": num_classes,
            "input_shape": list(in_shape),
            "n_train_used": n_use,
            "val_accuracy": val_acc,
            "val_accuracy_mapped": val_acc_mapped,
            "final_train_loss": loss,
            "train_time_s": round(train_time, 3),
            "train_device": dev.type,
            "init_sha256": init_hash,
            "batch_order_sha256": order,
            "torch_version": torch.__version__,
        }
        out[epochs] = TrainResult(model=net, meta=meta)
    return out


def _rng_devices(dev: torch.device) -> list[int]:
    """The CUDA devices whose RNG the training run forks (none on the CPU)."""
    if dev.type != "cuda":
        return []
    return [dev.index if dev.index is not None else torch.cuda.current_device()]


def _copy(model: nn.Module) -> nn.Module:
    """A copy of ``model`` as it is now (parameters and buffers; no gradients), on its device."""
    net = copy.deepcopy(model)
    for p in net.parameters():
        p.grad = None
    return net


@torch.inference_mode()
def evaluate(
    model: nn.Module,
    x: np.ndarray,
    y: np.ndarray,
    preprocessing: str,
    device: str | torch.device = "cpu",
    batch_size: int = 1024,
) -> float:
    """Accuracy of ``model`` on (x, y); single-label argmax or multi-label exact match at logit 0."""
    was_training = model.training
    model.eval()
    dev = torch.device(device)
    outs = []
    ch = int(x.shape[3])
    first = next(model.parameters(), None)
    if first is not None and first.ndim == 4:
        ch = int(first.shape[1])
    for s in range(0, len(x), batch_size):
        outs.append(model(preprocess(x[s : s + batch_size], preprocessing, channels=ch, device=dev)))
    model.train(was_training)
    return _accuracy(torch.cat(outs).float(), torch.from_numpy(y).to(dev))
