"""One classifier's SYP oracle training (every variant of the default config, seeds 0 and 1) with
this checkout's ``train_oracles`` or with another version's ``oracle.py``, on a run's indicator
table; prints wall and CPU seconds and the load, and saves the scores for comparison.

    git show 530fd8b:src/labelfree/syp/oracle.py > /tmp/oracle_old.py
    python bench/syp_oracle_ab.py new RUN MODEL PASSES OUT.npz
    python bench/syp_oracle_ab.py /tmp/oracle_old.py RUN MODEL PASSES OUT.npz

Run the two sides alternately (interleaved) on a loaded machine and compare CPU seconds.
"""

import importlib.util
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

import labelfree.syp.oracle as orc
from labelfree import store
from labelfree.config import validate_config
from labelfree.syp.plan import variant_overrides
from labelfree.syp.run import IndicatorTable, build_variant, run_variants

which, run, model, passes, out = sys.argv[1:6]
if which != "new":
    spec = importlib.util.spec_from_file_location("oracle_other", which)
    other = importlib.util.module_from_spec(spec)
    sys.modules["oracle_other"] = other
    spec.loader.exec_module(other)
    orc.train_oracles = other.train_oracles  # run_variants imports it at call time
cfg = validate_config(yaml.safe_load(Path("config/config.yaml").read_text()), "config/schema.yaml")
cfg = cfg["syp"]
cfg["oracle"]["passes"] = float(passes)
names = list(variant_overrides(cfg))
table = IndicatorTable.from_arrays(
    store.load_npz(f"{run}/results/syp/raw/syp/{model}/indicators.npz")
)
torch.set_num_threads(1)
load0 = Path("/proc/loadavg").read_text().split()[0]
t0, c0 = time.perf_counter(), time.process_time()
res = run_variants(table, [build_variant(cfg, n) for n in names], [0, 1], 1)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
load1 = Path("/proc/loadavg").read_text().split()[0]
print(
    f"{which}\t{model}\tpasses {passes}\twall {wall:.1f} s\tCPU {cpu:.1f} s\tload {load0}-{load1}"
)
np.savez(out, **{n: np.array([np.concatenate(list(d.values())) for d in res[n].q]) for n in names})
