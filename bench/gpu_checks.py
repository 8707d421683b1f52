"""GPU checks for issues 16 and 22, one short run on a lent GPU machine (a few minutes):

    PYTHONPATH=src python bench/gpu_checks.py --out DIR [--device cuda] [--tiny]

Writes into DIR (small files only):

- ``env.json`` (issue 22, c): python, torch, CUDA, cuDNN versions, GPU name, CPU model and
  whether ``/proc/cpuinfo`` lists ``avx512f``; on a CPU without it, the issue-22 minimal repro
  (``build_model("resnet", (8, 8, 1), 10, width=4)``, input ``torch.randn(64, 8, 8, 1)
  .permute(0, 3, 1, 2)``, twenty Adam steps on the CPU) run WITHOUT the fix and WITH it
  (``.clone(memory_format=torch.contiguous_format)``), each in its own subprocess, with its exit
  code and signal (``--repro22 always`` runs it on any CPU).
- ``alphatrim_determinism.json`` (issue 16, a): the batched CNN zoo of
  config/paper/alphatrim-cifar10.yaml (conv 32-16, dense 64, batch 32, SGD momentum 0.9,
  lr 0.001, 16 models per block) on synthetic CIFAR-shaped binary data, cut to seconds; per seed
  block trained twice in one process, and whether final weights and logits are bit-identical.
  Once with ``labelfree.zoo.batched.deterministic_cuda`` (as the study trains) and once in a
  fresh process with it replaced by a no-op and ``CUBLAS_WORKSPACE_CONFIG`` unset (torch
  defaults), to show whether the settings matter.
- ``syp_autocast.json`` / ``syp_autocast.md`` (issue 16, b): the SYP study of config/config.yaml
  (digits, its two classifiers, its meta-sets and validation sets) built in-process from the
  library; inference on ``--device`` with autocast off and on (features stored float32 both
  times, as ``labelfree.syp.plan.feature_dtype`` stores a syp zoo's); indicators, baseline predictions and
  the four oracles of Table 1 (ORA-A, ORA-B and the loss-adjusted pair of the ensemble row) are
  recomputed from each, and every Table 1 cell and indicator array is compared. The oracles train
  on the CPU with the same seeds, so what moves, moves by autocast alone.
- ``summary.md``: one line per check.

Each part runs in its own subprocess with a timeout, so one failing part is recorded (exit code,
last lines of stderr) and the others still run. Imports neither hdbscan nor snakemake.
``--device cpu --tiny`` is the local dry run (autocast is a no-op on the CPU: nothing may move).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]

# issue 22's minimal repro; {fix} is "" or the clone that fixes it
REPRO22 = """
import torch
from labelfree.zoo.arch import build_model
torch.manual_seed(0)
m = build_model("resnet", (8, 8, 1), 10, width=4)
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
x = torch.randn(64, 8, 8, 1).permute(0, 3, 1, 2){fix}
y = torch.randint(0, 10, (64,))
for _ in range(20):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(m(x), y).backward()
    opt.step()
print("strides", tuple(x.stride()), "ok")
"""
FIX22 = ".clone(memory_format=torch.contiguous_format)"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO / "src"), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _signal_name(rc: int) -> str | None:
    if rc >= 0:
        return None
    with contextlib.suppress(ValueError):
        return signal.Signals(-rc).name
    return f"signal {-rc}"


def run_sub(args: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a subprocess; its return code, signal, seconds and the tails of its output."""
    t0 = time.perf_counter()
    # own process group: on timeout its children (the syp process pool) are killed with it
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env or _env(), cwd=REPO, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        rc, err = None, f"{err}\ntimed out after {timeout:.0f} s"
    return {"returncode": rc, "signal": None if rc is None else _signal_name(rc),
            "seconds": round(time.perf_counter() - t0, 2), "stdout_tail": out[-1500:],
            "stderr_tail": err[-3000:]}


# ---------------------------------------------------------------------------------------------
# (c) environment and issue 22
# ---------------------------------------------------------------------------------------------


