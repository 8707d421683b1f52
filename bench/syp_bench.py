"""Benchmarks of the `syp` study (run by hand: ``python bench/syp_bench.py``).

1. Indicator extraction (spec 2.2-2.3): the library's vectorised per-set computation vs a
   per-sample Python loop (scipy.stats.entropy + scipy.ndimage.laplace per image), same inputs,
   same results (checked), on M meta-sets of N digits-sized images.
2. Oracle training (spec 2.8) with the shapes and settings of a workflow config (default
   config/config.yaml: M = 60 meta-sets of 449 rows, 14 passes = 840 iterations, one whole
   meta-set per batch, every oracle variant of Tables 1-5, every seed): one classifier's oracles
   one at a time through the plain loop vs the library's stacks, interleaved, wall and CPU seconds.

Options: ``--config PATH --rows N --threads T --skip-indicators --skip-oracle --passes P`` (P passes instead of the
config's, Figure 10's iteration grid scaled alike, for a shorter run).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.stats
import torch
from scipy import ndimage

from labelfree.numerics import entropy, softmax
from labelfree.syp import oracle as orc
from labelfree.syp import plan as ex
from labelfree.syp.indicators import image_indicators
from labelfree.syp.normalise import fit_normaliser
from labelfree.syp.run import IndicatorTable, run_variants, variant_from_config


def loop_indicators(probs: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Baseline: one sample at a time (what the reference code does per image)."""
    rows = []
    for p, img in zip(probs, x, strict=True):
        h = scipy.stats.entropy(p)
        flat = img.astype(np.float64).ravel()
        v = flat / 256.0
        gray = img.astype(np.float64).mean(axis=2)
        lap = ndimage.laplace(gray, mode="mirror")
        rows.append((h, flat.std(), np.mean(-v * np.log(v + 1e-6)), lap.var()))
    return np.array(rows)


def vector_indicators(probs: np.ndarray, x: np.ndarray) -> np.ndarray:
    img = image_indicators(x, "clean")
    return np.column_stack([entropy(probs), img])


