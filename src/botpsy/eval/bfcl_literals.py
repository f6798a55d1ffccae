"""Java and JavaScript source literals for BFCL's gold values (the oracle's side only).

In BFCL's simple_java and simple_javascript categories a model answers every argument as a
string of source code ("new ArrayList<>(Arrays.asList(101L, 202L))", "{limit: 50}"), and the
checker parses those strings back into values before comparing them with the possible answers,
which are stored as plain values. To feed the ground truth through the same path as a model, the
oracle writes each gold value as the source literal a correct model would write for the declared
Java/JavaScript type.
"""

from __future__ import annotations

import json
from typing import Any


def _num(v: Any) -> str:
    return str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)


def java_literal(value: Any, jtype: str, nested: str | None = None) -> str:
    if isinstance(value, str) and jtype not in ("Array", "ArrayList", "HashMap"):
        return value
    if jtype == "boolean":
        return "true" if value else "false"
    if jtype == "long":
        return f"{int(value)}L"
    if jtype == "float":
        return f"{value}f"
    if jtype == "double":
        return str(float(value))
    if jtype in ("integer", "byte", "short"):
        return str(int(value))
    if jtype == "ArrayList" and isinstance(value, list):
        if not value:
            return "new ArrayList<>()"
        items = ", ".join(_java_element(v, nested) for v in value)
        return f"new ArrayList<>(Arrays.asList({items}))"
    if jtype == "Array" and isinstance(value, list):
        items = ", ".join(_java_array_element(v, nested) for v in value)
        return f"new {_java_type_name(nested)}[]{{{items}}}"
    if jtype == "HashMap" and isinstance(value, dict):
        if not value:
            return "new HashMap<>()"
        puts = " ".join(f'put("{k}", {_java_value(v)});' for k, v in value.items())
        return f"new HashMap<String, Object>() {{{{ {puts} }}}}"
    return value if isinstance(value, str) else json.dumps(value)


def _java_type_name(t: str | None) -> str:
    return {
        "integer": "int",
        "String": "String",
        "long": "long",
        "double": "double",
        "boolean": "boolean",
    }.get(t or "", t or "Object")


def _java_element(v: Any, nested: str | None) -> str:
    if nested == "String":
        return f'"{v}"'
    if nested == "char":
        return f"'{v}'"
    if nested:
        return java_literal(v, nested)
    return _java_value(v)


def _java_array_element(v: Any, nested: str | None) -> str:
    # Array elements go through the typed converter, which keeps String elements as written.
    if nested in ("String", "any", None) and isinstance(v, str):
        return v
    return java_literal(v, nested) if nested else _java_value(v)


def _java_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return _num(v)


def js_literal(value: Any, jstype: str, nested: str | None = None) -> str:
    if jstype == "String":
        return value if isinstance(value, str) else json.dumps(value)
    if jstype == "Boolean":
        return "true" if value else "false"
    if jstype == "Bigint":
        return f"{int(value)}n"
    if jstype in ("integer", "float"):
        return _num(value) if jstype == "integer" else str(value)
    if jstype == "array" and isinstance(value, list):
        return "[" + ", ".join(_js_value(v) for v in value) + "]"
    if jstype == "dict" and isinstance(value, dict):
        if not value:
            return "{}"
        return "{" + ", ".join(f"{k}: {_js_value(v)}" for k, v in value.items()) + "}"
    return value if isinstance(value, str) else json.dumps(value)


def _js_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list):
        return "[" + ", ".join(_js_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_js_value(x)}" for k, x in v.items()) + "}"
    return _num(v)


def source_literal(language: str, value: Any, schema: dict[str, Any]) -> str:
    """`value` written as `language` ("java" or "javascript") source for a parameter of `schema`."""
    t = schema.get("type", "String")
    nested = (schema.get("items") or {}).get("type")
    return java_literal(value, t, nested) if language == "java" else js_literal(value, t, nested)
