"""Benchmark: our inference path against a bare ``model(x)`` loop on ready tensors.

Issue 19 item 3 and issue 13 (benchmark claims). For each local architecture at widths the
configs use (config/config.yaml, config/paper/*.yaml), on realistic inputs (8x8x1 digits,
28x28x1 MNIST, 32x32x3 CIFAR), for timm models (timm's tiny test architectures at 160x160, and
on a GPU resnet50; random weights; when timm is installed) with their own preprocessing (a
``pil:`` pipeline per image, where the other cases scale elementwise), and on a GPU also
torchvision's resnet50 (random weights) at 224x224x3, one process times, interleaved (the order rotates every repetition) and reported as
medians:

- ``bare``: the physical reference, ``with torch.inference_mode(): model(t[s:s + b])`` over a
  ready float NCHW tensor ``t`` holding the same values, with the same strides, as our
  preprocessing gives (built once, untimed), keeping each batch's output (under float16
  autocast on a GPU, as our ``amp`` setting does);
- ``ready`` (THE TARGET ROW, ">= 0.9 of a bare loop on ready tensors"): ``labelfree.inference.
  predict`` on the same ready tensor (``prepare``, built once, untimed): what each model of an
  inference job's group runs, since the job converts each test set once for all its models
  (``infer_group``); it adds our machinery only (eval check, batching, gathering the logits
  into one float32 array on the host);
- ``ready+feat``: the same with the feature points that the configs' zoos of this kind ask
  for (forward hooks and float16 copies of the features: outputs the bare loop does not make);
- ``predict``: ``predict`` on the uint8 NHWC images in memory (casts, transposes and scales
  each batch: work the bare loop never does; what a single-model job pays);
- ``rule``: what the inference rule runs per model and test-set group
  (``labelfree.inference.infer_group``) with one model: load the model directory, read the
  uint8 test set from its npz, predict (with those features), write the inference artefact
  (file work the bare loop does not do; not what the target is about).

Ratios are speed ratios, ``bare time / our time`` (1 = as fast as the bare loop; the target
of issue 19 is >= 0.9 for ``ready``). The breakdown columns time the parts that the bare loop
does not do, each alone: ``read`` (read_image_set), ``load`` (load_model), ``convert`` (the
per-batch uint8 -> float conversion alone), ``write`` (write_inference); and the two parts of
``ready``'s fixed cost per call that can be run alone: ``walk`` (the walk over the modules that
puts the model in eval mode and finds its first parameter, ``labelfree.inference._eval``) and
``gather`` (copying the batches' logits into one float32 host array, as ``predict`` does). Same batch size and
threads for every variant; nothing in the timed section is niced. Logits of ``ready``,
``predict`` and of the rule's artefact are compared with the bare loop's (bitwise on CPU).

    python bench/inference_vs_bare.py [--repeats 9] [--threads 1] [--batch-size 512]
        [--cases lenet,mlp] [--quick] [--device cpu|cuda] [--glibc-default] [--out DIR]

On a GPU (``--device cuda``; defaults then 5 repetitions and at most 20 calls per sample, so
the whole run takes about a minute) the clock is wall time and the tables give images/s of the
bare loop and of our paths. ``--out`` is a directory (results go to
``DIR/inference_vs_bare.{md,json}``) or a path without suffix. Needs only torch, torchvision
and numpy (and labelfree on PYTHONPATH): no hdbscan, no Snakemake.

The process first sets the allocator as the inference job does (retain_freed_memory), which
speeds up the bare loop too; ``--glibc-default`` leaves glibc's defaults.

Writes bench/results/inference_vs_bare.md and .json (read by bench/run.py).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from labelfree.device import resolve_device
from labelfree.inference import (
    _eval,  # the eval-mode walk of predict, timed alone (breakdown column "walk")
    infer_group,
    predict,
    prepare,
    retain_freed_memory,
)
from labelfree.store import read_image_set, read_logits, write_image_set, write_inference
from labelfree.zoo.arch import build_model
from labelfree.zoo.io import load_model, save_model
from labelfree.zoo.preprocess import FUSED_KINDS, preprocess

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
TARGET = 0.9
FEATS = ("first", "penultimate")
WRITERS = ("rule", "write")  # variants that write the artefact
#: The rule's progress bar needs tqdm; a bare GPU machine may lack it (rule rows then skipped).
HAS_TQDM = importlib.util.find_spec("tqdm") is not None


@dataclass(frozen=True)
class Case:
    """One architecture, width and input size; ``features`` as the configs' zoos ask."""

    data: str
    shape: tuple[int, int, int]
    arch: str
    width: int
    depth: int
    n: int
    features: tuple[str, ...]
    source: str
    torchvision: str = ""  # a torchvision builder (random weights): a large model, GPU only
    timm: str = ""  # a timm.create_model name (random weights), run with its own preprocessing

    @property
    def name(self) -> str:
        if self.torchvision or self.timm:
            return f"{self.torchvision or self.timm} ({self.data})"
        return f"{self.arch} w{self.width} d{self.depth} ({self.data})"


