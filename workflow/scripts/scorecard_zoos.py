"""Thin adapter: the table of every configured zoo, scored by the scorecard or why not."""

import pandas as pd

from labelfree import store
from labelfree.joblog import log_to

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
table = pd.DataFrame(list(sm.params.rows),
                     columns=["zoo", "models", "scored_testsets", "scorecard", "reason"])
store.save_table(table, sm.output.csv, title="Scorecard: every zoo, scored or why not")
