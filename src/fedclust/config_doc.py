"""Generate ``config/README.md`` (every config key) from ``config/schema.yaml``.

    python -m fedclust.config_doc            # rewrite config/README.md
    python -m fedclust.config_doc --check    # exit 1 if config/README.md is stale

The schema is the single source: each key's type, allowed values, default and ``description``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .config import SCHEMA, load_yaml

README = SCHEMA.resolve().parent / "README.md"  # config/README.md (the schema is a symlink)
COMMAND = "python -m fedclust.config_doc"

HEADER = f"""# Configuration keys

Generated from `config/schema.yaml` by `{COMMAND}`; do not edit by hand (CI checks that this file
is current). `config/config.yaml` is the default (offline, small) configuration and
`config/thesis.yaml` the full reproduction; the workflow validates the config against the schema
at start, and `fedclust check-config FILE` checks a file without running anything.

`<name>` stands for a key you choose (a split, a dataset, a rule name), `[]` for each element of a
list. Defaults are filled in when a key is left out.
"""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _bounds(node: dict[str, Any]) -> list[str]:
    out = []
    for key, sym in (
        ("minimum", "≥"),
        ("exclusiveMinimum", ">"),
        ("maximum", "≤"),
        ("exclusiveMaximum", "<"),
    ):
        if key in node and not isinstance(node[key], bool):
            out.append(
                f"{sym} {node[key]:g}" if isinstance(node[key], float) else f"{sym} {node[key]}"
            )
    if "pattern" in node:
        out.append(f"matches `{node['pattern']}`")
    if node.get("minItems"):
        out.append(f"≥ {node['minItems']} items")
    return out


def type_of(node: dict[str, Any]) -> str:
    """Short human type: ``integer ≥ 1``, ``one of: a, b``, ``list of number``."""
    if "enum" in node:
        return "one of: " + ", ".join(f"`{v}`" if v is not None else "`null`" for v in node["enum"])
    if "const" in node:
        return f"`{node['const']}`"
    if "oneOf" in node or "anyOf" in node:
        return " or ".join(type_of(alt) for alt in node.get("oneOf", node.get("anyOf")))
    kind = node.get("type", "object" if "properties" in node else "any")
    kinds = kind if isinstance(kind, list) else [kind]
    words = []
    for k in kinds:
        if k == "array" and isinstance(node.get("items"), dict):
            words.append(f"list of {type_of(node['items'])}")
        else:
            words.append(str(k))
    text = " or ".join(words)
    bounds = _bounds(node)
    return f"{text} ({', '.join(bounds)})" if bounds else text


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def rows(node: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """(dotted key, schema node) for ``node``'s children, depth first in schema order."""
    for key, sub in node.get("properties", {}).items():
        child = f"{path}.{key}" if path else key
        yield child, sub
        yield from rows(sub, child)
        items = sub.get("items")
        if isinstance(items, dict) and ("properties" in items or "additionalProperties" in items):
            yield from rows(items, f"{child}[]")
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        child = f"{path}.<name>"
        yield child, extra
        yield from rows(extra, child)


def undocumented(schema: dict[str, Any]) -> list[str]:
    """Keys without a ``description`` (``<name>`` and list-element entries excepted)."""
    return [
        key
        for key, node in rows(schema, "")
        if not node.get("description") and not key.endswith("<name>")
    ]


def render(schema: dict[str, Any]) -> str:
    """The Markdown text of ``config/README.md``."""
    out = [HEADER]
    top = schema.get("properties", {})
    required = set(schema.get("required", []))
    for key, node in top.items():
        out.append(f"\n## `{key}`\n")
        need = " (required)" if key in required else ""
        out.append(f"{_cell(node.get('description', ''))}{need}. Type: {type_of(node)}.\n")
        table = list(rows({"properties": {key: node}}, ""))[1:]
        if not table:
            continue
        out.append("\n| key | type | default | description |\n|---|---|---|---|")
        for path, sub in table:
            default = f"`{_cell(_json(sub['default']))}`" if "default" in sub else ""
            out.append(
                f"| `{path}` | {_cell(type_of(sub))} | {default} | "
                f"{_cell(sub.get('description', ''))} |"
            )
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    p.add_argument("--schema", type=Path, default=SCHEMA)
    p.add_argument("--out", type=Path, default=README)
    p.add_argument("--check", action="store_true", help="exit 1 if --out is not current")
    args = p.parse_args(argv)
    schema = load_yaml(args.schema)
    text = render(schema)
    missing = undocumented(schema)
    if missing:
        print(f"keys without a description in {args.schema}: {', '.join(missing)}", file=sys.stderr)
    if args.check:
        current = args.out.read_text() if args.out.exists() else ""
        if current != text:
            print(f"{args.out} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
