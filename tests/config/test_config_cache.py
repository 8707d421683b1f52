"""validate_config_cached: a parse of the workflow reuses the validated config of an earlier parse
only when the config, every schema file it read and the validating code are the same; a config
that fails is never reused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml

from labelfree.config import ConfigError, validate_config, validate_config_cached


@pytest.fixture
def schema(repo_root, tmp_path):
    """A copy of config/schema.yaml and its parts (so that a test may edit one)."""
    shutil.copytree(repo_root / "config" / "schema", tmp_path / "config" / "schema")
    shutil.copy(repo_root / "config" / "schema.yaml", tmp_path / "config" / "schema.yaml")
    return tmp_path / "config" / "schema.yaml"


@pytest.mark.parametrize("name", ["config/config.yaml", ".test/config/config.yaml"])
def test_cached_equals_validated_in_order(repo_root, schema, tmp_path, name):
    cfg = yaml.safe_load((repo_root / name).read_text())
    cache = tmp_path / "cache.json"
    want = validate_config(cfg, schema)
    first = validate_config_cached(cfg, schema, cache)
    assert cache.exists()
    second = validate_config_cached(cfg, schema, cache)  # from the cache
    for got in (first, second):
        assert got == want
        # dict order decides the order of zoos, datasets and jobs in the graph
        assert json.dumps(got) == json.dumps(want)


def test_a_hit_is_read_from_the_cache(schema, tmp_path):
    cache = tmp_path / "cache.json"
    validate_config_cached({"seed": 3}, schema, cache)
    obj = json.loads(cache.read_text())
    obj["config"]["marker"] = "from the cache"
    cache.write_text(json.dumps(obj))
    assert validate_config_cached({"seed": 3}, schema, cache)["marker"] == "from the cache"


def test_changed_config_or_schema_file_revalidates(schema, tmp_path):
    cache = tmp_path / "cache.json"
    assert validate_config_cached({"seed": 3}, schema, cache)["seed"] == 3
    assert validate_config_cached({"seed": 4}, schema, cache)["seed"] == 4
    # a default changed in a $ref'd part (not the root file) is seen
    part = schema.parent / "schema" / "inference.yaml"
    before = validate_config_cached({"seed": 4}, schema, cache)["inference"]["batch_size"]
    text = part.read_text()
    lines = text.splitlines()
    i = next(n for n, line in enumerate(lines) if line.strip() == "batch_size:")
    j = next(n for n in range(i, len(lines)) if lines[n].strip().startswith("default:"))
    lines[j] = lines[j].split("default:")[0] + f"default: {before + 7}"
    part.write_text("\n".join(lines) + "\n")
    assert validate_config_cached({"seed": 4}, schema, cache)["inference"]["batch_size"] == before + 7


def test_a_bad_config_fails_every_time(schema, tmp_path):
    cache = tmp_path / "cache.json"
    validate_config_cached({"seed": 3}, schema, cache)
    for _ in range(2):
        with pytest.raises(ConfigError, match="seed"):
            validate_config_cached({"seed": "three"}, schema, cache)


def test_a_corrupt_cache_is_ignored(schema, tmp_path):
    cache = tmp_path / "cache.json"
    cache.write_text('{"key": ')
    assert validate_config_cached({"seed": 3}, schema, cache)["seed"] == 3
    assert json.loads(cache.read_text())["config"]["seed"] == 3


def test_a_parse_from_the_cache_imports_no_jsonschema(schema, tmp_path):
    """The point of the cache: the import of jsonschema (about 0.1 s) is skipped too."""
    cache = tmp_path / "cache.json"
    validate_config_cached({"seed": 3}, schema, cache)
    code = (
        "import sys; from labelfree.config import validate_config_cached as v; "
        f"v({{'seed': 3}}, {str(schema)!r}, {str(cache)!r}); "
        "print('jsonschema' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
