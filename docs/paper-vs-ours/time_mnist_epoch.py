"""Time one training epoch and one 10,000-image inference pass of each MNIST zoo architecture.

Used to size config/paper/*-mnist-reduced.yaml (docs/paper-vs-ours/README.md). Reads the real
MNIST from a folder (read only), trains on a slice of the training set with one torch thread and
scales the time to a full 60,000-image epoch. Run nice'd on a shared machine:

    PYTHONPATH=src nice python docs/paper-vs-ours/time_mnist_epoch.py ../shared/data/mnist
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch

from labelfree.data.formats import read_idx
from labelfree.inference import predict
from labelfree.zoo.batched import (
    BatchedCNNSpec,
    BatchedMLPSpec,
    train_batched_cnn,
    train_batched_mlp,
)
from labelfree.zoo.train import TrainSpec, train_model

SLICE = 6000  # images trained on per measurement; times are scaled to 60,000


def main(folder: str) -> None:
    torch.set_num_threads(1)
    f = Path(folder)
    x = read_idx(f / "train-images-idx3-ubyte.gz")[:SLICE, :, :, None]
    y = read_idx(f / "train-labels-idx1-ubyte.gz")[:SLICE].astype(np.int64)
    xt = read_idx(f / "t10k-images-idx3-ubyte.gz")[:, :, :, None]
    scale = 60000 / SLICE
    specs = {
        "lenet w6 d1 adam (laf)": TrainSpec(arch="lenet", width=6, epochs=1),
        "lenet w16 d1 adam (laf)": TrainSpec(arch="lenet", width=16, epochs=1),
        "mlp w128 d1 (laf)": TrainSpec(arch="mlp", width=128, depth=1, epochs=1),
        "mlp w512 d2 (laf)": TrainSpec(arch="mlp", width=512, depth=2, epochs=1),
        "resnet w8 (laf)": TrainSpec(arch="resnet", width=8, epochs=1),
        "resnet w16 (laf)": TrainSpec(arch="resnet", width=16, epochs=1),
        "cnn_tiny w16 (laf)": TrainSpec(arch="cnn_tiny", width=16, epochs=1),
        "cnn_tiny w32 (laf)": TrainSpec(arch="cnn_tiny", width=32, epochs=1),
        "lenet1 w4 d0 (pace)": TrainSpec(arch="lenet", width=4, depth=0, epochs=1),
        "lenet4 w4 d1 (pace)": TrainSpec(arch="lenet", width=4, depth=1, epochs=1),
        "lenet5 w8 d2 (pace)": TrainSpec(arch="lenet", width=8, depth=2, epochs=1),
    }
    print(f"torch {torch.__version__}, 1 thread; epoch = 60,000 images (scaled from {SLICE})")
    print("| model | s / epoch | s / 10k inference |")
    print("|---|---|---|")
    for name, spec in specs.items():
        t0 = time.perf_counter()
        res = train_model(spec, x, y, num_classes=10)
        t_train = (time.perf_counter() - t0) * scale
        t0 = time.perf_counter()
        predict(res.model, xt, device="cpu", amp=False)
        t_inf = time.perf_counter() - t0
        print(f"| {name} | {t_train:.1f} | {t_inf:.1f} |", flush=True)
    # alpha-trimming: batched binary (even / odd) zoos, per model and epoch
    yb = (y % 2 == 0).astype(np.int64)
    xf = x.reshape(len(x), -1).astype(np.float32) / 255.0
    xtf = xt[:2000].reshape(2000, -1).astype(np.float32) / 255.0
    for k in (16, 64):
        t0 = time.perf_counter()
        train_batched_mlp(xf, yb, list(range(k)), list(range(100, 100 + k)),
                          BatchedMLPSpec(hidden=(32, 16), epochs=1), {"t": (xtf, None)},
                          num_classes=2)  # fmt: skip
        dt = (time.perf_counter() - t0) * scale / k
        print(f"| alphatrim mlp 784-32-16-2, {k} models batched | {dt:.2f} per model | |")
    k = 4
    xi = x[:600].astype(np.float32) / 255.0
    t0 = time.perf_counter()
    train_batched_cnn(xi, yb[:600], list(range(k)), list(range(100, 100 + k)),
                      BatchedCNNSpec(epochs=1), {"t": (xt[:500].astype(np.float32) / 255, None)},
                      num_classes=2)  # fmt: skip
    dt = (time.perf_counter() - t0) * 60000 / 600 / k
    print(f"| alphatrim cnn conv32-16 dense64, {k} models batched | {dt:.1f} per model | |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/data/mnist")
