"""Thin adapter: PACE Tables 2-8, Figures 4-8 and the conclusions (labelfree.pace.report)."""

import pandas as pd

from labelfree.joblog import log_to
from labelfree.pace.experiment import errors
from labelfree.pace.report import cross_rows, write_all
from labelfree.store import load_json, read_table

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

rows = pd.concat([read_table(p) for p in sm.input.rows], ignore_index=True)
timings = pd.DataFrame([r for p in sm.input.timings for r in load_json(p)])
meta = read_table(sm.input.meta)
err = errors(rows)
err.to_csv(sm.output.errors, index=False, float_format="%.6g")
cross_rows(err, meta, sm.params.zoo, sm.params.dataset).to_csv(
    sm.output.cross_rows, index=False, float_format="%.6g", lineterminator="\n")
write_all(err, meta, timings, {k: v for k, v in sm.output.items()
                              if k not in ("errors", "cross_rows") and not k.endswith(("_md", "_pdf"))})
