"""Retrain some SYP oracle variants of a finished run with other settings and write their scores
beside the run's, in the run's own layout, for ``syp-causes.py`` (docs/syp.md, claims table).

    python docs/paper-vs-ours/syp-retrain.py RUN OUT PASSES MODEL [--hold K] [VARIANT ...]

Reads ``RUN``'s indicator table of classifier ``MODEL`` (``results/syp/raw/syp/MODEL/``) and the
run's ``syp`` config (``config/config.yaml`` of this checkout, the run's seeds), trains the
variants (default: ``ora_a`` and Table 3's chain ``ind_h ind_ha ind_hafd``) for ``PASSES`` passes
over the meta-sets with the run's torch seeds, and writes ``OUT/MODEL/oracle_<variant>.npz``.
PASSES 500 = the paper's 30,000 iterations at the default run's 60 meta-sets (docs/syp.md, R7).
``--hold K``: the last K meta-sets are held out (never trained on, normaliser fitted without
them), so the oracles can be evaluated on unseen sets of the meta-sets' own distribution.
"""

import sys
import time
from pathlib import Path

import numpy as np
import yaml

from labelfree import store
from labelfree.config import validate_config
from labelfree.seeds import derive_seed
from labelfree.syp.run import IndicatorTable, build_variant, run_variants

run, out, passes, model = sys.argv[1], Path(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
args = sys.argv[5:]
hold = int(args[1]) if args[:1] == ["--hold"] else 0
args = args[2:] if hold else args
names = args or ["ora_a", "ind_h", "ind_ha", "ind_hafd"]
full = validate_config(yaml.safe_load(Path("config/config.yaml").read_text()), "config/schema.yaml")
cfg = full["syp"]
cfg["oracle"]["passes"] = passes
table = IndicatorTable.from_arrays(
    store.load_npz(f"{run}/results/syp/raw/syp/{model}/indicators.npz")
)
if hold:  # the held-out meta-sets count as validation sets: no training row, no normaliser row
    meta = [k for k, kind in enumerate(table.kinds) if kind == "meta"]
    table.kinds = [("val" if k in meta[-hold:] else kind) for k, kind in enumerate(table.kinds)]
seeds = [derive_seed(int(full["seed"]), "syp-oracle", model, s) for s in cfg["seeds"]]
t0 = time.perf_counter()
res = run_variants(table, [build_variant(cfg, n) for n in names], seeds, threads=1)
(out / model).mkdir(parents=True, exist_ok=True)
for n in names:
    q = np.stack([np.concatenate([qs[s] for s in table.sets]) for qs in res[n].q])
    store.save_npz(out / model / f"oracle_{n}.npz", q=q.astype(np.float32))
    print(n, "iters", res[n].iters, "final loss", np.round(res[n].final_loss, 4), flush=True)
print(
    f"{model}: {len(names)} variants x {len(seeds)} seeds at {passes:g} passes in "
    f"{time.perf_counter() - t0:.0f} s",
    flush=True,
)