def cpu_info() -> dict[str, Any]:
    model, flags = platform.processor() or platform.machine(), set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, val = line.partition(":")
            if key.strip() == "model name" and model in ("", "x86_64", platform.machine()):
                model = val.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(val.split())
    return {"cpu_model": model, "cpu_count": os.cpu_count(), "avx512f": "avx512f" in flags,
            "avx2": "avx2" in flags,
            "avx512_flags": sorted(f for f in flags if f.startswith("avx512"))}


def env_info(device: str) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "python": sys.version.split()[0], "numpy": np.__version__, "torch": torch.__version__,
        "torch_cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available(),
        "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
        "mkldnn_enabled": torch.backends.mkldnn.enabled, "platform": platform.platform(),
        "cudnn_allow_tf32": torch.backends.cudnn.allow_tf32,
        "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "device_requested": device, **cpu_info(),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_capability"] = list(torch.cuda.get_device_capability(0))
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = ""
    info["commit"] = commit or None
    return info


def repro22() -> dict[str, Any]:
    out = {}
    for name, fix in (("without_fix", ""), ("with_fix", FIX22)):
        out[name] = run_sub([sys.executable, "-c", REPRO22.format(fix=fix)], timeout=40)
    return out


# ---------------------------------------------------------------------------------------------
# (a) alpha-trimming batched zoo on CUDA: bit-identical reruns per seed
# ---------------------------------------------------------------------------------------------


def _digest(arrays: list[np.ndarray]) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def alphatrim_worker(device: str, deterministic: bool, tiny: bool) -> dict[str, Any]:
    """Train each seed block twice (same process) and compare weights and logits bit for bit."""
    import torch

    from labelfree.zoo import batched

    if not deterministic:  # torch defaults: no deterministic algorithms, no cuBLAS setting
        batched.deterministic_cuda = contextlib.nullcontext
    # config/paper/alphatrim-cifar10.yaml's recipe, cut to seconds (fewer images and epochs)
    n, n_eval, epochs, k = (128, 64, 1, 4) if tiny else (2048, 1024, 2, 16)
    spec = batched.BatchedCNNSpec(conv=(32, 16), hidden=(64,), epochs=epochs, batch_size=32,
                                  lr=0.001, momentum=0.9)
    gen = np.random.default_rng(0)
    y = gen.integers(0, 2, n + n_eval)
    x = (gen.standard_normal((n + n_eval, 32, 32, 3)) * 0.5
         + (y[:, None, None, None] - 0.5) * gen.standard_normal((1, 32, 32, 3))).astype(np.float32)
    evals = {"test": (x[n:], y[n:])}
    seeds = [0, 1, 2] if tiny else [0, 1, 2, 3]
    rows = []
    for seed in seeds:
        ids = [seed * 1000 + j for j in range(k)]
        runs = []
        try:
            for _ in range(2):
                z = batched.train_batched_cnn(x[:n], y[:n], ids, ids, spec, evals,
                                              num_classes=2, model_block=16, device=device,
                                              keep_weights=True)
                runs.append(z)
        except Exception as exc:  # e.g. an op without a deterministic CUDA kernel
            rows.append({"seed": seed, "error": f"{type(exc).__name__}: {exc}"[:2000]})
            continue
        a, b = runs
        rows.append({
            "seed": seed, "models": k,
            "weights_identical": all(np.array_equal(p, q)
                                     for p, q in zip(a.weights, b.weights, strict=True)),
            "logits_identical": bool(np.array_equal(a.logits["test"], b.logits["test"])),
            "weights_max_abs_diff": max(float(np.max(np.abs(p - q)))
                                        for p, q in zip(a.weights, b.weights, strict=True)),
            "logits_max_abs_diff": float(np.max(np.abs(a.logits["test"] - b.logits["test"]))),
            "weights_digest": [_digest(a.weights), _digest(b.weights)],
            "test_accuracy_mean": float((a.logits["test"].argmax(-1) == y[n:]).mean()),
            "seconds": [round(a.seconds, 3), round(b.seconds, 3)],
        })
    return {
        "deterministic_settings": deterministic, "device": device,
        "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        "deterministic_algorithms_after": torch.are_deterministic_algorithms_enabled(),
        "cudnn_benchmark_after": torch.backends.cudnn.benchmark,
        "sizes": {"n_train": n, "n_eval": n_eval, "epochs": epochs, "models_per_seed": k,
                  "spec": str(spec), "input": "synthetic 32x32x3, 2 classes"},
        "seeds": rows,
        "all_identical": bool(rows) and all(r.get("weights_identical") and r.get("logits_identical")
                                            for r in rows),
    }


