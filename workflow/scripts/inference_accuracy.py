"""Thin adapter: accuracy of every model on every test set of each zoo, as table and heatmap
(one job for every zoo: one process)."""

import logging

from labelfree.accuracy import accuracy_heatmap, accuracy_long, accuracy_wide
from labelfree.joblog import log_to
from labelfree.store import load_json, save_figure, save_table

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])

for zoo, z in sm.params.zoos.items():
    grid = [
        [z["infer_pattern"].format(model=m, group=z["groups"][t]) for t in z["testsets"]]
        for m in z["models"]
    ]
    long = accuracy_long(z["models"], z["testsets"], grid, list(z["testset_files"]))
    wide = accuracy_wide(long, [load_json(p) for p in z["meta"]])
    out = z["out"]
    save_table(
        wide,
        out["csv"],
        out["md"],
        title=f"Accuracy of every model of zoo '{zoo}' (rows) on every test set (columns)",
    )
    fig = accuracy_heatmap(wide, z["testsets"], title=f"zoo {zoo}: accuracy per test set")
    save_figure(fig, out["png"], out["pdf"])
    logging.info("zoo %s: %d models x %d test sets; mean accuracy %.4f", zoo, len(wide),
                 len(z["testsets"]), long["accuracy"].mean())
