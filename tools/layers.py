"""The import structure of labelfree against its layers (docs/architecture.md).

Reads every import of ``src/labelfree`` and ``workflow/scripts`` (Python's ast; imports inside
functions count too) and of ``Snakefile`` and ``workflow/rules`` (their ``import`` lines), groups
modules into units (``labelfree.zoo.io`` -> ``zoo``, ``workflow/scripts/x.py`` -> ``workflow``)
and checks them against :data:`LAYERS`:

- an import runs *up* when a unit imports a unit of a higher layer, or another unit of its own
  layer where that layer does not share (the studies import none of each other);
- a *cycle* is a set of modules that import each other in a loop.

``python tools/layers.py`` prints the table and every violation (exit 1 if any);
``--mermaid`` prints the picture of docs/architecture.md; ``--edges`` lists unit -> units.
tests/test_layers.py runs the check.
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: (layer, units, units of this layer may import each other), lowest first. A unit may import
#: every unit of a lower layer.
LAYERS: list[tuple[str, tuple[str, ...], bool]] = [
    ("foundation", ("config", "store", "seeds", "joblog", "outputs", "plots", "stats",
                    "numerics", "device", "provenance"), True),
    ("data", ("data",), False),
    ("shifts", ("shifts",), False),
    ("zoo", ("zoo",), False),
    ("inference", ("inference", "accuracy"), False),
    ("studies", ("laf", "pace", "syp", "alphatrim", "metamorphic"), False),
    ("methods", ("methods",), False),
    ("scorecard", ("scorecard",), False),
    ("run", ("skips", "answer", "summary", "claims", "paper_compare"), False),
    ("command", ("cli",), False),
    ("workflow", ("workflow",), False),
]

LAYER_OF = {u: i for i, (_, units, _) in enumerate(LAYERS) for u in units}
SHARES = {i for i, (_, _, shares) in enumerate(LAYERS) if shares}
_SMK_IMPORT = re.compile(r"^\s*(?:from\s+(labelfree[\w.]*)\s+import\s+([\w, ()]+)"
                         r"|import\s+(labelfree[\w.]*))", re.M)


def _module_name(path: Path) -> str:
    if path.is_relative_to(REPO / "src"):
        parts = path.relative_to(REPO / "src").with_suffix("").parts
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    return "workflow:" + path.relative_to(REPO).as_posix()


def _modules() -> set[str]:
    return {_module_name(p) for p in (REPO / "src" / "labelfree").rglob("*.py")}


def _target(module: str, name: str, known: set[str]) -> str:
    """``from module import name``: the submodule if ``name`` is one, else ``module``."""
    return f"{module}.{name}" if f"{module}.{name}" in known else module


def _imports_py(path: Path, known: set[str]) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "labelfree":
                out |= {_target(node.module, a.name, known) for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "labelfree"}
    return out


def _imports_smk(path: Path, known: set[str]) -> set[str]:
    out = set()
    for m in _SMK_IMPORT.finditer(path.read_text()):
        if m.group(3):
            out.add(m.group(3))
        else:
            names = [n.strip() for n in m.group(2).strip("() ").split(",") if n.strip()]
            out |= {_target(m.group(1), n.split()[0], known) for n in names}
    return out


def module_imports() -> dict[str, set[str]]:
    """module -> the labelfree modules it imports (workflow files named ``workflow:<path>``)."""
    known = _modules()
    graph: dict[str, set[str]] = {}
    for p in sorted((REPO / "src" / "labelfree").rglob("*.py")):
        graph[_module_name(p)] = _imports_py(p, known) - {_module_name(p)}
    for p in sorted((REPO / "workflow" / "scripts").glob("*.py")):
        graph[_module_name(p)] = _imports_py(p, known)
    for p in [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").rglob("*.smk"))]:
        graph[_module_name(p)] = _imports_smk(p, known)
    return graph


def unit(module: str) -> str:
    if module.startswith("workflow:"):
        return "workflow"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "labelfree"


def unit_edges(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for a, bs in graph.items():
        edges[unit(a)] |= {unit(b) for b in bs if unit(b) != unit(a)}
    return edges


def upward(graph: dict[str, set[str]]) -> list[str]:
    """``a -> b`` for every import against the layers (and every unit no layer lists)."""
    bad = []
    for a, bs in sorted(graph.items()):
        for b in sorted(bs):
            ua, ub = unit(a), unit(b)
            if ua == ub:
                continue
            la, lb = LAYER_OF.get(ua), LAYER_OF.get(ub)
            if la is None or lb is None:
                bad.append(f"{a} -> {b}: unit {ua if la is None else ub!r} is in no layer")
            elif lb > la or (lb == la and la not in SHARES):
                bad.append(f"{a} -> {b}: {LAYERS[la][0]} imports {LAYERS[lb][0]}")
    return bad


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of two or more modules (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def table() -> str:
    """The markdown table of docs/architecture.md: layer, its units, what it may import."""
    rows = ["| layer | packages and modules | may import |", "|---|---|---|"]
    for i, (name, units, shares) in enumerate(LAYERS):
        below = f"layers 1-{i}" if i > 1 else ("layer 1" if i == 1 else "")
        if shares:
            below = "each other" + (f", {below}" if below else "")
        elif len(units) > 1:
            below += ", not each other"
        rows.append(f"| {i + 1}. {name} | {', '.join(f'`{u}`' for u in units)} | {below} |")
    return "\n".join(rows)


def mermaid(graph: dict[str, set[str]]) -> str:
    """A mermaid flowchart: one box per layer (lowest at the bottom), an arrow per import
    between layers (a importer -> imported)."""
    edges = unit_edges(graph)
    lines = ["flowchart BT"]
    for i, (name, units, _) in enumerate(LAYERS):
        lines.append(f'    L{i}["{i + 1}. {name}<br/>{" ".join(units)}"]')
    pairs = sorted({(LAYER_OF[a], LAYER_OF[b]) for a, bs in edges.items() for b in bs
                    if a in LAYER_OF and b in LAYER_OF and LAYER_OF[a] != LAYER_OF[b]})
    lines += [f"    L{a} --> L{b}" for a, b in pairs]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mermaid", action="store_true", help="print the layer picture")
    ap.add_argument("--table", action="store_true", help="print the layer table")
    ap.add_argument("--edges", action="store_true", help="print unit -> units")
    args = ap.parse_args(argv)
    graph = module_imports()
    if args.mermaid:
        print(mermaid(graph))
        return 0
    if args.table:
        print(table())
        return 0
    if args.edges:
        for u, vs in sorted(unit_edges(graph).items()):
            print(f"{u} -> {', '.join(sorted(vs))}")
        return 0
    bad, loops = upward(graph), cycles(graph)
    for line in bad:
        print("up:", line)
    for loop in loops:
        print("cycle:", " <-> ".join(loop))
    print(f"{len(graph)} modules, {sum(map(len, graph.values()))} imports, "
          f"{len(bad)} against the layers, {len(loops)} cycle(s)")
    return 1 if bad or loops else 0


if __name__ == "__main__":
    sys.exit(main())
