"""Tool-call arguments checked against a JSON schema: the one validator of the project.

Arguments arrive from a model, so they are untrusted. `check_arguments` refuses unknown and
missing arguments and converts each value to its schema type (`coerce`: XML parameters arrive as
text); `ToolError` says what was expected and what came, and goes back to the model as the call's
result instead of ending the session. The parser (`protocol.formats.parse_completion`, given the
tools' schemas) and the tools themselves (`tools.base.Tool.bind`, before a tool runs) call the
same function, so a call the parser accepts is one the tool accepts.

Two slips of a small model are converted rather than refused, because the meaning is certain: a
list of exactly one text where one text is due (`_one_text`), and a year-first date where the
parameter's description declares another date format (`protocol.date_formats`).

An explicit null is "not given", everywhere: for an optional parameter its default applies (the key
is dropped); for a required one it is a missing argument.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from botpsy.protocol.date_formats import in_declared_format


class ToolError(Exception):
    """A call the tool refused: the message goes back to the model as the tool's result."""


class _BadSchema(Exception):
    """A part of a tool's schema that JSON Schema does not allow there (becomes a ToolError)."""


def shown(value: Any, limit: int = 80) -> str:
    """A short rendering of an untrusted value for an error message; never raises.

    `json.dumps` and `repr` raise on integers past Python's 4,300-digit limit and on deeply
    nested lists, which is exactly the input an error message has to describe.
    """
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        text = repr(text) if isinstance(value, str) else text
    except (ValueError, TypeError, RecursionError):
        if isinstance(value, int):
            return f"an integer of about {value.bit_length() * 3 // 10 + 1} digits"
        return f"a {type(value).__name__} too large to show"
    return text if len(text) <= limit else text[: limit - 1] + "…"


# SQLite's INTEGER and every id, count and amount a tool takes fit in 64 bits; a longer integer
# is a model's garbage, and past 4,300 digits Python cannot even print it.
MAX_INT = 2**63 - 1


def coerce(value: Any, schema: dict[str, Any], where: str) -> Any:
    """Convert a value (often text from an XML parameter) to the schema's type, or raise ToolError.

    `None` at the top level is "not given" (the caller applies the default); inside an array it is
    an item of the wrong type, refused like any other.
    """
    if value is None:
        return None
    if not isinstance(schema, dict):
        raise _BadSchema(f"the schema of {where} is a {type(schema).__name__}, not an object")
    kind, given = schema.get("type"), value
    try:
        if kind == "string":
            value = _one_text(value, schema.get("description"))
            if isinstance(value, (dict, list)):
                raise ValueError
            value = in_declared_format(str(value), schema.get("description", ""))
        elif kind == "integer":
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            elif isinstance(value, str):
                value = int(value.strip())
            elif not isinstance(value, int):
                raise ValueError
            if abs(value) > MAX_INT:
                raise ToolError(f"{where}: expected an integer of at most 19 digits, got {shown(value)}")
        elif kind == "number":
            if isinstance(value, bool):
                raise ValueError
            value = float(value.strip()) if isinstance(value, str) else float(value)
            if not math.isfinite(value):
                raise ValueError
        elif kind == "boolean":
            if isinstance(value, str):
                low = value.strip().lower()
                if low not in ("true", "false"):
                    raise ValueError
                value = low == "true"
            elif not isinstance(value, bool):
                raise ValueError
        elif kind == "array":
            if isinstance(value, str):
                value = json.loads(value)
            if not isinstance(value, list):
                raise ValueError
            items = schema.get("items", {})
            if not isinstance(items, dict):
                raise _BadSchema(f"the items of {where} are a {type(items).__name__}, not a schema")
            if any(v is None for v in value) and items.get("type") not in (None, "null"):
                raise ToolError(f"{where}: expected an array of {items.get('type')}, got null in it")
            value = [coerce(v, items, f"{where}[]") for v in value]
        elif kind == "object":
            if isinstance(value, str):
                value = json.loads(value)
            if not isinstance(value, dict):
                raise ValueError
    except (ValueError, TypeError, OverflowError, RecursionError):
        raise ToolError(f"{where}: expected {kind}, got {shown(given)}") from None
    if "enum" in schema and not isinstance(schema["enum"], list):
        raise _BadSchema(f"the enum of {where} is not a list")
    if "enum" in schema and value not in schema["enum"]:
        raise ToolError(f"{where}: expected one of {schema['enum']}, got {shown(value)}")
    return value


_LIST_TEXT = re.compile(r"\b(?:json|lists?|arrays?)\b", re.I)


def _one_text(value: Any, description: Any = None) -> Any:
    """A list of exactly one text, given where one text is due, as that text: a small model wraps
    an address in brackets (`["andy@gorilla.ai"]` for `to_address`), as a list or as the JSON of
    one. Several items stay as they are (which separator would join them is not known), and so
    does everything where the description speaks of JSON, a list or an array: such a tool may
    take a list's text in its text parameter."""
    items = value
    if isinstance(value, str) and value.strip().startswith("["):
        try:
            items = json.loads(value)
        except (ValueError, RecursionError):
            return value
    if not (isinstance(items, list) and len(items) == 1 and isinstance(items[0], str)):
        return value
    if isinstance(description, str) and _LIST_TEXT.search(description):
        return value  # only a value that would change pays for reading the description
    return items[0]


def check_arguments(name: str, parameters: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """`arguments` validated against the function's `parameters` schema and converted; or ToolError.

    The schema itself can be broken too (an MCP server's, a client's): a part of it that is not
    what JSON Schema allows there is a ToolError naming the tool, never an exception of another
    kind (issue 36, item 9: 644 of 3,000 fuzzed completions escaped the parser that way)."""
    try:
        return _check(name, parameters, arguments)
    except (_BadSchema, AttributeError, TypeError, KeyError) as e:
        raise ToolError(
            f"{name}: the tool's parameter schema is malformed ({' '.join(str(e).split())[:100]}); "
            "the call cannot be checked"
        ) from None


def _check(name: str, parameters: dict[str, Any], arguments: Any) -> dict[str, Any]:
    if not isinstance(parameters, dict) or not isinstance(parameters.get("properties", {}), dict):
        raise _BadSchema("parameters must be an object whose properties are an object")
    if not isinstance(arguments, dict):
        raise ToolError(f"{name}: arguments must be an object, got {type(arguments).__name__}")
    props = parameters.get("properties", {})
    unknown = sorted(set(arguments) - set(props))
    if unknown:
        raise ToolError(
            f"{name}: unknown argument(s) {', '.join(unknown)}; expected some of {', '.join(props)}"
        )
    required = parameters.get("required", [])
    if not isinstance(required, list) or not all(isinstance(p, str) for p in required):
        raise _BadSchema("required must be a list of names")
    missing = [p for p in required if arguments.get(p) is None]
    if missing:
        raise ToolError(f"{name}: missing required argument(s) {', '.join(missing)}")
    bound = {}
    for key, value in arguments.items():
        # An explicit null for an optional parameter means "not given": its default applies.
        if value is None:
            continue
        bound[key] = coerce(value, props[key], f"{name}.{key}")
    return bound
