"""Write the validated config and the software versions for the report (thin adapter)."""

import logging

from labelfree.joblog import log_to
from labelfree.provenance import software_versions, write_config

sm = snakemake  # noqa: F821 (injected by Snakemake)
log_to(sm.log[0])
write_config(sm.config, sm.output.config)
software_versions(sm.output.software)
logging.info("wrote %s and %s", sm.output.config, sm.output.software)
