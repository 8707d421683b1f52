"""Write the validated config and the software versions for the report (thin adapter)."""

import logging

from labelfree.provenance import software_versions, write_config

logging.basicConfig(filename=snakemake.log[0], level=logging.INFO)
write_config(snakemake.params.config, snakemake.output.config)
software_versions(snakemake.output.software)
logging.info("wrote %s and %s", snakemake.output.config, snakemake.output.software)