# ---------------------------------------------------------------------------------------------
# (b) SYP: autocast on vs off on the GPU
# ---------------------------------------------------------------------------------------------


#: the oracle variants Table 1 needs: ORA-A, ORA-B and the loss-adjusted pair of the ensemble row
TABLE1_VARIANTS = ("ora_a", "ora_b", "ora_a_adj", "ora_b_adj")


def _syp_table(args: tuple) -> tuple:
    """Pool job: spec 2.10 steps 1-2 (indicator table, baseline predictions) of one inference."""
    key, train_f, id_probs, id_y, sets, atc_form, train_rot, seed = args
    from labelfree.syp.run import baseline_predictions, build_indicator_table

    table = build_indicator_table(train_f, id_probs, id_y, sets, atc_form, train_rot, seed=seed)
    return key, table, {m: p for m, (p, _) in baseline_predictions(table).items()}


def _syp_oracle(args: tuple) -> tuple:
    """Pool job: one oracle variant, every seed, one thread (spec 2.10 steps 3-5)."""
    key, table, syp, variant, torch_seeds = args
    from labelfree.syp import run as ex
    from labelfree.syp.run import run_variant

    return key, run_variant(table, ex.build_variant(syp, variant), torch_seeds, threads=1).q


def _moved(ta: Any, tb: Any) -> list[dict[str, Any]]:
    """Every RMSE cell of two Table-1 frames (same rows) that differs, with both values."""
    out = []
    for col in [c for c in ta.columns if c.startswith("rmse")]:
        for i in range(len(ta)):
            va, vb = float(ta.at[i, col]), float(tb.at[i, col])
            if not (va == vb or (np.isnan(va) and np.isnan(vb))):
                out.append({"model": ta.at[i, "model"], "method": ta.at[i, "method"],
                            "column": col, "autocast_off": va, "autocast_on": vb,
                            "moves_at_2_decimals": f"{va:.2f}" != f"{vb:.2f}"})
    return out


def _baseline_table1(results: list, groups: dict[str, str]) -> Any:
    """Table 1's baseline rows (no oracle), as experiment.table1 computes them: RMSE (pp) of
    each baseline's predicted accuracy over the validation sets, per group and overall."""
    import pandas as pd

    from labelfree.syp import report as ex
    from labelfree.syp.aggregate import rmse

    rows = []
    for r in results:
        val = r.val_sets()
        true = r.true_acc(val)
        idx = {s: i for i, s in enumerate(r.table.sets)}
        g = np.array([groups[n] for n in val])
        for method in ex.BASELINE_ORDER:
            if method not in r.baselines:
                continue
            pred = r.baselines[method][[idx[n] for n in val]]
            row = {"model": r.model, "method": method}
            for grp in ("clean", "corrupted", "natural", "overall"):
                sel = np.ones(len(val), bool) if grp == "overall" else g == grp
                row[f"rmse_{grp}"] = float(rmse(true[sel], pred[sel])) if sel.any() else np.nan
            rows.append(row)
    return pd.DataFrame(rows)


def md_table(rows: list[dict[str, Any]], floatfmt: str) -> str:
    """A markdown table of ``rows`` (no tabulate: the GPU machine may lack it)."""
    cols = list(dict.fromkeys(k for r in rows for k in r))

    def cell(v: Any) -> str:
        return format(v, floatfmt) if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


#: config/config.yaml validated against config/schema.yaml (defaults filled), written by
#: ``--write-config`` where jsonschema is installed; used where it is not (the GPU machine).
CONFIG_SNAPSHOT = REPO / "bench" / "gpu_checks_config.json"


