"""Thin adapter: a prediction zoo's test sets as test-set artefacts, labels where the zoo has
them (labelfree.zoo.predictions.import_labels)."""

import logging

from labelfree.joblog import log_to
from labelfree.zoo.predictions import import_labels

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
outs = dict(zip(sm.params.testsets, sm.output, strict=True))
import_labels(sm.params.label_files, sm.params.rows, sm.params.num_classes, outs)
logging.info("test sets %s; labelled: %s", list(outs), sorted(sm.params.label_files))
