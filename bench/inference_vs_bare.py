"""Benchmark: the inference rule's path against a bare ``model(x)`` loop on ready tensors.

Issue 19 item 3 and issue 13 (benchmark claims). For each local architecture at widths the
configs use (config/config.yaml, config/paper/*.yaml), on realistic inputs (8x8x1 digits,
28x28x1 MNIST, 32x32x3 CIFAR), one process times, interleaved (the order rotates every
repetition) and reported as medians:

- ``bare``: the physical reference, ``with torch.inference_mode(): model(t[s:s + b])`` over a
  ready float NCHW tensor ``t`` holding the same values, with the same strides, as our
  preprocessing gives (built once, untimed), keeping each batch's output;
- ``predict``: ``labelfree.inference.predict`` on the uint8 NHWC images in memory (cast,
  transpose and scale each batch, forward, gather logits);
- ``predict+feat``: the same with the feature points that the configs' zoos of this kind ask
  for (forward hooks and copies of the features);
- ``rule``: what the inference rule runs per model and test-set group
  (``labelfree.inference.infer_group``): load the model directory, read the uint8 test set
  from its npz, predict (with those features), write the inference artefact.

Ratios are speed ratios, ``bare time / our time`` (1 = as fast as the bare loop; the target
of issue 19 is >= 0.9). The breakdown columns time the parts of the rule that the bare loop
does not do, each alone: ``read`` (read_image_set), ``load`` (load_model), ``convert`` (the
per-batch uint8 -> float conversion alone), ``write`` (write_inference). Same batch size and
threads for every variant; nothing in the timed section is niced. Logits of ``predict`` and
of the rule's artefact are compared with the bare loop's (bitwise on CPU).

    python bench/inference_vs_bare.py [--repeats 7] [--threads 1] [--batch-size 512]
        [--cases lenet,mlp] [--quick] [--device cpu|cuda]

Writes bench/results/inference_vs_bare.md and .json (read by bench/run.py).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from labelfree.inference import infer_group, predict, resolve_device
from labelfree.store import read_image_set, read_logits, write_image_set, write_inference
from labelfree.zoo import build_model, load_model, save_model
from labelfree.zoo.preprocess import preprocess

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
TARGET = 0.9
FEATS = ("first", "penultimate")


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

    @property
    def name(self) -> str:
        return f"{self.arch} w{self.width} d{self.depth} ({self.data})"


DIGITS, MNIST, CIFAR = (8, 8, 1), (28, 28, 1), (32, 32, 3)
# n: the digits test set of the default run holds 1078 images; MNIST and CIFAR sets hold 10,000,
# cut for the heavier models so the whole run takes minutes on 2 busy cores. Our extra work per
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
    Case("MNIST 28x28x1", MNIST, "mlp", 512, 2, 10000, (), "laf-mnist.yaml"),
    Case("MNIST 28x28x1", MNIST, "lenet", 4, 0, 10000, FEATS, "pace-mnist.yaml lenet1"),
    Case("MNIST 28x28x1", MNIST, "lenet", 8, 2, 4096, FEATS, "pace-mnist.yaml lenet5"),
    Case("MNIST 28x28x1", MNIST, "resnet", 8, 1, 2048, (), "laf-mnist.yaml"),
    Case("MNIST 28x28x1", MNIST, "cnn_tiny", 16, 1, 2048, (), "laf-mnist.yaml"),
    Case("CIFAR 32x32x3", CIFAR, "mlp", 512, 1, 10000, (), "laf-cifar10.yaml"),
    Case("CIFAR 32x32x3", CIFAR, "lenet", 6, 1, 4096, (), "laf-cifar10.yaml"),
    Case("CIFAR 32x32x3", CIFAR, "resnet", 16, 3, 512, FEATS, "pace-cifar10.yaml resnet20"),
    Case("CIFAR 32x32x3", CIFAR, "cnn_tiny", 16, 1, 1024, (), "metamorphic spec 7.2 network"),
    Case("CIFAR 32x32x3", CIFAR, "cnn_tiny", 32, 1, 1024, (), "laf-cifar10.yaml"),
)


def machine() -> dict[str, Any]:
    """CPU, cores, platform, torch and the commit this tree is at (``+dirty`` if modified)."""
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break

    def git(*args: str) -> str:
        out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
        return out.stdout.strip()

    dirty = bool(git("status", "--porcelain", "--", "src", "bench"))
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


def convert_only(x: np.ndarray, bs: int, channels: int, dev: torch.device) -> None:
    """predict's per-batch conversion alone (one reused buffer, as predict does)."""
    xt = torch.from_numpy(x)
    buf = torch.empty((min(bs, len(x)), channels, *x.shape[1:3]), dtype=torch.float32, device=dev)
    with torch.inference_mode():
        for s in range(0, len(x), bs):
            k = min(bs, len(x) - s)
            preprocess(xt[s : s + k], "scale01", channels=channels, device=dev, out=buf[:k])


def timed(fn: Callable[[], Any], sync: bool) -> float:
    gc.collect()
    t0 = time.perf_counter()
    fn()
    if sync:
        torch.cuda.synchronize()
    return time.perf_counter() - t0


