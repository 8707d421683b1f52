"""Benchmark: does storing penultimate features as float16 move any SYP table value? (issue 16,
SYP bullet 4)

    python bench/syp_feature_precision.py --run DIR [--config config/config.yaml]
        [--scratch DIR] [--out bench/results/syp_feature_precision.md]

``--run`` is a finished workflow run of ``--config`` up to ``syp_tables`` (its inference files
store features as float16, labelfree.store.write_inference). The benchmark

1. recomputes, on the CPU, every syp inference file's logits and penultimate features in float32
   (labelfree.inference.predict with the run's batch size, the models and test sets of the run)
   and checks that the stored logits are bit-identical and the stored float16 features are
   exactly the float32 features cast to float16 (so the run is "float32 features, cast");
2. copies the run to ``--scratch``, replaces each inference file by one holding the features in
   the other precision (float32 where the run stored float16, as runs before issue 16 did; the
   float16 cast where it stored float32), and reruns ``syp_tables`` there (Snakemake reruns
   syp_indicators, syp_oracle and syp_tables, which read the features);
3. as a control, reruns syp_indicators on a copy with the run's own files (must be identical);
4. compares every array of each model's ``indicators.npz``, Table 1's baseline rows (they need
   no oracle) and every table of ``results/syp/tables`` cell by cell, and writes each value that
   moved to ``--out``. ``--rerun-only`` / ``--baselines-only`` / ``--compare-only`` split the
   steps (the oracle trainings of the rerun take most of the time).

Only float16 STORAGE is measured: on the CPU there is no autocast, so the features differ by the
cast alone. Autocast (float16 arithmetic on a GPU, inference.amp) is not measured here.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]


def other_precision(run: Path, cfg: dict) -> dict[Path, dict[str, np.ndarray]]:
    """Every syp inference file -> its members with the features in the other precision:
    float32 features recomputed on the CPU where the run stored float16, their float16 cast
    where it stored float32 (checked against the stored file: logits bit-identical, features
    equal to the recomputed ones or to their cast)."""
    import torch

    from labelfree.inference import predict
    from labelfree.store import inference_key, load_npz, read_image_set
    from labelfree.zoo.io import load_model

    torch.set_num_threads(1)
    zoo = cfg["syp"].get("zoo", "syp")
    dataset = cfg["zoos"][zoo]["dataset"]
    batch = int(cfg.get("inference", {}).get("batch_size", 512))
    out: dict[Path, dict[str, np.ndarray]] = {}
    for mdir in sorted((run / "results/zoo" / zoo).iterdir()):
        model, meta = load_model(mdir, "cpu")
        prep = meta.get("preprocessing", "scale01")
        for path in sorted((run / "results/infer" / zoo / mdir.name).glob("*.npz")):
            stored = load_npz(path)
            members = dict(stored)
            for name in stored["testsets"].tolist():
                x = read_image_set(run / "results/testsets" / dataset / f"{name}.npz").x
                res = predict(model, x, prep, batch, "cpu", ["penultimate"], amp=False)
                lk, fk = inference_key(name), inference_key(name, "feat_penultimate")
                if not np.array_equal(res["logits"], stored[lk]):
                    raise SystemExit(f"{path} [{name}]: recomputed logits differ from the run's")
                f32 = res["penultimate"].reshape(len(x), -1)
                if stored[fk].dtype == np.float16:  # the copy gets float32
                    ok, members[fk] = np.array_equal(f32.astype(np.float16), stored[fk]), f32
                else:  # a run with float32 features (zoos.syp.feature_dtype auto): copy float16
                    ok, members[fk] = np.array_equal(f32, stored[fk]), f32.astype(np.float16)
                if not ok:
                    raise SystemExit(f"{path} [{name}]: stored features differ from recomputed")
            out[path.relative_to(run)] = members
    return out


def control(run: Path, config: Path) -> list[str]:
    """Reruns syp_indicators on a copy of ``run`` whose inference files are rewritten with their
    own members (newer, same content; the mechanism of the precision rerun): the arrays and
    baseline predictions that differ from the run's (none when the step is deterministic, so
    that what moves with the other precision moves by the precision alone)."""
    from labelfree.store import load_npz

    ctl = run.with_name(run.name + "-control")
    if ctl.exists():
        shutil.rmtree(ctl)
    shutil.copytree(run, ctl, symlinks=True)
    for sub in ("locks", "incomplete"):
        shutil.rmtree(ctl / ".snakemake" / sub, ignore_errors=True)
    for path in ctl.glob("results/infer/syp/*/*.npz"):
        np.savez(path, **load_npz(path))
    targets = sorted(str(p.relative_to(run)) for p in run.glob("results/syp/raw/*/*/indicators.npz"))
    snakemake = str(Path(sys.executable).with_name("snakemake"))
    proc = subprocess.run(
        [snakemake, "--snakefile", str(REPO / "Snakefile"), "--directory", str(ctl),
         "--configfile", str(config.resolve()), "--rerun-triggers", "mtime", "--cores", "1",
         *targets], capture_output=True, text=True,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    ran = {ln.split()[1].rstrip(":") for ln in (proc.stdout + proc.stderr).splitlines()
           if ln.startswith(("rule ", "localrule "))}
    if proc.returncode or ran != {"syp_indicators"}:
        raise SystemExit(f"control reran {sorted(ran)}:\n{proc.stderr[:3000]}")
    differ = [f"{r['model']} {r['array']}" for r in compare_indicators(run / "results/syp/raw",
                                                                          ctl / "results/syp/raw")
              if r["max_abs_diff"] != 0]
    for t in targets:
        base = Path(t).with_name("baselines.csv")
        if (run / base).read_bytes() != (ctl / base).read_bytes():
            differ.append(str(base))
    shutil.rmtree(ctl)
    return differ


def compare_tables(a: Path, b: Path) -> tuple[list[dict], list[str]]:
    """Cells of each csv under ``a`` that differ in ``b`` (as written, so a value moves only if
    its printed digits move), and the tables compared."""
    moved, names = [], []
    for fa in sorted(a.glob("*.csv")):  # a: the float16 side
        names.append(fa.name)
        ta, tb = pd.read_csv(fa, dtype=str), pd.read_csv(b / fa.name, dtype=str)
        if ta.shape != tb.shape or list(ta.columns) != list(tb.columns):
            moved.append({"table": fa.name, "row": "-", "column": "-", "float16": str(ta.shape),
                          "float32": str(tb.shape)})
            continue
        diff = (ta.fillna("") != tb.fillna("")).to_numpy()
        for i, j in zip(*np.nonzero(diff), strict=True):
            moved.append({"table": fa.name, "row": " / ".join(ta.iloc[i, :2].astype(str)),
                          "column": ta.columns[j], "float16": ta.iat[i, j],
                          "float32": tb.iat[i, j]})
    return moved, names


def baseline_rows(run: Path, other: Path, cfg: dict, oracle_run: Path) -> list[dict]:
    """Table 1's baseline-method rows (RMSE of FD, Rotation, ...; spec 5) computed from each
    run's indicators and baseline predictions. They need no oracle, so they are exact for the
    float32 copy as soon as its syp_indicators jobs are done; the SYP rows (oracle trainings)
    come from the full rerun's tables. Returns every cell that differs, with both values."""
    from labelfree.store import load_json
    from labelfree.syp import report as ex
    from labelfree.syp.report import load_results

    raw, zoo = "results/syp/raw", cfg["syp"].get("zoo", "syp")
    models = sorted(p.name for p in (run / raw / zoo).iterdir())
    ds = cfg["zoos"][zoo]["dataset"]
    info = load_json(run / raw / f"testsets_{ds}.json")
    groups = {name: rec["group"] for name, rec in info["val"].items()}
    variants = ("ora_a", "ora_a_adj", "ora_b", "ora_b_adj")  # any q will do: rows not compared
    oracle = {m: {v: oracle_run / raw / zoo / m / f"oracle_{v}.npz" for v in variants}
              for m in models}
    tabs = []
    for where in (run, other):
        res = load_results(models, [where / raw / zoo / m / "indicators.npz" for m in models],
                           [where / raw / zoo / m / "baselines.csv" for m in models], oracle)
        t = ex.table1(res, cfg["syp"]["aggregate"], groups)
        tabs.append(t[t["method"].isin(ex.BASELINE_ORDER)].reset_index(drop=True))
    a, b = tabs
    out = []
    for col in [c for c in a.columns if c.startswith("rmse")]:
        for i in np.nonzero(~np.isclose(a[col], b[col], rtol=0, atol=0, equal_nan=True))[0]:
            out.append({"model": a.at[i, "model"], "method": a.at[i, "method"], "column": col,
                        "float16": a.at[i, col], "float32": b.at[i, col],
                        "moves at 2 decimals": f"{a.at[i, col]:.2f}" != f"{b.at[i, col]:.2f}"})
    return out