DIGITS, MNIST, CIFAR = (8, 8, 1), (28, 28, 1), (32, 32, 3)
# n: the digits test set of the default run holds 1078 images; MNIST and CIFAR sets hold 10,000,
# cut so that each bare loop takes a few hundred ms and the whole run minutes on 2 busy cores
# (fewer images weigh the rule's per-file costs more, so the cut does not flatter us). Our extra work per
# image (conversion, copies, reading, writing) depends on the input and the outputs, not on the
# width, so the narrowest configured width of each architecture and input is the hardest case.
CASES = (
    Case("digits 8x8x1", DIGITS, "mlp", 16, 1, 1078, (), "config.yaml laf_spread / scorecard"),
    Case("digits 8x8x1", DIGITS, "mlp", 64, 2, 1078, FEATS, "config.yaml pace_mlp_hi"),
    Case("digits 8x8x1", DIGITS, "lenet", 4, 1, 1078, (), "config.yaml laf_spread"),
    Case("digits 8x8x1", DIGITS, "lenet", 8, 1, 1078, FEATS, "config.yaml pace_lenet_hi"),
    Case("digits 8x8x1", DIGITS, "lenet", 16, 1, 1078, ("penultimate",), "config.yaml lenet_backbone"),
    Case("digits 8x8x1", DIGITS, "resnet", 4, 1, 1078, (), "config.yaml laf_spread"),
    Case("MNIST 28x28x1", MNIST, "mlp", 32, 1, 10000, (), "laf-mnist-reduced.yaml"),
    Case("MNIST 28x28x1", MNIST, "mlp", 512, 2, 4096, (), "laf-mnist.yaml"),
    Case("MNIST 28x28x1", MNIST, "lenet", 4, 0, 4096, FEATS, "pace-mnist.yaml lenet1"),
    Case("MNIST 28x28x1", MNIST, "lenet", 8, 2, 2048, FEATS, "pace-mnist.yaml lenet5"),
    Case("MNIST 28x28x1", MNIST, "resnet", 8, 1, 1024, (), "laf-mnist.yaml"),
    Case("MNIST 28x28x1", MNIST, "cnn_tiny", 16, 1, 1024, (), "laf-mnist.yaml"),
    Case("CIFAR 32x32x3", CIFAR, "mlp", 512, 1, 4096, (), "laf-cifar10.yaml"),
    Case("CIFAR 32x32x3", CIFAR, "lenet", 6, 1, 2048, (), "laf-cifar10.yaml"),
    Case("CIFAR 32x32x3", CIFAR, "resnet", 16, 3, 256, FEATS, "pace-cifar10.yaml resnet20"),
    Case("CIFAR 32x32x3", CIFAR, "cnn_tiny", 16, 1, 1024, (), "metamorphic spec 7.2 network"),
    Case("CIFAR 32x32x3", CIFAR, "cnn_tiny", 32, 1, 512, (), "laf-cifar10.yaml"),
)
#: Large-model case, run on a GPU only (on 2 CPU cores one pass takes minutes).
GPU_CASES = (
    Case("ImageNet-size 224x224x3", (224, 224, 3), "torchvision", 0, 0, 1024, (),
         "torchvision resnet50, random weights, 1000 classes", torchvision="resnet50"),
)


