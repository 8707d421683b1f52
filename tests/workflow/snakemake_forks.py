"""Start `snakemake` command lines as forks of one process that has imported Snakemake once.

Each fresh `snakemake` process spends about 1.7 s of CPU importing its CLI and finding its
plugins before it reads the Snakefile; the workflow tests start about a hundred of them (issue 22
item 4: suite time). This server imports that once; each request forks it, and the child runs
what the `snakemake` script runs (`sys.exit(snakemake.cli.main())`) with the request's argv,
environment, working directory and output files, stdin on /dev/null. Nothing of the workflow
(the Snakefile, labelfree) is imported here: every child reads those afresh.

Protocol (tests/workflow/runner.py is the client): one JSON request per line on stdin,
``{"argv", "env", "cwd", "stdout", "stderr"}``; per request two lines on stdout: the child's pid,
then its exit status (negative: killed by that signal, as subprocess reports it).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys

from snakemake.cli import main  # the import done once

#: What a dry run of the Snakefile imports after the CLI (read from `python -X importtime -m
#: snakemake --dry-run`): Snakemake's own lazy imports and their libraries, never the workflow's.
LATER = (
    "snakemake.profiles", "snakemake.report", "snakemake.report.html_reporter",
    "snakemake.storage", "snakemake.script", "snakemake.executors.local", "platformdirs",
    "argparse_dataclass", "yte", "docutils.core", "docutils.parsers.rst.directives.images",
    "jinja2", "smart_open", "jsonschema", "nbformat", "graphlib", "packaging.version",
)
for name in LATER:  # one absent here: the child imports what it needs, as a fresh process does
    with contextlib.suppress(Exception):
        importlib.import_module(name)

try:  # the plugin registries are filled on first use; fill them before forking, too
    from snakemake_interface_executor_plugins.registry import ExecutorPluginRegistry
    from snakemake_interface_logger_plugins.registry import LoggerPluginRegistry
    from snakemake_interface_report_plugins.registry import ReportPluginRegistry
    from snakemake_interface_storage_plugins.registry import StoragePluginRegistry

    for registry in (ExecutorPluginRegistry, LoggerPluginRegistry, ReportPluginRegistry,
                     StoragePluginRegistry):
        registry().plugins  # noqa: B018 (collects the installed plugins)
except Exception:  # a different layout: the child finds them itself, as a fresh process does
    pass


def _child(req: dict) -> None:
    """Become ``snakemake <argv>``: never returns."""
    try:
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                                (1, req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                                (2, req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
            new = os.open(path, flags, 0o644)
            os.dup2(new, fd)
            os.close(new)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        sys.argv = list(req["argv"])
        sys.path[0] = os.path.dirname(sys.argv[0])  # as for the `snakemake` script itself
        main(sys.argv[1:])  # exits through sys.exit, as in the `snakemake` script
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 (report anything, never return into the server)
        print(f"snakemake_forks: {e!r}", file=sys.stderr)
        sys.exit(1)
    sys.exit(0)


def serve() -> None:
    out = os.fdopen(os.dup(1), "w")  # the answer pipe; fd 1 itself is what children redirect
    for line in sys.stdin:
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            out.close()
            _child(req)
        print(pid, file=out, flush=True)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), file=out, flush=True)


if __name__ == "__main__":
    serve()