def run_case(case: Case, args: argparse.Namespace, dev: torch.device, work: Path) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    n = max(args.batch_size, case.n // 8) if args.quick else case.n
    x = rng.integers(0, 256, (n, *case.shape), dtype=np.uint8)
    torch.manual_seed(0)
    model = build_model(case.arch, case.shape, 10, case.width, case.depth).to(dev).eval()
    mdir = work / case.name.replace(" ", "_")
    meta = {"model": mdir.name, "arch": case.arch, "width": case.width, "depth": case.depth,
            "num_classes": 10, "input_shape": list(case.shape), "preprocessing": "scale01",
            "family": "local"}
    save_model(mdir, model, meta)
    set_path = work / f"{mdir.name}_id.npz"
    write_image_set(set_path, x, np.zeros(n, np.int64))
    out_path = work / f"{mdir.name}_out.npz"
    bs, amp = args.batch_size, dev.type == "cuda"
    sync = dev.type == "cuda"
    t = preprocess(x, "scale01", channels=case.shape[2], device=dev)  # ready tensor, untimed
    res = predict(model, x, "scale01", bs, dev, case.features, amp)

    def rule() -> None:
        infer_group([mdir], [("id", set_path)], [out_path], features=case.features,
                    batch_size=bs, device=str(dev), amp=amp, progress_file=io.StringIO())

    variants: dict[str, Callable[[], Any]] = {
        "bare": lambda: bare_loop(model, t, bs, amp),
        "predict": lambda: predict(model, x, "scale01", bs, dev, (), amp),
        "rule": rule,
        "read": lambda: read_image_set(set_path),
        "load": lambda: load_model(mdir, dev),
        "convert": lambda: convert_only(x, bs, case.shape[2], dev),
        "write": lambda: write_inference(out_path, {"id": res}),
    }
    if case.features:
        variants["predict+feat"] = lambda: predict(model, x, "scale01", bs, dev, case.features, amp)
    for fn in variants.values():  # warm-up (allocator, kernels, page cache)
        fn()
    times: dict[str, list[float]] = {k: [] for k in variants}
    names = list(variants)
    for r in range(args.repeats):
        for k in names[r % len(names) :] + names[: r % len(names)]:
            times[k].append(timed(variants[k], sync))
    med = {k: statistics.median(v) for k, v in times.items()}
    ref = torch.cat(bare_loop(model, t, bs, amp)).float().cpu().numpy()
    ours = predict(model, x, "scale01", bs, dev, (), amp)["logits"]
    rule()
    on_disk = read_logits(out_path, "id")
    if dev.type == "cpu":
        same = bool(np.array_equal(ours, ref) and np.array_equal(on_disk, ref))
    else:
        same = bool(np.allclose(ours, ref, atol=1e-3) and np.allclose(on_disk, ref, atol=1e-3))
    row: dict[str, Any] = {
        "case": case.name, "data": case.data, "arch": case.arch, "width": case.width,
        "depth": case.depth, "n": n, "features": list(case.features), "source": case.source,
        "ms": {k: 1e3 * v for k, v in med.items()},
        "spread_ms": {k: 1e3 * (max(v) - min(v)) for k, v in times.items()},
        "ratio_predict": med["bare"] / med["predict"],
        "ratio_predict_feat": med["bare"] / med["predict+feat"] if case.features else None,
        "ratio_rule": med["bare"] / med["rule"],
        "identical_logits": same,
        "images_per_s_bare": n / med["bare"],
        "images_per_s_rule": n / med["rule"],
    }
    return row


def fmt_ratio(r: float | None) -> str:
    if r is None:
        return "—"
    return f"{r:.2f}" if r >= TARGET else f"**{r:.2f}**"


def render(info: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    """The markdown report; every figure below comes from ``rows`` of this run."""
    lines = [
        "# Inference against a bare `model(x)` loop on ready tensors (bench/inference_vs_bare.py)",
        "",
        "Generated by `python bench/inference_vs_bare.py "
        + " ".join(info["argv"]) + "`; do not edit by hand.",
        "",
        f"- machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), "
        f"{info['platform']}, CPU capability {info['cpu_capability']}",
        f"- commit {info['commit']}, {info['date']}; Python {info['python']}, torch {info['torch']}",
        f"- device {info['device']}, torch threads {info['threads']}, batch size {info['batch_size']}, "
        f"{info['repeats']} interleaved repetitions (order rotated each time), medians",
        f"- load average (1, 5, 15 min) before: {info['load_before']}, after: {info['load_after']} "
        "(a shared machine: absolute times vary with the load, the ratios of variants timed "
        "side by side much less)",
        "",
        "Ratios are speed ratios, bare time / our time (>= 1: as fast as the bare loop); target "
        f">= {TARGET} (issue 19 item 3); bold = below target. `predict`: uint8 images in memory "
        "to logits. `predict+feat`: with the features the configs' zoos of this kind store "
        "(listed). `rule`: what the inference job does per model and test-set group: load the "
        "model directory, read the uint8 set from its npz, predict (with those features), write "
        "the artefact. Breakdown: each part of the rule alone.",
        "",
        "| case | images | features | bare ms | predict ms | predict ratio | predict+feat ms "
        "| predict+feat ratio | rule ms | rule ratio | read ms | load ms | convert ms | write ms "
        "| identical logits |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ms = r["ms"]
        feat = ", ".join(r["features"]) or "—"
        pf = f"{ms['predict+feat']:.2f}" if "predict+feat" in ms else "—"
        lines.append(
            f"| {r['case']} | {r['n']} | {feat} | {ms['bare']:.2f} | {ms['predict']:.2f} "
            f"| {fmt_ratio(r['ratio_predict'])} | {pf} | {fmt_ratio(r['ratio_predict_feat'])} "
            f"| {ms['rule']:.2f} | {fmt_ratio(r['ratio_rule'])} | {ms['read']:.2f} | {ms['load']:.2f} "
            f"| {ms['convert']:.2f} | {ms['write']:.2f} | {'yes' if r['identical_logits'] else 'NO'} |"
        )
    s = summary(rows)
    lines += [
        "",
        f"- `predict` (logits): worst ratio {s['worst_predict']:.2f} ({s['worst_predict_case']}); "
        f"{s['met_predict']} of {len(rows)} cases >= {TARGET}.",
        f"- `predict+feat`: worst ratio {s['worst_feat']:.2f} ({s['worst_feat_case']}); "
        f"{s['met_feat']} of {s['n_feat']} cases >= {TARGET}.",
        f"- `rule`: worst ratio {s['worst_rule']:.2f} ({s['worst_rule_case']}); "
        f"{s['met_rule']} of {len(rows)} cases >= {TARGET}.",
        f"- logits identical to the bare loop's (predict and the rule's artefact): "
        f"{'all cases' if s['identical'] else 'NOT in every case'}.",
        "",
    ]
    return "\n".join(lines)


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def worst(key: str) -> tuple[float, str]:
        vals = [(r[key], r["case"]) for r in rows if r[key] is not None]
        return min(vals) if vals else (float("nan"), "—")

    wp, wr, wf = worst("ratio_predict"), worst("ratio_rule"), worst("ratio_predict_feat")
    feat = [r for r in rows if r["ratio_predict_feat"] is not None]
    return {
        "worst_predict": wp[0], "worst_predict_case": wp[1],
        "worst_rule": wr[0], "worst_rule_case": wr[1],
        "worst_feat": wf[0], "worst_feat_case": wf[1],
        "met_predict": sum(r["ratio_predict"] >= TARGET for r in rows),
        "met_rule": sum(r["ratio_rule"] >= TARGET for r in rows),
        "met_feat": sum(r["ratio_predict_feat"] >= TARGET for r in feat), "n_feat": len(feat),
        "identical": all(r["identical_logits"] for r in rows),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (config default: 1)")
    ap.add_argument("--batch-size", type=int, default=512, help="config default: 512")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--cases", default="", help="comma-separated substrings of case names")
    ap.add_argument("--quick", action="store_true", help="an eighth of the images (a smoke test)")
    ap.add_argument("--out", default=str(RESULTS / "inference_vs_bare"), help="path without suffix")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    dev = resolve_device(args.device)
    wanted = [w for w in args.cases.split(",") if w]
    cases = [c for c in CASES if not wanted or any(w in c.name for w in wanted)]
    info = machine() | {
        "argv": argv if argv is not None else __import__("sys").argv[1:],
        "device": str(dev), "threads": torch.get_num_threads(), "batch_size": args.batch_size,
        "repeats": args.repeats, "load_before": " ".join(f"{v:.2f}" for v in os.getloadavg()),
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="lf-infer-bench-") as tmp:
        for case in cases:
            row = run_case(case, args, dev, Path(tmp))
            rows.append(row)
            print(
                f"{row['case']:32s} n={row['n']:5d} bare {row['ms']['bare']:9.2f} ms  predict "
                f"{row['ratio_predict']:.2f}  feat {fmt_ratio(row['ratio_predict_feat'])}  rule "
                f"{row['ratio_rule']:.2f}  identical {row['identical_logits']}",
                flush=True,
            )
    info["load_after"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(render(info, rows))
    s = summary(rows)
    record = {
        "benchmark": "inference_vs_bare",
        "target": f"speed ratio bare / ours >= {TARGET} for every local architecture (issue 19 item 3)",
        "results": [
            {"what": "predict (uint8 in memory -> logits), worst case", "value": round(s["worst_predict"], 3),
             "case": s["worst_predict_case"], "met": s["worst_predict"] >= TARGET},
            {"what": "predict with the configs' features, worst case", "value": round(s["worst_feat"], 3),
             "case": s["worst_feat_case"], "met": s["worst_feat"] >= TARGET},
            {"what": "inference rule (load, read, predict, write), worst case",
             "value": round(s["worst_rule"], 3), "case": s["worst_rule_case"],
             "met": s["worst_rule"] >= TARGET},
        ],
        "machine": info, "rows": rows,
    }
    out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out.with_suffix('.md')} and .json")


if __name__ == "__main__":
    main()
