"""Batched, device-aware inference with feature hooks: the one forward-pass path.

Every study that needs model outputs either reads the artefacts written by :func:`infer_group`
(``results/infer/{zoo}/{model}/{group}.npz``, one file per model and test-set group, read one
test set at a time through labelfree.store) or calls :func:`predict` on inputs it creates (PACE's generated inputs, metamorphic follow-ups), so GPU work lives in one place.

- Device: ``auto`` picks CUDA when present (with autocast mixed precision when ``amp``), else CPU.
- Deterministic: eval mode, no cuDNN autotuning; on CPU the logits are bitwise identical to a
  bare ``model.eval()`` loop with the same batch size.
- Features: ``first`` (output of the first parameterised layer) and ``penultimate`` (input of the
  classifier head), captured with forward hooks (labelfree.zoo.arch.feature_points).
- Speed: each batch is converted from uint8 on the device (only bytes cross the bus) by one
  cast-and-transpose copy into a reused buffer, scaled in place; outputs are written into
  preallocated arrays (docs/zoo.md, "Measurements", compares the whole path with a bare loop on
  ready tensors).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from labelfree.device import resolve_device
from labelfree.joblog import progress
from labelfree.store import ImageSet, read_image_set, write_inference
from labelfree.zoo.arch import FEATURES, MLP, CNNTiny, LeNet, ResNet, feature_points
from labelfree.zoo.evalspec import is_eval_spec
from labelfree.zoo.io import load_model
from labelfree.zoo.preprocess import FUSED_KINDS, preprocess, standard_nchw

log = logging.getLogger(__name__)

#: ``dev == _CPU`` is a C-level comparison; ``dev.type`` builds its string through a C++
#: ostringstream each time (about 1 us, several times per :func:`predict` call).
_CPU = torch.device("cpu")

#: The context :func:`predict` enters instead of autocast (a nullcontext is reusable).
_NO_AUTOCAST = contextlib.nullcontext()

#: Feature dtypes :func:`predict` can return, with their numpy equivalents.
_NUMPY = {torch.float32: np.float32, torch.float16: np.float16}


class InferenceError(ValueError):
    """Bad inference arguments (unknown feature, device), naming the value at fault."""


def retain_freed_memory(mmap_threshold: int = 32 << 20, trim_threshold: int = 256 << 20) -> bool:
    """Have glibc keep freed memory for reuse instead of handing it back to the kernel.

    With glibc's defaults, blocks above a (moving) size threshold are mapped and unmapped
    anew, and the heap is trimmed whenever enough of its top is free; a forward pass that
    allocates a new output among its activations then faults the same memory back in at
    every batch (a bare loop in the same process is slower too). Blocks up to ``mmap_threshold`` come from the heap and at most
    ``trim_threshold`` bytes of free heap top stay mapped. Process-wide; the inference job
    calls it (workflow/scripts/inference_run.py). Returns False where there is no glibc
    ``mallopt`` (macOS, Windows), True when both settings were taken.
    """
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    return bool(mallopt(m_mmap_threshold, mmap_threshold)) and bool(
        mallopt(m_trim_threshold, trim_threshold)
    )


def _input_channels(first: torch.Tensor | None, x: np.ndarray) -> int:
    """Channels the model expects: its first parameter's input channels if that is a 4-d
    (convolution) weight, else the images'."""
    if first is not None and first.ndim == 4:
        return int(first.shape[1])
    return int(x.shape[3])


@dataclass(frozen=True)
class ModelInput:
    """Images converted once into a model's input: ``tensor`` is float NCHW with standard
    strides, on its device, equal to ``preprocess(x, preprocessing, channels=channels)``.

    :func:`predict` slices its batches from it as a bare ``model(t[s:s + b])`` loop does, so a
    test set that several models read is converted once (:func:`infer_group`).
    """

    tensor: torch.Tensor
    preprocessing: str
    channels: int

    def __len__(self) -> int:
        return len(self.tensor)


