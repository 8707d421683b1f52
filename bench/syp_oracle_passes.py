"""One classifier's ``syp_oracle`` job under two configurations, interleaved, on a copy of a
finished default run: the job's own benchmark file (wall seconds and CPU seconds, torch import
and saving included), so the two sides share the machine's load.

    cp -a RUN /tmp/copy
    python bench/syp_oracle_passes.py /tmp/copy MODEL CONFIG_A CONFIG_B [ROUNDS]

Each round reruns the job (``--forcerun syp_oracle --allowed-rules syp_oracle``) once per
configuration, the order alternating between rounds. Prints one tab-separated row per job:
round, config, wall s, CPU s, mean load (the benchmark's columns) and the load average before and
after. The two configurations' variants may differ in name (Figure 10's iteration points); their
outputs sit side by side in the copy.
"""

import csv
import subprocess
import sys
from pathlib import Path

import yaml

from labelfree.config import validate_config
from labelfree.syp.plan import variant_overrides

run, model, cfg_a, cfg_b = sys.argv[1:5]
rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 2
snakefile = Path(__file__).resolve().parents[1] / "Snakefile"


def targets(cfg_path: str) -> list[str]:
    cfg = validate_config(yaml.safe_load(Path(cfg_path).read_text()), "config/schema.yaml")
    zoo = cfg["syp"]["zoo"]
    return [f"results/syp/raw/{zoo}/{model}/oracle_{v}.npz" for v in variant_overrides(cfg["syp"])]


def job(cfg_path: str) -> dict:
    cmd = [
        "snakemake", *targets(cfg_path), "--snakefile", str(snakefile), "--directory", run,
        "--configfile", cfg_path, "--cores", "1", "--rerun-triggers", "mtime",
        "--forcerun", "syp_oracle", "--allowed-rules", "syp_oracle", "--quiet", "all",
    ]  # fmt: skip
    load0 = Path("/proc/loadavg").read_text().split()[0]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    load1 = Path("/proc/loadavg").read_text().split()[0]
    with open(f"{run}/benchmarks/syp/oracle_{model}.tsv") as fh:
        row = next(csv.DictReader(fh, delimiter="\t"))
    return {"s": row["s"], "cpu": row["cpu_time"], "mean_load": row["mean_load"],
            "load": f"{load0}-{load1}"}  # fmt: skip


print("round\tconfig\twall s\tCPU s\tmean load %\tload average", flush=True)
for r in range(rounds):
    for cfg_path in (cfg_a, cfg_b) if r % 2 == 0 else (cfg_b, cfg_a):
        b = job(cfg_path)
        print(
            f"{r + 1}\t{cfg_path}\t{b['s']}\t{b['cpu']}\t{b['mean_load']}\t{b['load']}", flush=True
        )
