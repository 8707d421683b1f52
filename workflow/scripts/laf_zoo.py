"""Adapter: analyse one zoo (or clone control) on all its test sets (rule laf_zoo)."""

import logging

logging.basicConfig(
    filename=snakemake.log[0],  # noqa: F821
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)

from threadpoolctl import threadpool_limits  # noqa: E402

from labelfree.laf.experiment import StudyParams  # noqa: E402
from labelfree.laf.study import SetInputs, clone_control, run_study  # noqa: E402

sm = snakemake  # noqa: F821
spec = sm.params.spec
log = logging.getLogger("laf_zoo")
threadpool_limits(sm.threads)  # BLAS threads = the rule's threads (shared machines)
try:
    testsets = [
        SetInputs(t["name"], tuple(t["infer"]), t["labels"], t["origin"]) for t in spec["testsets"]
    ]
    run_study(
        spec["zoo"],
        spec["dataset"],
        spec["models"],
        testsets,
        StudyParams.from_config(sm.params.laf),
        sm.params.seed,
        sm.params.out_dir,
        clone=clone_control(spec["clone"], testsets) if "clone" in spec else None,
    )
except Exception:
    log.exception("laf_zoo failed")
    raise