def prepare(
    x: np.ndarray, preprocessing: str, channels: int, device: str | torch.device = "auto"
) -> ModelInput:
    """Convert uint8 NHWC images ``x`` into the input of a model that takes ``channels``
    channels, on ``device`` (the values :func:`predict` converts batch by batch: the
    conversion is elementwise)."""
    if x.ndim != 4:
        raise InferenceError(f"images must be (N, H, W, C) uint8, got shape {x.shape}")
    with torch.no_grad():
        t = preprocess(x, preprocessing, channels=channels, device=resolve_device(device))
    return ModelInput(standard_nchw(t), preprocessing, int(channels))


def model_channels(model: nn.Module, x: np.ndarray) -> int:
    """Input channels of ``model`` for images ``x`` (its first weight's, if a convolution's)."""
    return _input_channels(next(model.parameters(), None), x)


def _eval(model: nn.Module) -> torch.Tensor | None:
    """Put ``model`` in eval mode (skipped when no module is in training mode: ``eval()``
    costs tens of us) and return its first parameter, as ``next(model.parameters())`` would.

    The training flags are read in one breadth-first pass over a list that grows as it is
    read, and the first parameter is found by a pre-order descent that stops at it: about a
    third of the cost of one pre-order walk doing both, and far below the generators of
    ``modules()`` and ``parameters()``, which cost as much as a tiny model's forward pass on a
    few batches (docs/zoo.md, "Measurements").
    """
    mods, training = [model], False
    for m in mods:  # every module, breadth first (order does not matter for the flags)
        if m is None:  # a submodule slot registered as None
            continue
        if m.training:
            training = True
        mods.extend(m._modules.values())
    if training:
        model.eval()
    return _first_parameter(model)


def _first_parameter(m: nn.Module) -> torch.Tensor | None:
    """``next(m.parameters(), None)``: the first parameter in pre-order (``modules()``'s)."""
    for p in m._parameters.values():
        if p is not None:
            return p
    for c in m._modules.values():
        if c is not None and (p := _first_parameter(c)) is not None:
            return p
    return None


#: Local architectures apply no in-place operation to a feature point's tensor after its layer
#: ran, so their features are copied inside the
#: hook and the activation is freed when a bare loop would free it. Holding it to the end of the
#: forward pass shifts glibc's allocations enough that it returns and re-faults memory every
#: batch (docs/zoo.md, "Measurements").
_COPY_IN_HOOK = (MLP, LeNet, ResNet, CNNTiny)


class _Features:
    """Forward (pre-)hooks that write each named feature of a batch into rows of its output.

    Models of :data:`_COPY_IN_HOOK` are copied inside the hook; any other model's feature is
    kept by reference and copied after the forward pass (:meth:`flush`), so it holds the
    layer's values at the end of the pass, after in-place operations such as torchvision's
    ``ReLU(inplace=True)``.
    """

    def __init__(
        self, model: nn.Module, features: Sequence[str], n: int, dtype: torch.dtype
    ) -> None:
        self.features, self.n, self.dtype = tuple(features), n, dtype
        self.outs: dict[str, torch.Tensor] = {}
        self.rows = slice(0, 0)
        self.early = type(model) in _COPY_IN_HOOK
        self.kept: dict[str, torch.Tensor] = {}
        self.got: set[str] = set()
        self.handles = []
        points = feature_points(model) if features else {}
        for name in features:
            module, where = points[name]
            grab = functools.partial(self.grab, name, type(module).__name__)
            if where == "output":
                self.handles.append(module.register_forward_hook(lambda m, i, o, g=grab: g(o)))
            else:
                self.handles.append(module.register_forward_pre_hook(lambda m, i, g=grab: g(i[0])))

    def grab(self, name: str, owner: str, t: torch.Tensor) -> None:
        if name in self.got:
            raise InferenceError(
                f"feature {name!r}: {owner} ran more than once in one forward pass, so the "
                "feature is not one row per input"
            )
        self.got.add(name)
        if self.early:
            _store(self.outs, name, t, self.n, self.rows, flat=True, dtype=self.dtype)
        else:
            self.kept[name] = t

    def start(self, rows: slice) -> None:
        """Before the forward pass of the batch that fills ``rows``."""
        self.rows = rows
        self.got.clear()

    def flush(self) -> None:
        """After the forward pass: copy kept features; every feature must have been seen."""
        missing = [f for f in self.features if f not in self.got]
        if missing:
            raise InferenceError(f"feature(s) {missing}: the layer did not run in the forward pass")
        for name, t in self.kept.items():
            _store(self.outs, name, t, self.n, self.rows, flat=True, dtype=self.dtype)
        self.kept.clear()

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


