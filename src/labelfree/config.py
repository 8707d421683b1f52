"""Validate a workflow configuration against ``config/schema.yaml`` and fill defaults.

The schema is JSON Schema 2020-12 split over files: ``config/schema.yaml`` holds the shared
keys and ``$ref``s ``schema/<part>.yaml`` for each layer and study, so every study owns its
schema file. Errors are one line naming the key, the value and what is allowed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    import jsonschema
    from referencing import Registry

#: libyaml's parser when PyYAML has it (the schema files load about 10x faster; every `snakemake`
#: call validates its config), else PyYAML's own; both build the same Python objects.
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load_yaml(path: Path) -> Any:
    return yaml.load(path.read_text(), Loader=_SafeLoader)


class ConfigError(ValueError):
    """A configuration value is invalid; the message is one line naming the key."""


def load_schema(
    schema_path: str | Path, loaded: list[Path] | None = None
) -> tuple[dict[str, Any], Registry]:
    """Load the root schema and a registry that resolves relative ``$ref`` files beside it;
    every file the registry reads is appended to ``loaded``."""
    # deferred: jsonschema and referencing take about 0.1 s to import, which a parse whose
    # config was validated before (validate_config_cached) does not pay
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    root = Path(schema_path).resolve()

    def retrieve(uri: str) -> Resource:
        path = Path(uri.removeprefix("file://"))
        if not path.is_absolute():
            path = root.parent / path
        if loaded is not None:
            loaded.append(path)
        return Resource.from_contents(_load_yaml(path), DRAFT202012)

    schema = _load_yaml(root)
    schema.setdefault("$id", root.as_uri())
    return schema, Registry(retrieve=retrieve)


def _key_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    return ".".join(parts) if parts else "<top level>"


def _describe(error: jsonschema.ValidationError) -> str:
    """One line: the key, the value, what is allowed."""
    key = _key_path(error)
    v = error.validator
    if v == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        where = "" if key == "<top level>" else f" under '{key}'"
        return f"unknown config key(s) {extra}{where}; allowed keys: {allowed}"
    if v == "enum":
        return f"config key '{key}': value {error.instance!r} is not one of {error.validator_value}"
    if v == "type":
        return (
            f"config key '{key}': value {error.instance!r} has type "
            f"{type(error.instance).__name__}, expected {error.validator_value}"
        )
    if v in {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}:
        op = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[v]
        return f"config key '{key}': value {error.instance!r} must be {op} {error.validator_value}"
    if v == "required":
        return f"config key '{key}': {error.message}"
    if v in {"minItems", "maxItems", "minLength", "uniqueItems", "minProperties"}:
        return f"config key '{key}': value {error.instance!r} breaks {v}={error.validator_value}"
    return f"config key '{key}': value {error.instance!r} is invalid: {error.message}"


def _fill_defaults(instance: Any, schema: dict[str, Any], resolver: Any) -> None:
    """Insert ``default`` values of absent properties, recursively through objects and $refs."""
    if "$ref" in schema:
        resolved = resolver.lookup(schema["$ref"])
        _fill_defaults(instance, resolved.contents, resolved.resolver)
    if not isinstance(instance, dict):
        return
    for name, sub in schema.get("properties", {}).items():
        sub_resolver = resolver
        if "$ref" in sub:
            resolved = resolver.lookup(sub["$ref"])
            sub, sub_resolver = resolved.contents, resolved.resolver
        if name not in instance and "default" in sub:
            instance[name] = copy.deepcopy(sub["default"])
        if name in instance:
            _fill_defaults(instance[name], sub, sub_resolver)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        for name, value in instance.items():
            if name not in schema.get("properties", {}):
                _fill_defaults(value, extra, resolver)


def validate_config(
    config: dict[str, Any], schema_path: str | Path, loaded: list[Path] | None = None
) -> dict[str, Any]:
    """Return a validated deep copy of ``config`` with schema defaults filled in (the schema
    files read are appended to ``loaded``).

    Raises ConfigError naming every bad or missing key at once (one line each, joined).
    """
    # deferred: see load_schema
    import jsonschema

    schema, registry = load_schema(schema_path, loaded)
    cfg = copy.deepcopy(dict(config))
    resolver = registry.resolver(base_uri=schema["$id"]).lookup(schema["$id"]).resolver
    _fill_defaults(cfg, schema, resolver)
    validator = jsonschema.Draft202012Validator(schema, registry=registry)
    problems: list[str] = []
    for error in sorted(validator.iter_errors(cfg), key=lambda e: list(map(str, e.absolute_path))):
        best = jsonschema.exceptions.best_match([error])  # descends into anyOf/oneOf
        line = _describe(best if best is not None else error)
        if line not in problems:
            problems.append(line)
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:  # all of them at once: a user fixes a config in one pass, not one per run
        raise ConfigError(f"{len(problems)} problems: " + "; ".join(problems))
    return cfg


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _config_key(config: Mapping[str, Any]) -> str:
    """The config's digest, with the code that validates it (this module)."""
    text = json.dumps(config, sort_keys=True, default=repr)
    return _digest(text.encode() + Path(__file__).read_bytes())


def _read_files(paths: list[str]) -> dict[str, str] | None:
    """Each path's content digest; None when one cannot be read."""
    try:
        return {p: _digest(Path(p).read_bytes()) for p in paths}
    except OSError:
        return None


