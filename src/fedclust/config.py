"""Config loading and validation with messages that name the key and the allowed values.

The Snakefile calls :func:`validate_config` at start; the same function is unit-tested.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from .errors import ConfigError

SCHEMA = Path(__file__).resolve().parents[2] / "config" / "schema.yaml"


def load_yaml(path: str | os.PathLike) -> dict[str, Any]:
    with open(path) as fh:
        return yaml.safe_load(fh) or {}


def _schema_at(schema: dict[str, Any], path: list[Any]) -> dict[str, Any]:
    node = schema
    for key in path:
        props = node.get("properties", {})
        if isinstance(key, str) and key in props:
            node = props[key]
        elif "additionalProperties" in node and isinstance(node["additionalProperties"], dict):
            node = node["additionalProperties"]
        elif "items" in node:
            node = node["items"]
        else:
            return {}
    return node


def _describe(err: jsonschema.ValidationError, schema: dict[str, Any], source: str) -> ConfigError:
    key = ".".join(str(p) for p in err.absolute_path) or "<top level>"
    if err.validator == "additionalProperties":
        node = _schema_at(schema, list(err.absolute_path))
        allowed = sorted(node.get("properties", {}))
        extra = sorted(set(err.instance) - set(allowed))
        hints = []
        for e in extra:
            close = difflib.get_close_matches(e, allowed, n=1)
            hints.append(f"'{e}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
        return ConfigError(
            f"unknown config key {', '.join(hints)} under '{key}'",
            where=f"{source}: {key}",
            fix=f"allowed keys under '{key}': {', '.join(allowed)}",
        )
    if err.validator == "enum":
        return ConfigError(
            f"config key '{key}' = {err.instance!r} is not an allowed value",
            where=source,
            fix=f"use one of: {', '.join(map(repr, err.validator_value))}",
        )
    if err.validator == "required":
        return ConfigError(
            f"config is missing a required key: {err.message}",
            where=f"{source}: {key}",
            fix="add it (see config/config.yaml for an example)",
        )
    if err.validator == "type":
        return ConfigError(
            f"config key '{key}' = {err.instance!r} has the wrong type",
            where=source,
            fix=f"it must be of type {err.validator_value}",
        )
    return ConfigError(
        f"config key '{key}': {err.message}",
        where=source,
        fix="see config/schema.yaml for the allowed values",
    )


def validate_config(
    config: dict[str, Any], schema_path: str | os.PathLike = SCHEMA, source: str = "config"
) -> dict[str, Any]:
    """Validate ``config`` against the schema and fill in defaults; raise :class:`ConfigError`."""
    schema = load_yaml(schema_path)
    validator_cls = jsonschema.validators.validator_for(schema)
    errors = sorted(validator_cls(schema).iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        raise _describe(errors[0], schema, source)
    _fill_defaults(config, schema)
    return config


def _fill_defaults(config: dict[str, Any], schema: dict[str, Any]) -> None:
    for key, sub in schema.get("properties", {}).items():
        if key not in config and "default" in sub:
            config[key] = sub["default"]
        if isinstance(config.get(key), dict):
            _fill_defaults(config[key], sub)


def data_mirror(config: dict[str, Any]) -> Path | None:
    """The offline data mirror: config ``data.mirror``, else env ``FEDCLUST_DATA_MIRROR``."""
    value = config.get("data", {}).get("mirror") or os.environ.get("FEDCLUST_DATA_MIRROR")
    return Path(value).expanduser().resolve() if value else None
