"""Adapter: analyse a part of one zoo's (or clone control's) test sets (rule laf_part)."""

import logging

from labelfree.joblog import log_to

log_to(snakemake.log[0])  # noqa: F821 (log and tracebacks to the log, progress bars also shown)

from threadpoolctl import threadpool_limits  # noqa: E402

from labelfree.laf.run import SetInputs, StudyParams, clone_control, run_part  # noqa: E402

sm = snakemake  # noqa: F821
part = sm.params.part
log = logging.getLogger("laf_part")
threadpool_limits(sm.threads)  # BLAS threads = the rule's threads (shared machines)
try:
    testsets = [
        SetInputs(t["name"], tuple(t["infer"]), t["labels"], t["origin"]) for t in part["testsets"]
    ]
    run_part(
        part["zoo"],
        part["dataset"],
        part["models"],
        testsets,
        StudyParams.from_config(sm.params.laf),
        sm.params.seed,
        sm.output[0],
        clone=clone_control(part["clone"], testsets) if "clone" in part else None,
    )
except Exception:
    log.exception("laf_part failed")
    raise
