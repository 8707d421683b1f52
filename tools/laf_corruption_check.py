"""Are our MNIST-C images the LaF authors'? Brightness and contrast, the two deterministic
corruptions on which LaF loses most, recomputed from a run's clean test set with the formulas of
the authors' generator (github.com/testing-cs/LaF-model-selection at 028011f, ``gene_mnist.py``:
``brightness`` clips x/255 + c, ``contrast`` scales x/255 about the image mean by c; both times
255, stored into a uint8 array, i.e. truncated) and compared pixel by pixel with the run's
corrupted sets (``results/testsets/<dataset>/<corruption>-<severity>.npz``).

    python tools/laf_corruption_check.py --run /tmp/run [--dataset laf_mnist]

Prints one markdown table: per set, the share of pixels equal and the largest difference.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

#: gene_mnist.py's parameters per severity 1..5.
BRIGHTNESS = (0.1, 0.2, 0.3, 0.4, 0.5)
CONTRAST = (0.4, 0.3, 0.2, 0.1, 0.05)


def authors_like(x: np.ndarray, name: str, severity: int) -> np.ndarray:
    """The corrupted images (N, 28, 28) uint8 as gene_mnist.py computes and stores them."""
    x = x.astype(np.float64) / 255.0
    if name == "brightness":
        out = np.clip(x + BRIGHTNESS[severity - 1], 0, 1)
    else:
        mean = x.mean(axis=(1, 2), keepdims=True)
        out = np.clip((x - mean) * CONTRAST[severity - 1] + mean, 0, 1)
    return (out * 255).astype(np.uint8)  # numpy's float -> uint8 store truncates


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True)
    ap.add_argument("--dataset", default="laf_mnist")
    a = ap.parse_args(argv)
    tdir = Path(a.run) / "results" / "testsets" / a.dataset
    clean = np.load(tdir / "id.npz")["x"][..., 0]
    rows = []
    for name in ("brightness", "contrast"):
        for f in sorted(tdir.glob(f"{name}-[1-5].npz")):
            sev = int(f.stem.rsplit("-", 1)[1])
            ours = np.load(f)["x"][..., 0].astype(np.int64)
            ref = authors_like(clean, name, sev).astype(np.int64)
            diff = np.abs(ours - ref)
            rows.append({"set": f.stem, "images": len(ours),
                         "pixels equal (%)": 100 * float((diff == 0).mean()),
                         "pixels differing": int((diff > 0).sum()),
                         "largest difference (grey levels)": int(diff.max())})
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".4f"))


if __name__ == "__main__":
    main()