def compare_indicators(a: Path, b: Path) -> list[dict]:
    """Largest absolute difference per array of each model's indicators.npz."""
    from labelfree.store import load_npz

    rows = []
    for fa in sorted(a.glob("**/indicators.npz")):
        za, zb = load_npz(fa), load_npz(b / fa.relative_to(a))
        for k in za:
            if za[k].dtype.kind in "fc":
                d = float(np.max(np.abs(za[k] - zb[k]))) if za[k].size else 0.0
                rows.append({"model": fa.parent.name, "array": k, "max_abs_diff": d})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, required=True)
    ap.add_argument("--config", type=Path, default=REPO / "config/config.yaml")
    ap.add_argument("--scratch", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=REPO / "bench/results/syp_feature_precision.md")
    ap.add_argument("--rerun-only", action="store_true",
                    help="prepare and run the float32 copy, do not compare (the run may still be "
                    "finishing its own syp jobs: they do not read the inference files)")
    ap.add_argument("--compare-only", action="store_true",
                    help="the float32 copy is finished: compare only")
    ap.add_argument("--baselines-only", action="store_true",
                    help="the float32 copy has its indicators but not its oracle trainings: "
                    "compare indicators and Table 1's baseline rows only")
    args = ap.parse_args()
    cfg = yaml.safe_load(args.config.read_text())
    scratch = args.scratch or args.run.with_name(args.run.name + "-float32")
    t0 = time.perf_counter()
    log = scratch.with_name(scratch.name + ".log")
    if not args.compare_only:
        members = other_precision(args.run, cfg)
        if scratch.exists():
            shutil.rmtree(scratch)
        shutil.copytree(args.run, scratch, symlinks=True)  # keeps mtimes: nothing else reruns
        for sub in ("locks", "incomplete"):  # of jobs still running in --run: rerun here
            shutil.rmtree(scratch / ".snakemake" / sub, ignore_errors=True)
        for rel, arrays in members.items():
            np.savez(scratch / rel, **arrays)
        snakemake = str(Path(sys.executable).with_name("snakemake"))
        proc = subprocess.run(
            [snakemake, "--snakefile", str(REPO / "Snakefile"), "--directory", str(scratch),
             "--configfile", str(args.config.resolve()), "--rerun-triggers", "mtime", "--cores", "1", "--rerun-incomplete",
             "syp_tables"],
            capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        )
        log.write_text(proc.stdout + proc.stderr)
        if proc.returncode:
            raise SystemExit(proc.stderr[-4000:])
        if args.rerun_only:
            return
    reran = sorted({ln.split()[1].rstrip(":") for ln in log.read_text().splitlines()
                    if ln.startswith(("rule ", "localrule "))}) if log.exists() else []
    from labelfree.store import load_npz

    probe = next(args.run.glob(f"results/infer/{cfg['syp'].get('zoo', 'syp')}/*/id.npz"))
    run_half = load_npz(probe)["feat_penultimate.id"].dtype == np.float16
    half, full32 = (args.run, scratch) if run_half else (scratch, args.run)
    if args.baselines_only:
        moved, tables = [], []
    else:
        moved, tables = compare_tables(half / "results/syp/tables", full32 / "results/syp/tables")
    ind = compare_indicators(half / "results/syp/raw", full32 / "results/syp/raw")
    from labelfree.config import validate_config

    full = validate_config(cfg, REPO / "config" / "schema.yaml")
    base = baseline_rows(half, full32, full, oracle_run=args.run)
    ctl = control(args.run, args.config)
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    lines = [
        "# SYP: float16 feature storage against float32 (issue 16)",
        "",
        f"Written by `bench/syp_feature_precision.py` at commit {commit} on {platform.node()} "
        f"({platform.processor() or platform.machine()}), {time.perf_counter() - t0:.0f} s, "
        f"run of `{args.config.relative_to(REPO) if args.config.is_relative_to(REPO) else args.config}`.",
        "",
        "Penultimate features of every syp inference file were recomputed in float32 on the CPU; "
        "the run's stored logits are bit-identical to them and its stored features are exactly "
        f"{'their float16 cast' if run_half else 'them'}. A copy of the run with the features "
        f"in {'float32' if run_half else 'float16'} reran these jobs: "
        f"{', '.join(reran) or 'still running (syp_indicators done)'}. Autocast (float16 arithmetic on a GPU) is NOT measured.",
        "",
        "Control: syp_indicators rerun on a copy of the run with its own float16 files gives "
        + (f"DIFFERENT results ({', '.join(ctl)}): the moves below are not precision alone."
           if ctl else "bit-identical indicators and baseline predictions, so what moves below "
           "moves by the features' precision alone."),
        "",
        "## Table 1, baseline rows (no oracle): cells that moved: "
        f"{len(base)}, of which {sum(r['moves at 2 decimals'] for r in base)} at 2 decimals",
        "",
    ]
    if base:
        lines += [pd.DataFrame(base).to_markdown(index=False, floatfmt=".4f"), ""]
    if args.baselines_only:
        lines += ["## Tables with oracle rows: NOT compared", "",
                  "This run stopped before the float32 copy's oracle trainings finished "
                  "(`--baselines-only`); rerun without it for every table.", ""]
    else:
        lines += [f"## Every table ({len(tables)}, every cell as written): {', '.join(tables)}",
                  "", f"Cells that moved: {len(moved)}", ""]
        if moved:
            lines += [pd.DataFrame(moved).to_markdown(index=False), ""]
    lines += ["## Indicators (indicators.npz): largest absolute difference per array", "",
              pd.DataFrame(ind).to_markdown(index=False, floatfmt=".3g"), ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print(f"{len(base)} Table 1 baseline cells and {len(moved)} table cells moved; wrote {args.out}")


if __name__ == "__main__":
    main()