def _store(
    outs: dict[str, torch.Tensor], name: str, t: torch.Tensor, n: int, rows: slice,
    flat: bool, dtype: torch.dtype = torch.float32,
) -> None:
    """Copy batch result ``t`` into rows ``rows`` of the output ``outs[name]`` (N, ...).

    The output (``dtype``) is allocated at the first batch, on ``t``'s device; ``flat`` stores
    (N, D). The copy casts (float16 by IEEE round-to-nearest-even, as numpy's ``astype``).
    On the CPU numpy allocates it: numpy asks the kernel for transparent huge pages for large
    arrays, so the first writes into a fresh output of tens of MB fault 2 MB pages, not 4 kB
    ones (far fewer page faults than with ``torch.empty``).
    """
    t = t.flatten(1) if flat else t  # predict runs under inference_mode: nothing to detach
    if name not in outs:
        shape = (n, *t.shape[1:])
        if t.device.type == "cpu":
            outs[name] = torch.from_numpy(np.empty(shape, _NUMPY[dtype]))
        else:
            outs[name] = torch.empty(shape, dtype=dtype, device=t.device)
    outs[name][rows].copy_(t)


#: Batch logits that :func:`predict` holds before it copies them into its output.
_FLUSH_BYTES = 16 << 20


class _Rows:
    """The (N, ...) float32 logits of :func:`predict`, written a run of batches at a time.

    :func:`predict` keeps each batch's result and hands them here by one ``torch.cat`` per
    :data:`_FLUSH_BYTES` of results (and at the end), instead of one copy call per batch: for
    tiny models the per-batch call costs as much as the forward pass (docs/zoo.md, "Measurements").
    On the CPU numpy allocates the output (see :func:`_store`).
    """

    def __init__(self, n: int, device: torch.device, cpu: bool) -> None:
        self.n, self.device, self.cpu, self.filled = n, device, cpu, 0
        self.out: np.ndarray | torch.Tensor | None = None

    def write(self, batches: list[torch.Tensor], k: int) -> None:
        """Copy ``batches`` (the next ``k`` rows, in order) into the output and clear the list.

        ``k`` comes from the caller's batch bounds: summing ``len`` of the batches costs a
        Python-level ``Tensor.__len__`` per batch."""
        if self.out is None:
            shape = (self.n, *batches[0].shape[1:])
            self.out = (np.empty(shape, np.float32) if self.cpu
                        else torch.empty(shape, dtype=torch.float32, device=self.device))
        out = torch.from_numpy(self.out) if isinstance(self.out, np.ndarray) else self.out
        if self.filled or k != self.n:
            out = out[self.filled : self.filled + k]
        torch.cat(batches, out=out)  # casts to float32 (autocast's float16 on a GPU)
        self.filled += k
        batches.clear()

    def result(self) -> np.ndarray:
        assert self.filled == self.n, (self.filled, self.n)
        return self.out if isinstance(self.out, np.ndarray) else self.out.cpu().numpy()