def bench_indicators(m: int, n: int) -> None:
    g = np.random.default_rng(0)
    sets = [
        (softmax(g.normal(size=(n, 10)) * 3), g.integers(0, 256, (n, 16, 16, 1)).astype(np.uint8))
        for _ in range(m)
    ]
    t0 = time.perf_counter()
    vec = [vector_indicators(p, x) for p, x in sets]
    t_vec = time.perf_counter() - t0
    t0 = time.perf_counter()
    loop = [loop_indicators(p, x) for p, x in sets]
    t_loop = time.perf_counter() - t0
    for a, b in zip(vec, loop, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    print(f"\nIndicator extraction, {m} sets x {n} images of 16x16 (results identical):")
    print("| method | seconds | images/s | speed-up |")
    print("|---|---|---|---|")
    print(f"| per-sample loop (baseline) | {t_loop:.3f} | {m * n / t_loop:,.0f} | 1.0x |")
    print(
        f"| vectorised (labelfree.syp) | {t_vec:.3f} | {m * n / t_vec:,.0f} | {t_loop / t_vec:.1f}x |"
    )


def default_syp_config(path: str = "config/config.yaml") -> dict:
    """The validated `syp` section of a workflow config (schema defaults filled in)."""
    from pathlib import Path

    import yaml

    from labelfree.config import validate_config

    cfg = validate_config(yaml.safe_load(Path(path).read_text()), "config/schema.yaml")
    return cfg["syp"]


def plain_training(x, c, g, cfg, seed: int):
    """Baseline: one oracle at a time, the plain recipe of reading R7 (the nn.Module oracle,
    weighted_mse, torch.optim.SGD, polynomial decay), as the library trained before the stacks."""
    n_sets = int(g.max()) + 1
    torch.manual_seed(seed)
    model = orc.build_oracle(cfg.arch, x.shape[1], cfg.expand, cfg.dropout, cfg.ora_a_init)
    named = list(model.named_parameters())
    decay = [p for n, p in named if cfg.decay_bias or not n.endswith("bias")]
    rest = [p for n, p in named if not cfg.decay_bias and n.endswith("bias")]
    opt = torch.optim.SGD(
        [
            {"params": decay, "weight_decay": cfg.weight_decay},
            {"params": rest, "weight_decay": 0.0},
        ],
        lr=cfg.base_lr,
        momentum=cfg.momentum,
    )
    bounds = np.searchsorted(g, np.arange(n_sets + 1))
    xt, ct = torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(c, dtype=torch.float32)
    iters = int(round(cfg.passes * n_sets))
    model.train()
    for i in range(iters):
        for pg in opt.param_groups:
            pg["lr"] = orc.poly_lr(cfg.base_lr, i, iters, cfg.poly_power)
        lo, hi = bounds[i % n_sets], bounds[i % n_sets + 1]
        loss = orc.weighted_mse(
            model(xt[lo:hi]), ct[lo:hi], cfg.loss_adjust, cfg.low_acc_threshold, cfg.pos_weight
        )
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return model.eval()


def synthetic_table(m: int, n: int, n_val: int, seed: int = 1) -> IndicatorTable:
    """An indicator table of the default run's shapes: m meta-sets and n_val validation sets of n
    rows, six indicators whose first one carries the correctness signal, accuracies 25-95 %."""
    g = np.random.default_rng(seed)
    sets = m + n_val
    x = g.random((sets * n, 6))
    acc = np.linspace(0.25, 0.95, sets)[g.permutation(sets)]
    c = (x[:, 0] < np.repeat(acc, n)).astype(np.float64)
    return IndicatorTable(
        x=x,
        correct=c,
        set_id=np.repeat(np.arange(sets), n),
        sets=[f"s{k}" for k in range(sets)],
        kinds=["meta"] * m + ["val"] * n_val,
        acc=100 * acc,
        scores={},
    )


def bench_oracle(cfg: dict, n: int, threads: int, passes: float | None) -> None:
    """Every oracle variant of ``cfg`` for the configuration's seeds on one classifier's rows
    (random, the real shapes): one run at a time through the plain loop vs the library's stacks
    (labelfree.syp.run.run_variants), interleaved, with the largest score difference."""
    torch.set_num_threads(threads)
    if passes is not None:
        cfg = {**cfg, "oracle": {**cfg["oracle"], "passes": passes}}
        cfg["tables"] = {
            **cfg["tables"],
            "fig10_passes": [
                p * passes / float(cfg["oracle"]["passes"])
                for p in cfg["tables"].get("fig10_passes", [])
            ],
        }
    m = int(cfg["meta_sets"]["count"])
    seeds = list(range(len(cfg["seeds"])))
    table = synthetic_table(m, n, 40)
    variants = [
        variant_from_config(k, v, cfg["oracle"]) for k, v in ex.variant_overrides(cfg).items()
    ]
    n_meta_rows = m * n
    g_tr, c_tr = table.set_id[:n_meta_rows], table.correct[:n_meta_rows]

    def plain() -> dict:
        out = {}
        for v in variants:
            cols = [ex.COLUMNS.index(c) for c in v.columns]
            norm = fit_normaliser(
                table.x[:n_meta_rows, cols], v.columns, v.norm_train_scope, v.normalise
            )
            x_tr = norm.transform_train(table.x[:n_meta_rows, cols], g_tr)
            x_ev = np.concatenate(
                [norm.transform_eval(table.x[table.rows(k), cols]) for k in range(len(table.sets))]
            )
            for s in seeds:
                out[(v.name, s)] = orc.predict_scores(
                    plain_training(x_tr, c_tr, g_tr, v.oracle, s), x_ev
                )
        return out

    def stacked() -> dict:
        res = run_variants(table, variants, seeds, threads)
        return {
            (v.name, j): np.concatenate([res[v.name].q[j][nm] for nm in table.sets])
            for v in variants
            for j in range(len(seeds))
        }

    times: dict[str, list[tuple[float, float]]] = {"plain": [], "stacked": []}
    outs = {}
    for _ in range(2):  # interleaved: plain, stacked, plain, stacked
        for name, fn in (("plain", plain), ("stacked", stacked)):
            w0, c0 = time.perf_counter(), time.process_time()
            outs[name] = fn()
            times[name].append((time.perf_counter() - w0, time.process_time() - c0))
    diff = max(float(np.abs(outs["plain"][k] - outs["stacked"][k]).max()) for k in outs["plain"])
    iters = int(round(float(cfg["oracle"]["passes"]) * m))
    print(
        f"\nOracle training of one classifier: {len(variants)} variants x {len(seeds)} seeds, "
        f"{m} meta-sets x {n} rows, {iters} iterations (batch = one whole meta-set), {threads} "
        f"thread(s), two interleaved rounds; largest score difference {diff:.1e}:"
    )
    print("| training | wall s (rounds) | CPU s (rounds) | CPU ratio |")
    print("|---|---|---|---|")
    cpu_plain = min(t[1] for t in times["plain"])
    for name, ts in times.items():
        walls = ", ".join(f"{w:.1f}" for w, _ in ts)
        cpus = ", ".join(f"{c:.1f}" for _, c in ts)
        ratio = cpu_plain / min(t[1] for t in ts)
        print(f"| {name} | {walls} | {cpus} | {ratio:.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="config/config.yaml", help="workflow config to time")
    ap.add_argument("--rows", type=int, default=449, help="rows per meta-set (source split size)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--skip-oracle", action="store_true")
    ap.add_argument("--skip-indicators", action="store_true")
    ap.add_argument(
        "--passes", type=float, default=None, help="passes instead of the config's (scaled grid)"
    )
    args = ap.parse_args()
    cfg = default_syp_config(args.config)
    if not args.skip_indicators:
        bench_indicators(int(cfg["meta_sets"]["count"]), args.rows)
    if not args.skip_oracle:
        bench_oracle(cfg, args.rows, args.threads, args.passes)


if __name__ == "__main__":
    main()
