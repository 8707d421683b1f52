"""Thin adapter: import the models of one prediction-zoo bundle into inference artefacts and
meta.json (labelfree.zoo.predictions.import_model); one output file of each kind per model."""

import logging

from labelfree.joblog import log_to
from labelfree.zoo.predictions import import_model

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
infer = list(sm.output.infer) if isinstance(sm.output.infer, list) else [sm.output.infer]
meta = list(sm.output.meta) if isinstance(sm.output.meta, list) else [sm.output.meta]
for entry, infer_out, meta_out in zip(sm.params.models, infer, meta, strict=True):
    m = import_model(sm.params.zoo, entry["model"], entry["files"], entry["kind"],
                     sm.params.num_classes, sm.params.rows, entry["features"], infer_out, meta_out)
    logging.info("%s: %s on %s, features %s -> %s", entry["model"], m["kind"],
                 sorted(entry["files"]), m["features"], infer_out)
