"""Tool schemas from a `botpsy serve` client, checked at the edge before anything uses them.

A client's `tools` go to three places that trust their shape: the prompt (rendered as JSON), the
parser (`protocol.arguments.check_arguments` walks `properties`, `required`, `items`, `enum`) and
the call grammar (`engine.grammar.tool_call_gbnf`). Before this module a schema whose
`properties` was a list, whose `items` was a string or whose `required` named nothing crashed one
of them: an HTTP 500, or an error inside an HTTP 200 stream (issue 36, item 9). Here every
schema is checked once, recursively, and anything the rest of the server would trip on is a
`BadRequest` (400) naming the path, what was expected and what came.

What is accepted is the JSON Schema that OpenAI-style clients send: `type` one of the seven JSON
types (or a list of them), `properties` an object of schemas, `required` a list of declared
names, `items` one schema, `enum` a non-empty list, `anyOf` / `oneOf` / `allOf` lists of schemas,
`additionalProperties` a boolean or a schema; other keywords (`description`, `format`, `minimum`,
`$ref`, …) pass through as documentation. Names must fit the chat formats: a function name or a
parameter name appears inside `<function=…>` / `<parameter=…>` tags, so it is OpenAI's function
name pattern (letters, digits, `_`, `-`) plus `.` for MCP-style names, at most 64 characters.
Depth is capped so that no recursive walk downstream can exhaust the stack.
"""

from __future__ import annotations

import re
from typing import Any

from botpsy.serve_errors import BadRequest, kind_of

__all__ = ["MAX_DEPTH", "check_function", "check_schema"]

NAME_RE = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")
MAX_DEPTH = 24  # nesting of schemas; real tool schemas stay under 6
SCHEMA_LISTS = ("anyOf", "oneOf", "allOf")


def _name(value: Any, where: str, what: str) -> str:
    if not isinstance(value, str) or not NAME_RE.fullmatch(value):
        shown = repr(value)[:80] if isinstance(value, str) else kind_of(value)
        raise BadRequest(f"{where} must be a {what} of 1 to 64 letters, digits, '_', '-' or '.', got {shown}")
    return value


def _type(value: Any, where: str) -> None:
    kinds = value if isinstance(value, list) else [value]
    if not kinds or not all(isinstance(k, str) and k in JSON_TYPES for k in kinds):
        raise BadRequest(
            f"{where}.type must be one of {', '.join(JSON_TYPES)} (or a list of them), "
            f"got {repr(value)[:80] if isinstance(value, (str, list)) else kind_of(value)}"
        )
    if len(set(kinds)) != len(kinds):
        raise BadRequest(f"{where}.type lists a type twice: {value!r}"[:300])


def check_schema(schema: Any, where: str, depth: int = 0, tag_names: bool = True) -> None:
    """Raise BadRequest unless `schema` is a JSON schema the server can render, parse and constrain.

    `tag_names`: property names must fit a `<parameter=…>` tag (tool parameters); a response
    format's JSON keys may be any string."""
    if not isinstance(schema, dict):
        raise BadRequest(f"{where} must be a JSON schema object, got {kind_of(schema)}")
    if depth > MAX_DEPTH:
        raise BadRequest(f"{where}: the schema is nested more than {MAX_DEPTH} levels deep")
    if "type" in schema:
        _type(schema["type"], where)
    for key in ("description", "title"):
        if key in schema and not isinstance(schema[key], str):
            raise BadRequest(f"{where}.{key} must be a string, got {kind_of(schema[key])}")
    # A keyword that is present must be valid, null included: the parser reads `required: null`
    # as a list to walk, `items: null` as a schema.
    props = schema.get("properties")
    if "properties" in schema:
        if not isinstance(props, dict):
            raise BadRequest(f"{where}.properties must be an object of schemas, got {kind_of(props)}")
        for name, sub in props.items():
            if tag_names:
                _name(name, f"{where}.properties key", "parameter name")
            check_schema(sub, f"{where}.properties.{name[:64]}", depth + 1, tag_names)
    required = schema.get("required")
    if "required" in schema:
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise BadRequest(f"{where}.required must be a list of property names, got {kind_of(required)}")
        unknown = [r for r in required if r not in (props or {})]
        if unknown:
            raise BadRequest(
                f"{where}.required names {', '.join(map(repr, unknown[:5]))}"[:200]
                + f", which {where}.properties does not declare; declare them or drop them from required"
            )
        if len(set(required)) != len(required):
            raise BadRequest(f"{where}.required lists a name twice")
    if "items" in schema:
        check_schema(schema["items"], f"{where}.items", depth + 1, tag_names)
    if "enum" in schema:
        enum = schema["enum"]
        if not isinstance(enum, list) or not enum:
            raise BadRequest(f"{where}.enum must be a non-empty list of values, got {kind_of(enum)}")
    for key in SCHEMA_LISTS:
        if key in schema:
            subs = schema[key]
            if not isinstance(subs, list) or not subs:
                raise BadRequest(f"{where}.{key} must be a non-empty list of schemas, got {kind_of(subs)}")
            for i, sub in enumerate(subs):
                check_schema(sub, f"{where}.{key}[{i}]", depth + 1, tag_names)
    extra = schema.get("additionalProperties", True)
    if not isinstance(extra, bool):
        check_schema(extra, f"{where}.additionalProperties", depth + 1, tag_names)


def check_function(tool: Any, i: int) -> str:
    """Check one entry of `tools` (`{"type": "function", "function": {...}}`); returns its name."""
    where = f"tools[{i}]"
    if not isinstance(tool, dict):
        raise BadRequest(
            f"{where} must be {{'type': 'function', 'function': {{'name': …}}}}, got {kind_of(tool)}"
        )
    if tool.get("type", "function") != "function":
        raise BadRequest(f"{where}.type must be 'function', got {tool.get('type')!r}"[:300])
    fn = tool.get("function")
    if not isinstance(fn, dict):
        raise BadRequest(f"{where} must be {{'type': 'function', 'function': {{'name': …}}}}")
    name = _name(fn.get("name"), f"{where}.function.name", "function name")
    if "description" in fn and fn["description"] is not None and not isinstance(fn["description"], str):
        raise BadRequest(f"{where}.function.description must be a string, got {kind_of(fn['description'])}")
    params = fn.get("parameters")
    if params is None:
        return name
    where = f"{where}.function.parameters"
    if not isinstance(params, dict):
        raise BadRequest(f"{where} must be a JSON schema object, got {kind_of(params)}")
    if params.get("type", "object") != "object":
        raise BadRequest(
            f"{where}.type must be 'object' (arguments are named), got {repr(params.get('type'))[:80]}"
        )
    check_schema(params, where)
    return name
