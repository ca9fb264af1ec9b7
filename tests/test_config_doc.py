"""config/README.md is generated from config/schema.yaml and must be current."""

from __future__ import annotations

from fedclust.config import SCHEMA, load_yaml
from fedclust.config_doc import COMMAND, README, render, rows, type_of, undocumented

REGENERATE = f"regenerate it with `PYTHONPATH=src {COMMAND}` (rewrites config/README.md)"


def test_config_readme_is_current():
    expected = render(load_yaml(SCHEMA))
    current = README.read_text() if README.exists() else ""
    assert current == expected, f"config/README.md is stale: {REGENERATE}"


def test_every_schema_key_has_a_description():
    missing = undocumented(load_yaml(SCHEMA))
    assert not missing, f"add a `description:` in config/schema.yaml to: {missing}; {REGENERATE}"


def test_rows_and_types_of_a_small_schema():
    schema = {
        "properties": {
            "a": {"type": "integer", "minimum": 1, "default": 2, "description": "A"},
            "b": {
                "type": "object",
                "additionalProperties": {
                    "type": "object",
                    "properties": {"k": {"enum": ["x", "y"], "description": "K"}},
                },
            },
            "c": {
                "type": "array",
                "items": {"type": "object", "properties": {"kind": {"type": "string"}}},
            },
        }
    }
    assert [k for k, _ in rows(schema, "")] == ["a", "b", "b.<name>", "b.<name>.k", "c", "c[].kind"]
    assert type_of(schema["properties"]["a"]) == "integer (≥ 1)"
    assert type_of({"type": "array", "items": {"type": "number"}}) == "list of number"
    assert (
        type_of({"oneOf": [{"enum": ["DEC"]}, {"type": "integer"}]}) == "one of: `DEC` or integer"
    )
    assert undocumented(schema) == ["b", "c", "c[].kind"]
    text = render(schema)
    assert "## `a`\n\nA. Type: integer (≥ 1).\n" in text
    assert "| `b.<name>.k` | one of: `x`, `y` |  | K |" in text
    assert "| `c[].kind` | string |  |  |" in text