#: timm models (sheet rows `source: timm`), random weights, 1000 classes, run with the model's
#: own preprocessing (a `pil:` pipeline from timm's pretrained configuration; images stored at
#: its resize size, as docs/your-zoo.md section 4 stores an imagefolder set). The test_* models
#: are timm's tiny test architectures (160x160 input), small enough for 2 busy CPU cores.
HAS_TIMM = importlib.util.find_spec("timm") is not None
TIMM_CASES = (
    Case("timm 168x168x3", (168, 168, 3), "timm", 0, 0, 256, (), "docs/your-zoo.md section 4",
         timm="test_resnet"),
    Case("timm 168x168x3", (168, 168, 3), "timm", 0, 0, 256, ("penultimate",),
         "docs/your-zoo.md section 4", timm="test_vit"),
    Case("timm 168x168x3", (168, 168, 3), "timm", 0, 0, 256, (), "docs/your-zoo.md section 4",
         timm="test_efficientnet"),
) if HAS_TIMM else ()
#: timm models of ImageNet size, GPU only.
TIMM_GPU_CASES = (
    Case("timm 235x235x3", (235, 235, 3), "timm", 0, 0, 1024, (), "resnet50 (timm), random weights",
         timm="resnet50"),
) if HAS_TIMM else ()


def timm_model(case: Case, work: Path) -> tuple[torch.nn.Module, str, Path]:
    """The case's timm model (seeded random weights), its own preprocessing, and its model
    directory as a `source: timm` row resolves it (labelfree.zoo.timm_source)."""
    import timm  # deferred: optional extra

    from labelfree.zoo.timm_source import own_preprocessing

    torch.manual_seed(0)
    model = timm.create_model(case.timm, pretrained=False).eval()
    kind = own_preprocessing(model)
    crop = int(kind.split("crop=")[1].split(",")[0])
    mdir = work / case.name.replace(" ", "_")
    save_model(mdir, model, {
        "model": mdir.name, "family": "timm", "source": "timm", "arch": case.timm,
        "timm_kwargs": {"num_classes": int(model.num_classes)},
        "num_classes": int(model.num_classes), "input_shape": [crop, crop, 3],
        "preprocessing": kind})
    return model, kind, mdir


def machine() -> dict[str, Any]:
    """CPU, cores, platform, torch and the commit this tree is at (``+dirty`` if modified)."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break

    def git(*args: str) -> str:
        try:  # a GPU machine may have the tree without git
            out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
        except OSError:
            return ""
        return out.stdout.strip()

    dirty = bool(git("status", "--porcelain", "--", "src", "bench/*.py"))
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "commit": git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else ""),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def bare_loop(model: torch.nn.Module, t: torch.Tensor, bs: int, amp: bool) -> list[torch.Tensor]:
    """The reference: batches sliced from a ready tensor, ``model(x)`` under inference_mode."""
    autocast = (
        torch.autocast(device_type="cuda", dtype=torch.float16) if amp else contextlib.nullcontext()
    )
    with torch.inference_mode(), autocast:
        return [model(t[s : s + bs]) for s in range(0, len(t), bs)]


def convert_only(x: np.ndarray, bs: int, channels: int, dev: torch.device,
                 kind: str = "scale01") -> None:
    """predict's per-batch conversion alone (one reused buffer, as predict does, for the
    elementwise kinds; a timm model's `pil:` pipeline runs per image)."""
    xt = torch.from_numpy(x)
    if kind not in FUSED_KINDS:
        with torch.inference_mode():
            for s in range(0, len(x), bs):
                preprocess(xt[s : s + bs], kind, channels=channels, device=dev)
        return
    buf = torch.empty((min(bs, len(x)), channels, *x.shape[1:3]), dtype=torch.float32, device=dev)
    with torch.inference_mode():
        for s in range(0, len(x), bs):
            k = min(bs, len(x) - s)
            preprocess(xt[s : s + k], "scale01", channels=channels, device=dev, out=buf[:k])


def gather_only(outs: list[torch.Tensor], n: int, dev: torch.device) -> np.ndarray | torch.Tensor:
    """predict's gathering of the batches' logits alone: one ``torch.cat`` into a new float32
    (N, K) output, allocated by numpy on the CPU (labelfree.inference._Rows)."""
    shape = (n, *outs[0].shape[1:])
    if dev.type == "cpu":
        out = np.empty(shape, np.float32)
        torch.cat(outs, out=torch.from_numpy(out))
        return out
    return torch.cat(outs, out=torch.empty(shape, dtype=torch.float32, device=dev))


def timed(
    fn: Callable[[int], Any], number: int, sync: bool, before: Callable[[], Any] | None = None
) -> tuple[float, float]:
    """(wall, CPU) seconds per call of ``fn(0) ... fn(number - 1)``, run back to back with the
    garbage collector off (as timeit does); ``before`` (untimed) prepares them."""
    if before is not None:
        before()
    gc.collect()
    gc.disable()
    try:
        c0, t0 = time.process_time(), time.perf_counter()
        for i in range(number):
            fn(i)
        if sync:
            torch.cuda.synchronize()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        return wall / number, cpu / number
    finally:
        gc.enable()


