"""Adapter: analyse a part of one zoo's (or clone control's) test sets (rule laf_part)."""

import logging

from labelfree.joblog import log_to

log_to(snakemake.log[0])  # noqa: F821 (log and tracebacks to the log, progress bars also shown)

from threadpoolctl import threadpool_limits  # noqa: E402

from labelfree.laf.experiment import StudyParams  # noqa: E402
from labelfree.laf.study import SetInputs, clone_control, run_part  # noqa: E402

sm = snakemake  # noqa: F821
spec = sm.params.spec
log = logging.getLogger("laf_part")
threadpool_limits(sm.threads)  # BLAS threads = the rule's threads (shared machines)
try:
    testsets = [
        SetInputs(t["name"], tuple(t["infer"]), t["labels"], t["origin"]) for t in spec["testsets"]
    ]
    run_part(
        spec["zoo"],
        spec["dataset"],
        spec["models"],
        testsets,
        StudyParams.from_config(sm.params.laf),
        sm.params.seed,
        sm.output[0],
        clone=clone_control(spec["clone"], testsets) if "clone" in spec else None,
    )
except Exception:
    log.exception("laf_part failed")
    raise