def syp_config() -> tuple[dict[str, Any], str]:
    """The validated default config and where it came from (the validator or the snapshot)."""
    import yaml

    try:
        from labelfree.config import validate_config

        cfg = validate_config(yaml.safe_load((REPO / "config/config.yaml").read_text()),
                              REPO / "config/schema.yaml")
        return cfg, "config/config.yaml validated"
    except ImportError as exc:  # jsonschema missing
        snap = json.loads(CONFIG_SNAPSHOT.read_text())
        return snap["config"], (f"{CONFIG_SNAPSHOT.name} (written at commit {snap['commit']}; "
                                f"validator unavailable: {exc})")


def syp_worker(device: str, tiny: bool, work: Path, save: Any,
               meta_sets: int | None = None) -> dict[str, Any]:
    """Build the SYP study of config/config.yaml in-process; compare autocast off / on.

    ``save(result)`` is called after each stage (inference, baselines, oracles), so a part cut
    by its timeout still leaves what it had measured."""
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    import torch

    from labelfree.data.registry import prepare_dataset
    from labelfree.inference import predict
    from labelfree.numerics import softmax
    from labelfree.seeds import derive_seed
    from labelfree.store import read_image_set
    from labelfree.syp import report as ex
    from labelfree.syp.indicators import image_indicators
    from labelfree.syp.plan import REF, rot_name
    from labelfree.syp.run import SetInputs, source_rows, write_testsets
    from labelfree.zoo.sheet import build_sheet
    from labelfree.zoo.train import TrainSpec, train_model, validation_split

    t0 = time.perf_counter()
    cfg, cfg_source = syp_config()
    seed, syp = int(cfg["seed"]), cfg["syp"]
    zoo = syp.get("zoo", "syp")
    zcfg = cfg["zoos"][zoo]
    ds = zcfg["dataset"]
    if tiny:
        syp["meta_sets"]["count"] = 6
        syp["oracle"]["passes"] = 2
    if meta_sets:  # fewer meta-sets (and oracle iterations = passes x meta-sets) when short of time
        syp["meta_sets"]["count"] = int(meta_sets)
    data_dir, sets_dir = work / "data" / ds, work / "testsets"
    prepare_dataset(ds, cfg["datasets"][ds], seed, data_dir)
    write_testsets(str(data_dir / "train.npz"), str(data_dir / "source.npz"),
                   str(data_dir / "holdout.npz") if (data_dir / "holdout.npz").exists() else None,
                   str(sets_dir), str(work / "testsets.json"), syp, seed)
    info = json.loads((work / "testsets.json").read_text())
    kinds = {**{n: "meta" for n in info["meta"]}, **{n: "val" for n in info["val"]}}
    groups = {n: rec["group"] for n, rec in info["val"].items()}
    rows = build_sheet(zoo, zcfg).to_dict("records")
    if tiny:
        rows = [{**r, "epochs": 1} for r in rows]
    # as labelfree.zoo.local.train_local_zoo trains them, kept in memory (no safetensors)
    data = read_image_set(data_dir / "train.npz")
    tr, va = validation_split(data.y, float(zcfg["val_fraction"]), derive_seed(seed, zoo, "val"))
    models = [train_model(TrainSpec.from_row(r), data.x[tr], data.y[tr], data.x[va], data.y[va],
                          num_classes=int(data.y.max()) + 1, device="cpu").model for r in rows]
    images = {p.stem: read_image_set(p) for p in sorted(sets_dir.glob("*.npz"))}
    images["id"] = read_image_set(data_dir / "source.npz")  # the id set = the test split copy
    batch = int(cfg["inference"]["batch_size"])
    rot = bool(syp["rotation"])
    img_ind = {n: image_indicators(images[n].x, syp["blur_form"], syp["image_form"]) for n in kinds}
    id_y = images["id"].y
    keep = source_rows(syp, id_y, seed)
    out: dict[str, Any] = {
        "device": device, "config": cfg_source, "models": [r["model"] for r in rows],
        "sets": {"meta": len(info["meta"]), "val": len(info["val"])},
        "oracle_seeds": list(syp["seeds"]), "oracle_passes": syp["oracle"]["passes"],
        "variants": list(TABLE1_VARIANTS), "inference_batch_size": batch,
        "feature_dtype": "float32", "stage": "built", "per_model": {},
        "seconds": {"build": round(time.perf_counter() - t0, 1)},
    }
    save(out)
    # stage 1: inference on the device, autocast off and on (the models stay the same)
    t1, infer_s, jobs = time.perf_counter(), {False: 0.0, True: 0.0}, []
    for row, model in zip(rows, models, strict=True):
        prep = TrainSpec.from_row(row).preprocessing
        res_by_amp = {}
        for amp in (False, True):
            ti = time.perf_counter()
            res = {n: predict(model, im.x, prep, batch, device, ["penultimate"], amp=amp,
                              feature_dtype=torch.float32) for n, im in images.items()}
            if device.startswith("cuda"):
                torch.cuda.synchronize()
            infer_s[amp] += time.perf_counter() - ti
            res_by_amp[amp] = res

            def f(name: str, res: dict = res) -> np.ndarray:
                return res[name]["penultimate"].reshape(len(res[name]["logits"]), -1)

            sets = {n: (kind, SetInputs(softmax(res[n]["logits"]), f(n), images[n].y, img_ind[n],
                                        f(rot_name(n)) if rot else None))
                    for n, kind in kinds.items()}
            jobs.append(((row["model"], amp), f(REF), softmax(res["id"]["logits"])[keep],
                         id_y[keep], sets, syp["atc_form"], f(rot_name(REF)) if rot else None,
                         seed))
        a, b = res_by_amp[False], res_by_amp[True]
        out["per_model"][row["model"]] = {
            "images": int(sum(len(im.y) for im in images.values())),
            "logits_max_abs_diff": max(float(np.max(np.abs(a[n]["logits"] - b[n]["logits"])))
                                       for n in a),
            "features_max_abs_diff": max(
                float(np.max(np.abs(a[n]["penultimate"] - b[n]["penultimate"]))) for n in a),
            "argmax_flips": sum(int((a[n]["logits"].argmax(1) != b[n]["logits"].argmax(1)).sum())
                                for n in a),
        }
    out["seconds"].update(inference_off=round(infer_s[False], 2),
                          inference_on=round(infer_s[True], 2))
    out["stage"] = "inference"
    save(out)
    # stage 2: indicator tables and baselines (CPU, one process per model and autocast setting)
    workers = max(1, min(os.cpu_count() or 1, 16))
    ctx = mp.get_context("spawn")  # the parent holds a CUDA context: no fork
    results: dict[tuple[str, bool], Any] = {}
    with ProcessPoolExecutor(min(workers, len(jobs)), mp_context=ctx) as pool:
        tables = {key: (table, base) for key, table, base in pool.map(_syp_table, jobs)}
        for m in out["models"]:
            ta, tb = tables[(m, False)][0], tables[(m, True)][0]
            out["per_model"][m]["indicator_max_abs_diff"] = {
                "x (six indicators)": float(np.max(np.abs(ta.x - tb.x))),
                "set accuracy (pp)": float(np.max(np.abs(ta.acc - tb.acc))),
                **{f"score {k}": float(np.max(np.abs(ta.scores[k] - tb.scores[k])))
                   for k in ta.scores}}
        base = {amp: _baseline_table1([ex.ModelResults(m, *tables[(m, amp)], {})
                                       for m in out["models"]], groups) for amp in (False, True)}
        out["table1_baseline_moved"] = _moved(base[False], base[True])
        out["table1_baseline_cells"] = int(base[False].filter(like="rmse").size)
        out["seconds"]["indicators"] = round(time.perf_counter() - t1 - sum(infer_s.values()), 1)
        out["stage"] = "baselines"
        save(out)
        # stage 3: the four oracles of Table 1, every seed, on the CPU (same seeds both times)
        t3 = time.perf_counter()
        ojobs = [((m, amp, v), tables[(m, amp)][0], syp, v,
                  [derive_seed(seed, "syp-oracle", m, s) for s in syp["seeds"]])
                 for m in out["models"] for amp in (False, True) for v in TABLE1_VARIANTS]
        q: dict[tuple[str, bool], dict[str, Any]] = {}
        for (m, amp, v), qs in pool.map(_syp_oracle, ojobs):
            q.setdefault((m, amp), {})[v] = qs
    for m in out["models"]:
        for amp in (False, True):
            results[(m, amp)] = ex.ModelResults(m, *tables[(m, amp)], q[(m, amp)])
    t1a, t1b = (ex.table1([results[(m, amp)] for m in out["models"]], syp["aggregate"], groups)
                for amp in (False, True))
    moved = _moved(t1a, t1b)
    out.update({
        "stage": "oracles",
        "table1_cells": int(t1a.filter(like="rmse").size),
        "table1_moved": moved,
        "table1_moved_at_2_decimals": sum(r["moves_at_2_decimals"] for r in moved),
        "table1_autocast_off": json.loads(t1a.to_json(orient="records")),
    })
    out["seconds"].update(oracles=round(time.perf_counter() - t3, 1),
                          total=round(time.perf_counter() - t0, 1))
    save(out)
    return out


