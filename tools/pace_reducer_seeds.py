"""PACE's error on one subject of a run under several seeds of its reducer.

PACE is deterministic given its features except for the reduction: FastICA starts from a random
unmixing matrix (docs/pace.md, reading R3), and the authors' script creates
``FastICA(n_components=dec_dim)`` without a random state (pace2019/pace at 09287f7,
mnist_cifar_imagenet_svhn/selection.py), so each of their runs drew its own start. This refits
PACE on the subject with the config's settings (its ``reduce_overrides`` entry included) for each
seed and writes the paper's "MSE" (here the absolute error in points, one run) per seed and budget
to ``results/pace/raw/reducer_seeds-<subject>.csv``.

    python tools/pace_reducer_seeds.py RUN_DIR CONFIG SUBJECT [--seeds 0 1 2 ...]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from threadpoolctl import threadpool_limits

from labelfree.config import validate_config
from labelfree.pace.baselines import pace_estimates
from labelfree.pace.core import fit
from labelfree.pace.run import StudyParams, load_subjects

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("config", type=Path)
    ap.add_argument("subject")
    ap.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    cfg = validate_config(yaml.safe_load(a.config.read_text()), ROOT / "config" / "schema.yaml")
    params = StudyParams.from_config(cfg["pace"], seed=int(cfg["seed"]))
    subj = {s.name: s for s in load_subjects(a.run / "results/pace/raw/subjects.npz")}.get(a.subject)
    if subj is None:
        raise SystemExit(f"{a.subject!r} is not a subject of the run in {a.run}")
    budgets = list(params.budgets)
    rows = []
    for seed in a.seeds:
        t = time.perf_counter()
        pcfg = params.pace_config(subj.n, subj.name, seed=seed)
        with threadpool_limits(a.threads):
            f = fit(subj.features[params.feature], pcfg)
        est, size = pace_estimates(f, subj.scores, budgets)
        for b, e, s in zip(budgets, est[0], size, strict=True):
            rows.append({"subject": subj.name, "seed": seed, "reducer": pcfg.reducer,
                         "dim": pcfg.dim, "reduced": f.reduced, "budget": b, "size": int(s),
                         "estimate": float(e), "truth": subj.truth,
                         "mse": 100.0 * abs(float(e) - subj.truth)})
        logging.info("%s seed %d: mean MSE %.3f (%.0f s)", subj.name, seed,
                     np.mean([r["mse"] for r in rows[-len(budgets):]]), time.perf_counter() - t)
    out = a.run / f"results/pace/raw/reducer_seeds-{subj.name}.csv"
    pd.DataFrame(rows).to_csv(out, index=False, float_format="%.6g")


if __name__ == "__main__":
    main()