def run_case(
    case: Case, args: argparse.Namespace, dev: torch.device, work: Path, clock: str
) -> dict[str, Any]:
    """Time every variant of ``case``; check the logits against the bare loop's."""
    rng = np.random.default_rng(0)
    n = min(case.n, max(args.batch_size, case.n // 8)) if args.quick else case.n
    x = rng.integers(0, 256, (n, *case.shape), dtype=np.uint8)
    torch.manual_seed(0)
    k_classes = 1000 if case.torchvision or case.timm else 10
    kind = "scale01"
    mdir = work / case.name.replace(" ", "_")
    if case.torchvision:
        import torchvision

        model = getattr(torchvision.models, case.torchvision)(weights=None).to(dev).eval()
    elif case.timm:  # the rule loads the model directory a timm row resolves to
        model, kind, mdir = timm_model(case, work)
        model = model.to(dev)
    else:
        model = build_model(case.arch, case.shape, 10, case.width, case.depth).to(dev).eval()
    set_path = work / f"{mdir.name}_id.npz"
    if not case.torchvision:
        write_image_set(set_path, x, np.zeros(n, np.int64))
    if not case.torchvision and not case.timm:  # the rule loads a local model directory
        meta = {"model": mdir.name, "arch": case.arch, "width": case.width, "depth": case.depth,
                "num_classes": k_classes, "input_shape": list(case.shape),
                "preprocessing": "scale01", "family": "local"}
        save_model(mdir, model, meta)
    bs, amp = args.batch_size, dev.type == "cuda"
    sync = dev.type == "cuda"
    t = preprocess(x, kind, channels=case.shape[2], device=dev)  # ready tensor, untimed
    ready = prepare(x, kind, case.shape[2], dev)  # what infer_group hands predict, untimed
    # what infer_group hands write_inference: float16 features
    res = predict(model, x, kind, bs, dev, case.features, amp, feature_dtype=torch.float16)

    def bare(_: int) -> None:
        bare_loop(model, t, bs, amp)

    bare_outs = bare_loop(model, t, bs, amp)  # what "gather" copies

    # Short cases run several times per sample (each sample >= ~20 ms of bare loop), so that
    # the timer and cold caches do not dominate; every variant of a case runs as many times.
    bare(0)
    once = min(timed(bare, 1, sync)[0] for _ in range(3))
    number = max(1, int(np.ceil(0.02 / once)))
    if args.max_calls:
        number = min(number, args.max_calls)
    outs = [work / f"{mdir.name}_out{i}.npz" for i in range(number)]

    def fresh_outputs() -> None:
        # Snakemake deletes a job's outputs before it runs, so the rule writes new files
        # (renaming onto an existing file makes ext4 flush its data first: auto_da_alloc).
        for o in outs:
            o.unlink(missing_ok=True)

    def rule(i: int) -> None:
        infer_group([mdir], [("id", set_path)], [outs[i]], features=case.features,
                    batch_size=bs, device=str(dev), amp=amp, progress_file=io.StringIO())

    variants: dict[str, Callable[[int], Any]] = {
        "bare": bare,
        "ready": lambda i: predict(model, ready, kind, bs, dev, (), amp),
        "predict": lambda i: predict(model, x, kind, bs, dev, (), amp),
        "convert": lambda i: convert_only(x, bs, case.shape[2], dev, kind),
        "walk": lambda i: _eval(model),
        "gather": lambda i: gather_only(bare_outs, n, dev),
    }
    with_rule = not case.torchvision and HAS_TQDM
    if with_rule:
        variants |= {
            "rule": rule,
            "read": lambda i: read_image_set(set_path),
            "load": lambda i: load_model(mdir, dev),
            "write": lambda i: write_inference(outs[i], {"id": res}),
        }
    if case.features:  # float16 features, as the rule asks for them
        variants["ready+feat"] = lambda i: predict(
            model, ready, kind, bs, dev, case.features, amp, feature_dtype=torch.float16
        )
        variants["predict+feat"] = lambda i: predict(
            model, x, kind, bs, dev, case.features, amp, feature_dtype=torch.float16
        )
    for k, fn in variants.items():  # warm-up (allocator, kernels, page cache)
        if k in WRITERS:
            fresh_outputs()
        fn(0)
    times: dict[str, dict[str, list[float]]] = {"wall": {}, "cpu": {}}
    names = list(variants)
    for r in range(args.repeats):
        for k in names[r % len(names) :] + names[: r % len(names)]:
            wall, cpu = timed(variants[k], number, sync, fresh_outputs if k in WRITERS else None)
            times["wall"].setdefault(k, []).append(wall)
            times["cpu"].setdefault(k, []).append(cpu)
    ref = torch.cat(bare_loop(model, t, bs, amp)).float().cpu().numpy()
    got = [predict(model, x, kind, bs, dev, (), amp)["logits"],
           predict(model, ready, kind, bs, dev, (), amp)["logits"]]
    if with_rule:
        fresh_outputs()
        rule(0)
        got.append(read_logits(outs[0], "id"))
    if dev.type == "cpu":
        same = all(np.array_equal(g, ref) for g in got)
    else:  # autocast: float16 kernels may differ between the per-batch and the ready input
        same = all(np.allclose(g, ref, atol=1e-2, rtol=1e-2) for g in got)
    ours_k = "ready+feat" if case.features else "ready"
    row: dict[str, Any] = {
        "case": case.name, "data": case.data, "arch": case.torchvision or case.timm or case.arch,
        "width": case.width, "depth": case.depth, "n": n, "features": list(case.features),
        "source": case.source, "calls_per_sample": number, "identical_logits": same,
        "images_per_s": {
            k: n / statistics.median(times["wall"][k])
            for k in ("bare", "ready", ours_k, "predict", "rule") if k in times["wall"]
        },
    }
    for c in ("wall", "cpu"):
        row[f"ms_{c}"] = {k: 1e3 * statistics.median(v) for k, v in times[c].items()}
        for k in ("ready", "ready+feat", "predict", "predict+feat", "rule"):
            row[f"ratio_{c}"] = row.get(f"ratio_{c}", {})
            row[f"quartiles_{c}"] = row.get(f"quartiles_{c}", {})
            if k in times[c]:
                row[f"ratio_{c}"][k] = paired(times[c], k)
                row[f"quartiles_{c}"][k] = paired(times[c], k, quartiles=True)
    row["ms"], row["ratio"], row["quartiles"] = (
        row[f"ms_{clock}"], row[f"ratio_{clock}"], row[f"quartiles_{clock}"]
    )
    return row


def paired(times: dict[str, list[float]], k: str, quartiles: bool = False) -> Any:
    """Median (or quartiles) over repetitions of bare / ``k``, each from the same repetition:
    a slow minute of the shared machine slows both sides of a ratio."""
    r = [b / v for b, v in zip(times["bare"], times[k], strict=True)]
    if quartiles:
        q = statistics.quantiles(r, n=4) if len(r) > 1 else [r[0], r[0], r[0]]
        return [q[0], q[2]]
    return statistics.median(r)


def fmt_ratio(r: float | None, q: list[float] | None = None) -> str:
    if r is None:
        return "—"
    text = f"{r:.2f}" if r >= TARGET else f"**{r:.2f}**"
    return text + (f" ({q[0]:.2f}–{q[1]:.2f})" if q else "")


KINDS = (
    ("ready", "ready tensors, logits (the target: each model of a job's group)"),
    ("ready+feat", "ready tensors with the configs' features"),
    ("predict", "uint8 images in memory, logits (converted batch by batch: a one-model job)"),
    ("predict+feat", "uint8 images with the configs' features"),
    ("rule", "inference rule with one model (load, read, convert, predict, write)"),
)
#: The row that issue 19's target (">= 0.9 of a bare loop on ready tensors") is about.
TARGET_KIND = "ready"


def summary(rows: list[dict[str, Any]], clock: str) -> dict[str, dict[str, Any]]:
    """Per variant: worst median ratio, its case, how many cases meet the target."""
    out = {}
    for k, _ in KINDS:
        vals = [(r[f"ratio_{clock}"][k], r["case"]) for r in rows if k in r[f"ratio_{clock}"]]
        worst = min(vals) if vals else (float("nan"), "—")
        out[k] = {"worst": worst[0], "case": worst[1], "cases": len(vals),
                  "met": sum(v >= TARGET for v, _ in vals)}
    return out


def why(r: dict[str, Any]) -> list[str]:
    """Measured breakdown of a case below target: the parts the bare loop does not do."""
    ms, ratio, out = r["ms"], r["ratio"], []
    b = ms["bare"]
    if ratio["ready"] < TARGET:
        # from the paired ratio (the medians of the two times may even cross on a busy machine)
        rest = b / ratio["ready"] - b
        text = f"{r['case']}, ready {ratio['ready']:.2f}: bare {b:.3f} ms; our machinery adds "
        if "walk" in ms and "gather" in ms:  # records before the breakdown lack them
            other = rest - ms["walk"] - ms["gather"]
            text += (
                f"{rest:.3f} ms per call (bare / ratio - bare: {rest / b:.0%} of bare), of "
                "which, timed alone, the "
                f"eval-mode walk over the modules {ms['walk']:.3f} ms and gathering the logits "
                f"into one host array {ms['gather']:.3f} ms (work a bare loop leaves to its "
                f"caller); the other {other:.3f} ms: argument and input checks, contexts, the "
                "batch loop's bookkeeping, and the noise of the shared machine"
            )
        else:
            text += (
                f"{rest:.3f} ms per call ({rest / b:.0%} of bare: argument checks, the eval-mode "
                "walk over the modules, gathering the logits into one host array)"
            )
        out.append(text)
    if "ready+feat" in ratio and ratio["ready+feat"] < TARGET:
        f = ms["ready+feat"] - ms["ready"]
        out.append(
            f"{r['case']}, ready+feat {ratio['ready+feat']:.2f}: the features "
            f"({', '.join(r['features'])}) add {f:.3f} ms ({f / b:.0%} of bare: hooks, float16 "
            "copies of (N, D) features, outputs the bare loop does not make)"
        )
    if ratio["predict"] < TARGET:
        out.append(
            f"{r['case']}, predict {ratio['predict']:.2f}: the uint8 -> float conversion alone "
            f"{ms['convert']:.3f} ms ({ms['convert'] / b:.0%} of bare), work the bare loop "
            "never does; a job with several models converts each set once (the ready row)"
        )
    if "rule" in ratio and ratio["rule"] < TARGET:
        io_ms = ms["read"] + ms["load"] + ms["write"]
        out.append(
            f"{r['case']}, rule {ratio['rule']:.2f}: reading the set {ms['read']:.3f} ms, loading "
            f"the model {ms['load']:.3f} ms, writing the artefact {ms['write']:.3f} ms: "
            f"{io_ms:.3f} ms of file work = {io_ms / b:.0%} of the bare loop's {b:.3f} ms"
        )
    return out


def render(info: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The markdown report; every figure below comes from ``rows`` of this run."""
    clock = info["clock"]
    clock_text = (
        "CPU time of the process (`time.process_time`): with one torch thread it is the work "
        "done, without the waits for a core that the shared machine adds to wall time"
        if clock == "cpu" else "wall time"
    )
    lines = [
        "# Inference against a bare `model(x)` loop on ready tensors (bench/inference_vs_bare.py)",
        "",
        "Generated by `" + " ".join(["python bench/inference_vs_bare.py", *info["argv"]])
        + "`; do not edit by hand" + (f" (re-rendered from {info['rendered_from']})"
                                      if info.get("rendered_from") else "") + ".",
        "",
        f"- machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), "
        f"{info['platform']}, CPU capability {info['cpu_capability']}",
        f"- commit {info['commit']}, {info['date']}; Python {info['python']}, torch {info['torch']}",
        f"- device {info['device']}" + (f" ({info['gpu']})" if info.get("gpu") else "")
        + f", torch threads {info['threads']}, batch size "
        f"{info['batch_size']}, {info['repeats']} interleaved repetitions (order rotated each "
        "time); each sample times `calls` back-to-back calls of a variant (enough for >= 20 ms "
        "of bare loop; garbage collector off, as timeit does) and gives ms per call",
        f"- clock of the main table: {clock_text}; the wall-time ratios follow below it",
        f"- memory allocator (both loops, one process): {info['allocator']}",
        *([] if info.get("rule_timed", True) else
          ["- rule rows not timed: tqdm (the inference job's progress bar) is not installed"]),
        f"- load average (1, 5, 15 min) before: {info['load_before']}, after: {info['load_after']}",
        "",
        "Ratios are speed ratios, bare time / our time (>= 1: as fast as the bare loop): the "
        "median over repetitions of the ratio within one repetition, quartiles in brackets; "
        f"target >= {TARGET} for `ready` (issue 19 item 3: \"on ready tensors\"); bold = median "
        "below 0.9. `bare`: `model(t[s:s+b])` under `torch.inference_mode()` over a ready float "
        "tensor (same values and strides as ours; float16 autocast on a GPU, as our `amp`). "
        "`ready` (the target row): `predict` on the same values converted once by "
        "`labelfree.inference.prepare`, what each model of an inference job's group runs (the "
        "job converts each set once for all its models). `ready+feat`: with the features the "
        "configs' zoos of this kind store (listed), float16 as the rule asks: outputs the bare "
        "loop does not make. `predict`: uint8 images in memory to logits, converted batch by "
        "batch (a job with one model). `rule`: the inference job with one model and one set: "
        "load the model directory, read the uint8 set from its npz, predict (with those "
        "features), write the artefact to a new file. Breakdown, each part timed alone: "
        "`convert` = the uint8 -> float conversion of every batch; `read` = reading the set's "
        "npz; `load` = loading the model directory; `write` = writing the artefact; `walk` = "
        "the walk over the modules that puts the model in eval mode (part of `ready`); "
        "`gather` = copying the batches' logits into one float32 array (part of `ready`). "
        "Times in ms (medians).",
        "",
        "| case | images | calls | features | bare | ready | **ready ratio** | ready+feat "
        "| ready+feat ratio | predict | predict ratio | predict+feat ratio | rule | rule ratio "
        "| convert | read | load | write | walk | gather | identical logits |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]

    def cell(d: dict[str, float], k: str) -> str:
        return f"{d[k]:.3f}" if k in d else "—"

    for r in rows:
        ms, ra, q = r["ms"], r["ratio"], r["quartiles"]
        feat = ", ".join(r["features"]) or "—"
        lines.append(
            f"| {r['case']} | {r['n']} | {r['calls_per_sample']} | {feat} | {ms['bare']:.3f} "
            f"| {ms['ready']:.3f} | {fmt_ratio(ra['ready'], q['ready'])} "
            f"| {cell(ms, 'ready+feat')} | {fmt_ratio(ra.get('ready+feat'), q.get('ready+feat'))} "
            f"| {ms['predict']:.3f} | {fmt_ratio(ra['predict'], q['predict'])} "
            f"| {fmt_ratio(ra.get('predict+feat'), q.get('predict+feat'))} | {cell(ms, 'rule')} "
            f"| {fmt_ratio(ra.get('rule'), q.get('rule'))} | {ms['convert']:.3f} "
            f"| {cell(ms, 'read')} | {cell(ms, 'load')} | {cell(ms, 'write')} "
            f"| {cell(ms, 'walk')} | {cell(ms, 'gather')} "
            f"| {'yes' if r['identical_logits'] else 'NO'} |"
        )
    lines += [
        "",
        "Wall-time ratios (same runs; on the shared CPU machine they carry the waits for a "
        "core) and throughput by wall time, images per second:",
        "",
        "| case | ready | ready+feat | predict | rule | bare images/s | ready images/s "
        "| predict images/s | rule images/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        w, ips = r["ratio_wall"], r["images_per_s"]

        def rate(k: str, ips: dict[str, float] = ips) -> str:
            return f"{ips[k]:.0f}" if k in ips else "—"

        lines.append(
            f"| {r['case']} | {fmt_ratio(w['ready'])} | {fmt_ratio(w.get('ready+feat'))} "
            f"| {fmt_ratio(w['predict'])} | {fmt_ratio(w.get('rule'))} | {rate('bare')} "
            f"| {rate('ready')} | {rate('predict')} | {rate('rule')} |"
        )
    s = summary(rows, clock)
    lines += ["", f"Summary ({clock} time):", ""]
    for k, label in KINDS:
        if s[k]["cases"]:
            lines.append(
                f"- {label}: worst ratio {s[k]['worst']:.2f} ({s[k]['case']}); {s[k]['met']} of "
                f"{s[k]['cases']} cases >= {TARGET}."
            )
    same = all(r["identical_logits"] for r in rows)
    exact = "identical to" if info["device"] == "cpu" else "within 1e-2 of (float16 autocast)"
    lines.append(
        f"- logits of ready, predict and the rule's artefact {exact} the bare loop's: "
        + ("all cases." if same else "NOT in every case.")
    )
    below = [line for r in rows for line in why(r)]
    if below:
        lines += ["", "Below target, measured breakdown:", ""] + [f"- {b}" for b in below]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=0, help="default 9 on CPU, 5 on a GPU")
    ap.add_argument("--max-calls", type=int, default=-1,
                    help="cap on calls per sample (default none on CPU, 20 on a GPU)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (config default: 1)")
    ap.add_argument("--batch-size", type=int, default=512, help="config default: 512")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--clock", choices=("auto", "cpu", "wall"), default="auto",
                    help="clock of the main table; auto: CPU time on one CPU thread, else wall")
    ap.add_argument("--glibc-default", action="store_true",
                    help="leave glibc's allocator as it is (the inference job calls "
                         "retain_freed_memory; so does this benchmark unless told not to)")
    ap.add_argument("--cases", default="", help="comma-separated substrings of case names")
    ap.add_argument("--quick", action="store_true", help="an eighth of the images (a smoke test)")
    ap.add_argument("--out", default=str(RESULTS / "inference_vs_bare"),
                    help="a directory (gets inference_vs_bare.md/.json) or a path without suffix")
    ap.add_argument("--render", metavar="JSON", default="",
                    help="measure nothing: rewrite --out's markdown from a run's JSON record")
    args = ap.parse_args(argv)
    if args.render:
        record = json.loads(Path(args.render).read_text())
        info = record["machine"] | {"rendered_from": Path(args.render).name}
        Path(args.out).with_suffix(".md").write_text(render(info, record["rows"]))
        return
    torch.set_num_threads(args.threads)
    retained = False if args.glibc_default else retain_freed_memory()
    dev = resolve_device(args.device)
    gpu = dev.type == "cuda"
    args.repeats = args.repeats or (5 if gpu else 9)
    args.max_calls = args.max_calls if args.max_calls >= 0 else (20 if gpu else 0)
    if gpu:  # the inference job's settings (infer_group), for both loops
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    clock = args.clock
    if clock == "auto":
        clock = "cpu" if dev.type == "cpu" and args.threads == 1 else "wall"
    wanted = [w for w in args.cases.split(",") if w]
    pool = CASES + TIMM_CASES + GPU_CASES + TIMM_GPU_CASES if gpu else CASES + TIMM_CASES
    cases = [c for c in pool if not wanted or any(w in c.name for w in wanted)]
    info = machine() | {
        "argv": argv if argv is not None else sys.argv[1:], "clock": clock,
        "allocator": "glibc, freed memory retained (labelfree.inference.retain_freed_memory, as "
                     "the inference job sets it)" if retained else "the C library's defaults",
        "device": str(dev), "threads": torch.get_num_threads(), "batch_size": args.batch_size,
        "gpu": torch.cuda.get_device_name(dev) if gpu else None,
        "rule_timed": HAS_TQDM,
        "repeats": args.repeats, "load_before": " ".join(f"{v:.2f}" for v in os.getloadavg()),
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="lf-infer-bench-") as tmp:
        for case in cases:
            row = run_case(case, args, dev, Path(tmp), clock)
            rows.append(row)
            ra = row["ratio"]
            ips = row["images_per_s"]
            print(
                f"{row['case']:34s} n={row['n']:5d} bare {row['ms']['bare']:9.3f} ms "
                f"({ips['bare']:.0f} img/s)  ready {ra['ready']:.2f} ({ips['ready']:.0f} img/s)"
                f"  ready+feat {fmt_ratio(ra.get('ready+feat'))}  predict {ra['predict']:.2f}"
                f"  rule {fmt_ratio(ra.get('rule'))}  identical {row['identical_logits']}",
                flush=True,
            )
    info["load_after"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    out = Path(args.out)
    if out.is_dir():
        out = out / "inference_vs_bare"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(render(info, rows))
    s = summary(rows, clock)
    record = {
        "benchmark": "inference_vs_bare",
        "target": f"speed ratio bare / ours >= {TARGET} on ready tensors (row {TARGET_KIND!r}) "
                  "for every local architecture (issue 19 item 3); the other rows are context",
        "results": [
            {"what": f"{label}, worst case ({clock} time)", "value": round(s[k]["worst"], 3),
             "case": s[k]["case"], "met": s[k]["met"] == s[k]["cases"],
             "target": k == TARGET_KIND}
            for k, label in KINDS if s[k]["cases"]
        ],
        "machine": info,
        "rows": rows,
    }
    out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out.with_suffix('.md')} and .json")


if __name__ == "__main__":
    main()