def syp_markdown(out: dict[str, Any]) -> str:
    """The report of :func:`syp_worker`'s result (whatever stage it reached)."""
    md = ["# SYP: autocast off vs on (bench/gpu_checks.py)", "",
          f"Device {out['device']}; models {', '.join(out['models'])}; {out['sets']['meta']} "
          f"meta-sets, {out['sets']['val']} validation sets; features stored float32; oracle "
          f"seeds {out['oracle_seeds']}, {out['oracle_passes']} passes; stage reached: "
          f"{out['stage']}; seconds {out['seconds']}.", ""]
    if out["per_model"]:
        md += ["## Per model: inference and indicators, largest absolute difference", "",
               md_table([{"model": m, "logits": r["logits_max_abs_diff"],
                          "features": r["features_max_abs_diff"],
                          "argmax flips": r["argmax_flips"], **r.get("indicator_max_abs_diff", {})}
                         for m, r in out["per_model"].items()], ".3g"), ""]
    for key, title in (("table1_baseline", "Table 1, baseline rows (no oracle)"),
                       ("table1", "Table 1, every row (baselines and oracles)")):
        cells = out.get(f"{key}_cells")
        if cells is None:
            md += [f"## {title}: not reached", ""]
            continue
        moved = out[f"{key}_moved"]
        md += [f"## {title}: {len(moved)} of {cells} RMSE cells moved, "
               f"{sum(r['moves_at_2_decimals'] for r in moved)} at 2 decimals", ""]
        if moved:
            md += [md_table(moved, ".4f"), ""]
    return "\n".join(md)