def validate_config_cached(
    config: dict[str, Any], schema_path: str | Path, cache: str | Path
) -> dict[str, Any]:
    """:func:`validate_config`, skipped when ``cache`` (a json file) holds the validated copy of
    the same config against the same schema files (their contents) by the same code.

    Every parse of the workflow validates its config; a rerun with nothing to do saves the
    validation and the import of jsonschema (about 0.3 s of CPU). A config that fails is never
    cached, so its errors are raised on every parse; a validated config that JSON cannot hold
    exactly (tuples, non-string keys) is not cached either.
    """
    cpath = Path(cache)
    key = _config_key(config)
    try:
        obj = json.loads(cpath.read_text())
        if obj["key"] == key and _read_files(list(obj["schema"])) == obj["schema"]:
            return obj["config"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    loaded: list[Path] = []
    cfg = validate_config(config, schema_path, loaded)
    files = _read_files([str(Path(schema_path).resolve()), *map(str, loaded)])
    text = json.dumps({"key": key, "schema": files, "config": cfg})
    if files is not None and json.loads(text)["config"] == cfg:
        try:
            cpath.parent.mkdir(parents=True, exist_ok=True)
            tmp = cpath.with_name(f".{cpath.name}.{os.getpid()}.tmp")
            tmp.write_text(text)
            tmp.replace(cpath)  # atomic: parallel parses read the old file or the new one
        except OSError:
            pass
    return cfg


def check_zoos(cfg: dict[str, Any]) -> None:
    """What the schema cannot say about `zoos`: a zoo is either a model zoo (`dataset`, a
    configured dataset, with `sheet` or `grid`) or a prediction zoo (`predictions`, a folder,
    with none of those). Raises ConfigError naming every bad zoo at once."""
    problems = []
    for name, z in cfg["zoos"].items():
        if z.get("predictions"):
            extra = [k for k in ("dataset", "sheet", "grid") if z.get(k)]
            if extra:
                problems.append(
                    f"config key 'zoos.{name}': a prediction zoo (`predictions`) takes its models, "
                    f"test sets and labels from its folder; remove {extra}"
                )
        elif not z.get("dataset"):
            problems.append(
                f"config key 'zoos.{name}.dataset' is required (or give `predictions`, a folder "
                "of arrays, for a prediction zoo)"
            )
        elif z["dataset"] not in cfg["datasets"]:
            problems.append(
                f"config key 'zoos.{name}.dataset': value {z['dataset']!r} is not a configured "
                f"dataset; configured: {sorted(cfg['datasets'])}"
            )
    if len(problems) == 1:
        raise ConfigError(problems[0])
    if problems:
        raise ConfigError(f"{len(problems)} problems: " + "; ".join(problems))


def schema_rows(schema_path: str | Path) -> list[tuple[str, str, str, str]]:
    """Flatten the schema into (key, type, default, description) rows, $refs resolved.

    Objects with free-form names (datasets, zoos) appear as ``datasets.<name>.source``.
    """
    # deferred: see load_schema
    from referencing import Resource
    from referencing.jsonschema import DRAFT202012

    schema, registry = load_schema(schema_path)
    registry = registry.with_resource(schema["$id"], Resource.from_contents(schema, DRAFT202012))
    root_resolver = registry.resolver(base_uri=schema["$id"])
    rows: list[tuple[str, str, str, str]] = []

    def walk(node: dict[str, Any], resolver: Any, prefix: str) -> None:
        if "$ref" in node:
            resolved = resolver.lookup(node["$ref"])
            node, resolver = resolved.contents, resolved.resolver
        if prefix:
            default = node.get("default")
            shown = "default" in node and not (isinstance(default, dict) and default)
            default_text = repr(default) if shown else ""
            rows.append((prefix, str(node.get("type", "")), default_text,
                         " ".join(str(node.get("description", "")).split())))
        for name, sub in node.get("properties", {}).items():
            walk(sub, resolver, f"{prefix}.{name}" if prefix else name)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra.get("properties"):
            walk(extra, resolver, f"{prefix}.<name>")

    walk(schema, root_resolver, "")
    return rows


def render_schema_markdown(schema_path: str | Path) -> str:
    """The user's parameter table (config/README.md body) generated from the schema."""
    lines = [
        "| key | type | default | description |",
        "|---|---|---|---|",
    ]
    for key, typ, default, desc in schema_rows(schema_path):
        lines.append(f"| `{key}` | {typ} | {default.replace('|', '/')} | {desc.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":  # python -m labelfree.config config/schema.yaml > table.md
    import sys

    print(render_schema_markdown(sys.argv[1] if len(sys.argv) > 1 else "config/schema.yaml"), end="")


def default_zoo_missing(study: str, zoo: str, user: Mapping[str, Any]) -> str | None:
    """A study's zoo that is not configured: a one-line skip reason when ``<study>.zoo`` took its
    default (``user``: the study's config as the user wrote it), else None (the study's plan
    raises its error on an explicit name, a typo)."""
    if "zoo" in user:
        return None
    return (f"its zoo {zoo!r} (the default of {study}.zoo) is not configured; set {study}.zoo "
            f"to a zoo built for it (see config/config.yaml) or {study}.enabled: false")
