"""Provenance of a run: the validated config and the versions of the software that ran it."""

from __future__ import annotations

import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from labelfree.store import atomic_path, save_table

#: Packages whose versions change results; listed in the report.
PACKAGES = (
    "labelfree", "snakemake", "numpy", "scipy", "pandas", "scikit-learn", "hdbscan", "torch",
    "torchvision", "pycocotools", "matplotlib", "pillow", "safetensors",
)


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (floating-point results depend on it); the
    platform's processor or machine string where that file is absent."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def write_config(config: dict[str, Any], path: str | Path) -> None:
    """Dump the validated config as YAML (sorted keys, stable bytes)."""
    with atomic_path(path) as tmp:
        tmp.write_text(yaml.safe_dump(dict(config), sort_keys=True))


def software_versions(path: str | Path) -> pd.DataFrame:
    """Write a table of Python, platform and package versions; return it."""
    rows = [("python", sys.version.split()[0]), ("platform", platform.platform())]
    for name in PACKAGES:
        try:
            rows.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            rows.append((name, "not installed"))
    df = pd.DataFrame(rows, columns=["component", "version"])
    save_table(df, path, title="Software versions")
    return df