def predict(
    model: nn.Module,
    x: np.ndarray | ModelInput,
    preprocessing: str = "scale01",
    batch_size: int = 512,
    device: str | torch.device = "auto",
    features: Sequence[str] = (),
    amp: bool = True,
    progress: Any = None,
    feature_dtype: torch.dtype = torch.float32,
) -> dict[str, np.ndarray]:
    """Run ``model`` on uint8 NHWC images ``x``; return ``{"logits": (N, K) float32, name: (N, D)}``.

    ``x`` may instead be a :class:`ModelInput` (images converted once by :func:`prepare`, with
    this ``preprocessing`` and the model's channels, on ``device``): the batches are then sliced
    from it, as in a bare loop. ``features`` names feature points (``first``,
    ``penultimate``); each comes back flattened (N, D) as ``feature_dtype`` (float16 for the
    artefacts: the same values as casting the float32 features with numpy), with the values
    the layer holds at the end of the forward pass (as a reference kept to it would show). The
    model is put in eval mode and moved to ``device``. ``progress``: an optional tqdm bar
    advanced by the number of images.

    Speed (docs/zoo.md, "Measurements"): uint8 batches are cast and transposed by one copy
    into one input buffer reused for every batch and scaled in place there; each batch's
    logits and features are copied into preallocated outputs (features of local
    architectures inside the hook), so the allocator reuses the model's activations and
    nothing is concatenated at the end. Without features no hook is registered.

    Long (about 100 lines) on purpose: this is the per-batch hot path, and its per-call
    overhead is measured against a bare loop (docs/zoo.md, "Measurements"); its checks, hook
    set-up and batch loop stay in one frame so that no helper call or closure is paid per
    batch.
    """
    if features:
        unknown = [f for f in features if f not in FEATURES]
        if unknown:
            raise InferenceError(f"unknown feature(s) {unknown}; known: {FEATURES}")
    if batch_size < 1:
        raise InferenceError(f"batch_size={batch_size} must be >= 1")
    if feature_dtype not in _NUMPY:
        raise InferenceError(f"feature_dtype={feature_dtype}; use torch.float32 or torch.float16")
    ready = x if isinstance(x, ModelInput) else None
    if ready is None and x.ndim != 4:
        raise InferenceError(f"images must be (N, H, W, C) uint8, got shape {x.shape}")
    dev = resolve_device(device)
    cpu = dev == _CPU or dev.type == "cpu"
    first = _eval(model)
    if first is not None and first.device != dev:
        model.to(dev)
    # the ready tensor's shape, not len(ready): Tensor.__len__ is a Python-level call
    n = ready.tensor.shape[0] if ready is not None else len(x)
    if not n:
        empty = np.zeros((0, 0), np.float32)
        return {"logits": empty, **{f: empty.astype(_NUMPY[feature_dtype]) for f in features}}
    buf = xt = src = None
    if ready is not None:
        _check_ready(ready, first, preprocessing, dev, cpu)
        src = ready.tensor
    else:
        channels = _input_channels(first, x)
        xt = x if isinstance(x, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(x))
        if not xt.is_floating_point() and preprocessing in FUSED_KINDS:
            h, w = int(xt.shape[1]), int(xt.shape[2])
            buf = torch.empty((min(batch_size, n), channels, h, w), dtype=torch.float32, device=dev)
    use_amp = bool(amp) and not cpu and dev.type == "cuda"
    autocast = (
        torch.autocast(device_type="cuda", dtype=torch.float16) if use_amp else _NO_AUTOCAST
    )
    feats = _Features(model, features, n, feature_dtype) if features else None
    logits, held, every = _Rows(n, dev, cpu), [], 1 if buf is not None else 0
    version = src._version if src is not None else 0
    held_from = 0  # first row of the batches in ``held``
    try:
        with torch.inference_mode(), autocast:
            for b0 in range(0, n, batch_size):
                b1 = b0 + batch_size if b0 + batch_size < n else n
                if src is not None:
                    xb = src[b0:b1]
                else:
                    xb = preprocess(
                        xt[b0:b1], preprocessing, channels=channels, device=dev,
                        out=None if buf is None else buf[: b1 - b0],
                    )
                if feats is not None:
                    feats.start(slice(b0, b1))
                y = model(xb)
                held.append(y)
                if not every:  # batches per write: _FLUSH_BYTES of results (1 per batch if
                    # they may be views of the reused input buffer)
                    every = max(1, _FLUSH_BYTES // max(1, y.numel() * 4))
                if len(held) >= every:
                    logits.write(held, b1 - held_from)
                    held_from = b1
                if feats is not None:
                    feats.flush()
                if progress is not None:
                    progress.update(b1 - b0)
            if held:
                logits.write(held, n - held_from)
    finally:
        if feats is not None:
            feats.remove()
    if src is not None and src._version != version:
        raise InferenceError(
            f"{type(model).__name__} changed its input in place; a converted test set is "
            "shared by the models of a group, so it must stay unchanged"
        )
    out = {"logits": logits.result()}
    if feats is not None:
        out.update((f, feats.outs[f].cpu().numpy()) for f in features)
    return out


def _check_ready(
    ready: ModelInput, first: torch.Tensor | None, preprocessing: str, dev: torch.device,
    cpu: bool,
) -> None:
    """A :class:`ModelInput` must have been made for this model's preprocessing, channels and
    device (``cpu``: ``dev`` is the CPU)."""
    if ready.preprocessing != preprocessing:
        raise InferenceError(
            f"input converted with preprocessing {ready.preprocessing!r}, model wants "
            f"{preprocessing!r}"
        )
    if first is not None and first.ndim == 4 and int(first.shape[1]) != ready.channels:
        raise InferenceError(
            f"input converted for {ready.channels} channels, model wants {int(first.shape[1])}"
        )
    if (not ready.tensor.is_cpu) if cpu else ready.tensor.device.type != dev.type:
        raise InferenceError(f"input converted on {ready.tensor.device}, inference runs on {dev}")


def predict_dir(
    model_dir: str | Path,
    x: np.ndarray,
    batch_size: int = 512,
    device: str | torch.device = "auto",
    features: Sequence[str] = (),
    amp: bool = True,
) -> dict[str, np.ndarray]:
    """Load the model in ``model_dir`` and run :func:`predict` with its own preprocessing."""
    dev = resolve_device(device)
    model, meta = load_model(model_dir, dev)
    return predict(model, x, meta.get("preprocessing", "scale01"), batch_size, dev, features, amp)


def infer_group(
    model_dirs: Sequence[str | Path],
    testsets: Sequence[tuple[str, str | Path]],
    out_paths: Sequence[str | Path],
    features: Sequence[str] = (),
    batch_size: int = 512,
    device: str = "auto",
    amp: bool = True,
    progress_file: Any = None,
    cache_bytes: int = 2 * 2**30,
    feature_dtype: str = "float16",
    feature_sets: Sequence[str] | None = None,
) -> None:
    """Run every model on every test set of one group; ``out_paths[i]`` receives model i's file.

    ``feature_dtype``: storage of the features, ``float16`` or ``float32`` (zoos.<zoo>.
    feature_dtype); float16 files hold exactly the float32 features cast with numpy.
    ``feature_sets``: the sets whose ``features`` are kept (None: every set); the others are
    run without feature hooks and their files hold logits only (the logits are the same either
    way: the hooks copy, they do not change the forward pass).

    ``testsets``: (name, path) of each set of the group, in order. Each output holds the logits
    (and ``features``) of every set (labelfree.store.write_inference). Test sets are read once
    and kept in memory while their total size is below ``cache_bytes``; models are loaded one at
    a time (so large zoos fit on one GPU). With several models, each set is also converted once
    into the models' input (:func:`prepare`, for the elementwise kinds ``scale01``, ``center``
    and the normalisations) and kept on the device while the converted sets total at most
    ``cache_bytes``; the models then run on ready tensors, as a bare loop does.

    Long (about 100 lines) on purpose: the loop over models and sets shares one cache of
    converted inputs and one progress bar; it reads top to bottom as the job runs.
    """
    if len(out_paths) != len(model_dirs):
        raise InferenceError(
            f"{len(model_dirs)} models but {len(out_paths)} output paths (one file per model)"
        )
    if not testsets:
        raise InferenceError("a test-set group needs at least one test set")
    if feature_dtype not in ("float16", "float32"):
        raise InferenceError(f"feature_dtype={feature_dtype!r}; use 'float16' or 'float32'")
    names = [name for name, _ in testsets]
    if feature_sets is not None and (unknown := set(feature_sets) - set(names)):
        raise InferenceError(f"feature_sets {sorted(unknown)} are not sets of the group {names}")
    with_features = {
        name: tuple(features) if feature_sets is None or name in feature_sets else ()
        for name in names
    }
    dev = resolve_device(device)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    sizes = [Path(p).stat().st_size for _, p in testsets]
    keep = sum(sizes) <= cache_bytes
    cache: dict[int, ImageSet] = {}

    def testset(j: int) -> ImageSet:
        if j in cache:
            return cache[j]
        s = read_image_set(testsets[j][1])
        if keep:
            cache[j] = s
        return s

    ready: dict[tuple[int, str, int], ModelInput] = {}
    ready_bytes = 0

    def model_input(j: int, ts: ImageSet, prep: str, channels: int) -> np.ndarray | ModelInput:
        """Set ``j`` converted once for models with ``prep`` and ``channels``, while they fit."""
        nonlocal ready_bytes
        key = (j, prep, channels)
        if key in ready:
            return ready[key]
        size = 4 * len(ts.x) * channels * int(np.prod(ts.x.shape[1:3]))
        once = prep in FUSED_KINDS or is_eval_spec(prep)  # a timm model's pil: pipeline too
        if len(model_dirs) < 2 or not once or ready_bytes + size > cache_bytes:
            return ts.x
        ready[key] = prepare(ts.x, prep, channels, dev)
        ready_bytes += size
        return ready[key]

    n_images = 0
    log.info(
        "inference: %d models x %d test sets on %s (batch %d, amp=%s, features=%s on %s)",
        len(model_dirs), len(testsets), dev, batch_size, amp and dev.type == "cuda", list(features),
        "every set" if feature_sets is None else f"{len(feature_sets)} set(s)",
    )
    total = len(model_dirs) * len(testsets)
    with progress(total=total, desc="inference", unit="set", file=progress_file) as bar:
        for mdir, out in zip(model_dirs, out_paths, strict=True):
            model, meta = load_model(mdir, dev)
            prep = meta.get("preprocessing", "scale01")
            bar.set_description(f"inference {meta.get('model', Path(mdir).name)}", refresh=False)
            sets: dict[str, dict[str, np.ndarray]] = {}
            for j, (name, path) in enumerate(testsets):
                ts = testset(j)
                if len(ts.x) == 0:  # the test set is at fault, not the model
                    raise InferenceError(
                        f"{path}: test set {name!r} is empty (0 inputs); nothing to run "
                        f"{Path(mdir).name} on. Check how the set was made (data splits, shifts)"
                    )
                feats = with_features[name]
                res = predict(
                    model, model_input(j, ts, prep, model_channels(model, ts.x)), prep,
                    batch_size, dev, feats, amp,
                    feature_dtype=torch.float16 if feature_dtype == "float16" else torch.float32,
                )
                k = int(meta.get("num_classes") or res["logits"].shape[1])
                if res["logits"].shape[1] != k:
                    raise InferenceError(
                        f"{mdir}: model gives {res['logits'].shape[1]} logits, meta.json says {k}"
                    )
                sets[name] = {"logits": res["logits"], **{f: res[f] for f in feats}}
                n_images += len(ts.x)
                bar.update(1)
            write_inference(out, sets, feature_dtype)
            del model
            if dev.type == "cuda":
                torch.cuda.empty_cache()
    log.info("inference done: %d model x test set pairs, %d images in all", total, n_images)
