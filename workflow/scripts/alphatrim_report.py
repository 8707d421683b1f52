"""Thin adapter: Tables I-V and Figs. 4-16 of every alphatrim experiment (labelfree.alphatrim.report.write_report)."""

import logging
from pathlib import Path

from labelfree.alphatrim.report import write_report

sm = snakemake  # noqa: F821 (injected by Snakemake)
logging.basicConfig(filename=sm.log[0], level=logging.INFO, force=True,
                    format="%(asctime)s %(levelname)s %(message)s")
tables = Path(sm.output[0]).parent  # results/alphatrim/tables
figures = tables.parent / "figures"
for i, (name, cfg) in enumerate(sm.params.experiments.items()):
    write_report(name, cfg, sm.params.study, sm.input.zoo[i], sm.input.per_model[i],
                 sm.input.ensembles[i], sm.input.raw[i], sm.input.summary[i],
                 tables, figures)
    logging.info("wrote the tables and figures of experiment %s", name)
