"""PACE's main experiment (Tables 2-9) on chosen subjects of a run, one file per subject.

The workflow's ``pace_experiment`` job runs an experiment on every subject of ``subjects.npz`` and
writes its rows only at the end; on a slow machine a paper-scale run (e.g.
config/paper/pace-mnist-authors.yaml: 14 subjects of 10,000 inputs, 50 repetitions) may not get
there. This runs the same code (``labelfree.pace.run.run_subject``, the validated config's
``pace`` section, the run's seed) on the named subjects only, writes
``results/pace/raw/main_by_subject/<subject>.csv`` per subject as soon as it is done and skips the
subjects whose file exists. Each approach's seed stream derives from the seed and the subject's
name (``labelfree.pace.run._rng``), so the rows equal those of the workflow's ``main.csv`` for the
same subjects.

    python tools/pace_main_subjects.py RUN_DIR CONFIG SUBJECT [SUBJECT ...]
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import pandas as pd
import yaml
from threadpoolctl import threadpool_limits

from labelfree.config import validate_config
from labelfree.pace.run import StudyParams, load_subjects, run_subject

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="the run's working directory (--directory)")
    ap.add_argument("config", type=Path, help="the run's config file")
    ap.add_argument("subjects", nargs="+", help="subject names, e.g. lenet1@id")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")

    cfg = validate_config(yaml.safe_load(a.config.read_text()), ROOT / "config" / "schema.yaml")
    params = StudyParams.from_config(cfg["pace"], seed=int(cfg["seed"]))
    out = a.run / "results/pace/raw/main_by_subject"
    out.mkdir(parents=True, exist_ok=True)
    by_name = {s.name: s for s in load_subjects(a.run / "results/pace/raw/subjects.npz")}
    unknown = [s for s in a.subjects if s not in by_name]
    if unknown:
        raise SystemExit(f"not subjects of this run: {unknown}; known: {sorted(by_name)}")
    # deferred: imported before any timer starts (as run_experiment does)
    import hdbscan  # noqa: F401
    import sklearn.decomposition  # noqa: F401

    for name in a.subjects:
        path = out / f"{name}.csv"
        if path.exists():
            logging.info("%s: done before (%s)", name, path)
            continue
        t, c = time.perf_counter(), time.process_time()
        with threadpool_limits(a.threads):
            rows, timings = run_subject("main", by_name[name], params)
        df = pd.DataFrame(rows)
        exp = df.pop("experiment").fillna("main") if "experiment" in df else "main"
        df.insert(0, "experiment", exp)
        tmp = path.with_suffix(".tmp")
        df.to_csv(tmp, index=False, float_format="%.6g")
        tmp.rename(path)
        pd.DataFrame(timings).assign(wall_s=time.perf_counter() - t,
                                     cpu_s=time.process_time() - c).to_csv(
            out / f"{name}_timings.csv", index=False)
        logging.info("%s: %d rows, %.0f s wall, %.0f s CPU", name, len(df),
                     time.perf_counter() - t, time.process_time() - c)


if __name__ == "__main__":
    main()
