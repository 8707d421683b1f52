"""Benchmark: labelfree.inference.predict vs a bare PyTorch ``model.eval()`` loop (issue 2, Performance).

Target: ``predict`` is not slower than the bare loop by more than 10 %. All loops run in the
same process on the same images, interleaved (A, B, C, A, B, C, ...) so machine noise hits them
alike; the table reports the median over repeats. Two baselines:

- ``bare+conv``: a bare loop over the same uint8 arrays, converting each batch to float
  (``x / 255``) as any loop over stored images must: the like-for-like comparison (target).
- ``bare``: a bare loop over a ready float NCHW tensor (its conversion not timed), the strictest
  bound; for tiny models the conversion itself is a visible share of the time.

    python bench/inference_throughput.py [--repeats 7] [--threads 1] [--device cpu]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch

from labelfree.inference import predict, resolve_device
from labelfree.zoo import build_model


def bare_loop(model: torch.nn.Module, t: torch.Tensor, batch_size: int) -> torch.Tensor:
    """The baseline: eval mode, no_grad, batches sliced from a ready float tensor."""
    model.eval()
    outs = []
    with torch.no_grad():
        for s in range(0, len(t), batch_size):
            outs.append(model(t[s : s + batch_size]))
    out = torch.cat(outs)
    if out.is_cuda:
        torch.cuda.synchronize()
    return out.float().cpu()


def bare_loop_uint8(
    model: torch.nn.Module, x: np.ndarray, batch_size: int, dev: torch.device
) -> torch.Tensor:
    """Bare loop over stored uint8 images: convert each batch, then forward."""
    model.eval()
    outs = []
    with torch.no_grad():
        for s in range(0, len(x), batch_size):
            xb = torch.from_numpy(x[s : s + batch_size]).to(dev).permute(0, 3, 1, 2)
            xb = (xb.float() / 255.0).contiguous()  # NCHW, as a model expects by default
            outs.append(model(xb))
    out = torch.cat(outs)
    if out.is_cuda:
        torch.cuda.synchronize()
    return out.float().cpu()


def cases(device: torch.device) -> list[tuple[str, torch.nn.Module, np.ndarray, int]]:
    rng = np.random.default_rng(0)
    small = rng.integers(0, 256, (4096, 8, 8, 1), dtype=np.uint8)
    cifar = rng.integers(0, 256, (2048, 32, 32, 3), dtype=np.uint8)
    torch.manual_seed(0)
    out = [
        ("mlp w64 (8x8x1)", build_model("mlp", (8, 8, 1), 10, 64, 1), small, 512),
        ("lenet w8 (8x8x1)", build_model("lenet", (8, 8, 1), 10, 8, 1), small, 512),
        ("resnet w8 (8x8x1)", build_model("resnet", (8, 8, 1), 10, 8, 1), small, 512),
        ("cnn_tiny w16 (32x32x3)", build_model("cnn_tiny", (32, 32, 3), 10, 16, 1), cifar, 256),
    ]
    from torchvision.models import resnet18

    out.append(("torchvision resnet18 (32x32x3)", resnet18(num_classes=10), cifar[:512], 128))
    return [(n, m.to(device).eval(), x, bs) for n, m, x, bs in out]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="auto")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dev = resolve_device(args.device)
    print(f"device={dev} threads={args.threads} repeats={args.repeats} torch={torch.__version__}")
    print("(shared, noisy 2-core machine: compare the ratio, not the absolute times)\n")
    rows = []
    for name, model, x, bs in cases(dev):
        t = (torch.from_numpy(x).permute(0, 3, 1, 2).float() / 255.0).contiguous().to(dev)
        # warm-up, and the equivalence the tests assert (identical logits on CPU)
        ref = bare_loop(model, t, bs)
        got = predict(model, x, "scale01", bs, dev, amp=False)["logits"]
        same = (
            np.array_equal(ref.numpy(), got)
            if dev.type == "cpu"
            else np.allclose(ref.numpy(), got, atol=1e-4)
        )
        same = same and np.array_equal(bare_loop_uint8(model, x, bs, dev).numpy(), ref.numpy())
        tb, tc, tp = [], [], []
        for _ in range(args.repeats):
            s = time.perf_counter()
            bare_loop(model, t, bs)
            tb.append(time.perf_counter() - s)
            s = time.perf_counter()
            bare_loop_uint8(model, x, bs, dev)
            tc.append(time.perf_counter() - s)
            s = time.perf_counter()
            predict(model, x, "scale01", bs, dev, amp=False)
            if dev.type == "cuda":
                torch.cuda.synchronize()
            tp.append(time.perf_counter() - s)
        b, c, p = statistics.median(tb), statistics.median(tc), statistics.median(tp)
        rows.append((name, len(x), bs, b * 1e3, c * 1e3, p * 1e3, p / c, p / b, same))
    head = (
        f"{'model':32s} {'images':>6s} {'batch':>5s} {'bare ms':>8s} {'bare+conv':>9s} "
        f"{'predict':>8s} {'/bare+conv':>10s} {'/bare':>6s} identical"
    )
    print(head)
    print("-" * len(head))
    for name, n, bs, b, c, p, rc, rb, same in rows:
        print(f"{name:32s} {n:6d} {bs:5d} {b:8.1f} {c:9.1f} {p:8.1f} {rc:10.3f} {rb:6.3f} {same}")
    worst = max(r[6] for r in rows)
    print(
        f"\nworst ratio predict / bare+conv = {worst:.3f} (target <= 1.10): "
        f"{'OK' if worst <= 1.10 else 'SLOWER'}; worst vs bare = {max(r[7] for r in rows):.3f}"
    )


if __name__ == "__main__":
    main()
