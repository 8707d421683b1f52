"""Adapter: analyse one zoo (or clone control) on all its test sets (rule laf_zoo)."""

import logging

logging.basicConfig(
    filename=snakemake.log[0],  # noqa: F821
    level=logging.INFO,
    format="%(asctime)s %(levelname)s %(name)s: %(message)s",
)

from threadpoolctl import threadpool_limits  # noqa: E402

from labelfree.laf.experiment import StudyParams  # noqa: E402
from labelfree.laf.study import SetInputs, pick_clone, run_study  # noqa: E402

sm = snakemake  # noqa: F821
spec = sm.params.spec
log = logging.getLogger("laf_zoo")
threadpool_limits(sm.threads)  # BLAS threads = the rule's threads (shared machines)
try:
    testsets = [
        SetInputs(t["name"], tuple(t["infer"]), t["labels"], t["origin"]) for t in spec["testsets"]
    ]
    clone = None
    if "clone" in spec:
        c = spec["clone"]
        names = [t.name for t in testsets]
        if "id" not in names:
            raise ValueError(f"clone control {spec['zoo']}: the zoos have no `id` test set")
        source = [
            SetInputs(t.name, tuple(paths), t.labels, t.origin)
            for t, paths in zip(testsets, c["source_infer"], strict=True)
        ]
        j, acc = pick_clone(source[names.index("id")], c["accuracy"])
        log.info(
            "clone control %s: %d copies of %s (ID accuracy %.3f)",
            spec["zoo"],
            c["copies"],
            c["source_models"][j],
            acc,
        )
        clone = {
            "source": source,
            "index": j,
            "copies": c["copies"],
            "base_models": c["base_models"],
            "name": c["source_models"][j],
        }
    run_study(
        spec["zoo"],
        spec["dataset"],
        spec["models"],
        testsets,
        StudyParams.from_config(sm.params.laf),
        sm.params.seed,
        sm.params.out_dir,
        clone=clone,
    )
except Exception:
    log.exception("laf_zoo failed")
    raise