# ---------------------------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------------------------


def worker_main(args: argparse.Namespace) -> None:
    """``--worker PART``: run one part in this (fresh) process and write its json."""
    if args.worker == "alphatrim-det":
        res = alphatrim_worker(args.device, True, args.tiny)
    elif args.worker == "alphatrim-nodet":
        res = alphatrim_worker(args.device, False, args.tiny)
    elif args.worker == "syp":  # its data and models stay out of --out (only small files there)
        path = args.out / "_syp.json"

        def save(res: dict[str, Any]) -> None:
            path.write_text(json.dumps(res, indent=1, default=str))

        with tempfile.TemporaryDirectory(prefix="gpu_checks_syp_") as work:
            res = syp_worker(args.device, args.tiny, Path(work), save, args.syp_meta_sets)
    else:
        raise SystemExit(f"unknown worker {args.worker}")
    (args.out / f"_{args.worker}.json").write_text(json.dumps(res, indent=1, default=str))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu for a dry run")
    ap.add_argument("--tiny", action="store_true", help="tiny sizes (local dry run)")
    ap.add_argument("--repro22", choices=("auto", "always", "never"), default="auto",
                    help="auto: only on a CPU without avx512f")
    ap.add_argument("--parts", default="env,alphatrim,syp")
    ap.add_argument("--alphatrim-timeout", type=float, default=50, help="seconds per process")
    ap.add_argument("--syp-timeout", type=float, default=130, help="seconds")
    ap.add_argument("--syp-meta-sets", type=int, default=None,
                    help="meta-sets of the SYP part (default: config/config.yaml's)")
    ap.add_argument("--budget", type=float, default=225,
                    help="seconds for the whole run: a part gets at most what is left")
    ap.add_argument("--write-config", action="store_true",
                    help=f"write {CONFIG_SNAPSHOT.relative_to(REPO)} and stop")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write_config:
        cfg, _ = syp_config()
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        CONFIG_SNAPSHOT.write_text(json.dumps({"commit": commit, "config": cfg}, indent=1,
                                              sort_keys=True) + "\n")
        return
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.worker:
        worker_main(args)
        return
    t0 = time.perf_counter()
    parts = set(args.parts.split(","))
    summary = [f"# GPU checks ({time.strftime('%Y-%m-%d %H:%M:%S')}, device {args.device})", ""]
    me = [sys.executable, str(Path(__file__).resolve()), "--out", str(args.out),
          "--device", args.device, *(["--tiny"] if args.tiny else []),
          *(["--syp-meta-sets", str(args.syp_meta_sets)] if args.syp_meta_sets else [])]

    deadline = t0 + args.budget

    def worker(name: str, timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
        (args.out / f"_{name}.json").unlink(missing_ok=True)
        timeout = max(5.0, min(timeout, deadline - time.perf_counter()))
        proc = run_sub([*me, "--worker", name], timeout, env)
        path = args.out / f"_{name}.json"
        res = json.loads(path.read_text()) if path.exists() else {}
        path.unlink(missing_ok=True)
        return {"process": proc, **res}

    if "env" in parts:
        info = env_info(args.device)
        if args.repro22 == "always" or (args.repro22 == "auto" and not info["avx512f"]):
            info["repro22"] = repro22()
        else:
            info["repro22"] = "not run: this CPU has avx512f (issue 22 needs one without)"
        (args.out / "env.json").write_text(json.dumps(info, indent=1))
        summary.append(f"- env: torch {info['torch']} (CUDA {info['torch_cuda']}, cuDNN "
                       f"{info['cudnn']}), GPU {info.get('gpu')}, CPU {info['cpu_model']}, "
                       f"avx512f {info['avx512f']}")
        if isinstance(info["repro22"], dict):
            for k, r in info["repro22"].items():
                summary.append(f"- issue 22 repro {k}: returncode {r['returncode']}, signal "
                               f"{r['signal']}")
        else:
            summary.append(f"- issue 22 repro: {info['repro22']}")
    if "alphatrim" in parts:
        res = {"deterministic": worker("alphatrim-det", args.alphatrim_timeout)}
        env = _env()
        env.pop("CUBLAS_WORKSPACE_CONFIG", None)
        res["torch_defaults"] = worker("alphatrim-nodet", args.alphatrim_timeout, env)
        (args.out / "alphatrim_determinism.json").write_text(json.dumps(res, indent=1))
        for k, r in res.items():
            per_seed = ", ".join(
                f"seed {s['seed']}: " + (s["error"][:80] if "error" in s else
                                         f"weights {'==' if s['weights_identical'] else '!='}, "
                                         f"logits {'==' if s['logits_identical'] else '!='}")
                for s in r.get("seeds", []))
            summary.append(f"- alphatrim {k}: all bit-identical {r.get('all_identical')} "
                           f"({per_seed or r['process']['stderr_tail'][-300:]})")
    if "syp" in parts:
        res = worker("syp", args.syp_timeout)
        (args.out / "syp_autocast.json").write_text(json.dumps(res, indent=1))
        if "stage" in res:
            (args.out / "syp_autocast.md").write_text(syp_markdown(res))
            line = f"- syp autocast: stage reached {res['stage']}"
            for key in ("table1_baseline", "table1"):
                if f"{key}_cells" in res:
                    moved = res[f"{key}_moved"]
                    line += (f"; {key}: {len(moved)} of {res[f'{key}_cells']} cells moved, "
                             f"{sum(r['moves_at_2_decimals'] for r in moved)} at 2 decimals")
            summary.append(line + f" ({res['seconds']})")
        if res["process"]["returncode"] != 0:
            summary.append(f"- syp autocast process: returncode {res['process']['returncode']}: "
                           f"{res['process']['stderr_tail'][-300:]}")
    summary += ["", f"Total {time.perf_counter() - t0:.0f} s."]
    (args.out / "summary.md").write_text("\n".join(summary) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
