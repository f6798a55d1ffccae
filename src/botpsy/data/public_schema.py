"""Tool lists and call syntax of public tool-use datasets, turned into botpsy's own types.

Public datasets each write tools and calls their own way:

* xLAM/APIGen lists a tool's parameters as a flat mapping ``{arg: {"type": "List[int]",
  "description", "default"?}}`` with Python-style type names (``str, optional``, ``Optional[str]``).
* ToolACE and When2Call use JSON-schema-like ``parameters`` but with Python names (``dict``,
  ``float``), and ToolACE writes calls as Python-like text: ``[get_weather(city="Oslo"), f(n=3)]``.
* When2Call writes calls as ``<TOOLCALL>[{"name": …, "arguments": {…}}]</TOOLCALL>``.

`tool_schema` turns any of those tool descriptions into the OpenAI-style schema `Tool.schema()`
returns (``{"type": "function", "function": {name, description, parameters}}`` with a JSON
schema ``{"type": "object", "properties", "required"}``), which `ChatFormat.system` renders.

Call text is parsed with `ast` and a literal-only walk of the tree, never `eval`: the data comes
from the internet. Anything that is not a name=literal call raises `BadRow`, which the loader
reports and skips.
"""

from __future__ import annotations

import ast
import json
import keyword
import re
from typing import Any

from botpsy.protocol.messages import ToolCall


class BadRow(ValueError):
    """A dataset row that does not fit its shape; the loader logs the message and skips the row."""


_JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}
_PY_TYPES = {
    "str": "string",
    "text": "string",
    "int": "integer",
    "long": "integer",
    "float": "number",
    "double": "number",
    "decimal": "number",
    "bool": "boolean",
    "list": "array",
    "tuple": "array",
    "set": "array",
    "sequence": "array",
    "dict": "object",
    "map": "object",
    "mapping": "object",
    "none": "null",
    "nonetype": "null",
}


def _split_top(text: str) -> list[str]:
    """Split on commas outside brackets: "Dict[str, int], str" -> ["Dict[str, int]", "str"]."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


def type_schema(text: str) -> tuple[dict[str, Any], bool]:
    """JSON schema of a type name as the datasets write it, and whether it marks the argument optional.

    "List[int]" -> array of integer; "str, optional" and "Optional[str]" -> string, optional;
    "Union[int, float]" -> number; "Any" -> no constraint; an unknown name -> string (the value
    arrives as text in the call format, so string is the one type that never rejects it).
    """
    t = text.strip()
    optional = False
    if t.lower().endswith(", optional"):
        t, optional = t[: -len(", optional")].strip(), True
    m = re.fullmatch(r"([\w.]+)\s*\[(.*)\]", t, re.S)
    if m:
        head, inner = m.group(1).lower().rpartition(".")[2], _split_top(m.group(2))
        if head == "optional" and inner:
            return type_schema(inner[0])[0], True
        if head == "union":
            kinds = [type_schema(p)[0] for p in inner]
            nullable = any(k.get("type") == "null" for k in kinds)
            kinds = [k for k in kinds if k.get("type") != "null"]
            if len(kinds) == 1:
                return kinds[0], optional or nullable
            names = [k.get("type") for k in kinds]
            if set(names) <= {"integer", "number"}:
                return {"type": "number"}, optional or nullable
            return ({"type": names} if all(names) else {}), optional or nullable
        kind = _PY_TYPES.get(head, head if head in _JSON_TYPES else None)
        if kind == "array":
            return (
                {"type": "array", "items": type_schema(inner[0])[0]} if inner else {"type": "array"}
            ), optional
        if kind == "object":
            return {"type": "object"}, optional
    low = t.lower()
    if low in _JSON_TYPES:
        return {"type": low}, optional
    if low in _PY_TYPES:
        return {"type": _PY_TYPES[low]}, optional
    if low in ("any", ""):
        return {}, optional
    return {"type": "string"}, optional


def _property(spec: Any, where: str) -> dict[str, Any]:
    """One property's schema with JSON type names; other keys (description, enum, default…) kept."""
    if not isinstance(spec, dict):
        raise BadRow(f"{where}: a parameter must be an object, got {type(spec).__name__}")
    kind = spec.get("type")
    out: dict[str, Any] = {}
    if isinstance(kind, str):
        out.update(type_schema(kind)[0])
    elif isinstance(kind, list):
        out["type"] = [type_schema(k)[0].get("type", "string") for k in kind if isinstance(k, str)]
    for key, value in spec.items():
        if key == "type" or value is None:
            continue
        if key == "items" and isinstance(value, dict):
            value = _property(value, where)
        elif key == "properties" and isinstance(value, dict):
            value = {k: _property(v, f"{where}.{k}") for k, v in value.items()}
        out[key] = value
    return out


def tool_schema(raw: Any) -> dict[str, Any]:
    """The OpenAI-style schema of one tool from any of the datasets' tool descriptions."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as e:
            raise BadRow(f"a tool is not valid JSON ({e.msg})") from None
    if not isinstance(raw, dict):
        raise BadRow(f"a tool must be an object, got {type(raw).__name__}")
    fn = raw["function"] if isinstance(raw.get("function"), dict) else raw
    name = fn.get("name")
    if not isinstance(name, str) or not name.strip():
        raise BadRow(f"a tool has no name: {json.dumps(fn)[:80]}")
    params = fn.get("parameters")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise BadRow(f"tool {name}: parameters must be an object, got {type(params).__name__}")
    schema_form = (
        isinstance(params.get("type"), str)
        or isinstance(params.get("required"), list)
        or set(params) == {"properties"}
    )
    if schema_form:
        props = {k: _property(v, f"tool {name}.{k}") for k, v in (params.get("properties") or {}).items()}
        required = params.get("required") or fn.get("required") or []
        required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    else:  # xLAM's flat {arg: {type, description, default?}}
        props, required = {}, []
        for arg, spec in params.items():
            props[arg] = _property(spec, f"tool {name}.{arg}")
            optional = type_schema(spec["type"])[1] if isinstance(spec.get("type"), str) else False
            if "default" not in spec and not optional:
                required.append(arg)
    parameters = {"type": "object", "properties": props, "required": required}
    description = fn.get("description") or ""
    return {
        "type": "function",
        "function": {"name": name, "description": str(description), "parameters": parameters},
    }


def tool_list(raw: Any) -> list[dict[str, Any]]:
    """A row's tools: a list (of objects or JSON strings), or a JSON string of one."""
    if raw is None:
        return []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw.strip() else []
        except json.JSONDecodeError as e:
            raise BadRow(f"'tools' is not valid JSON ({e.msg})") from None
    if not isinstance(raw, list):
        raise BadRow(f"'tools' must be a list, got {type(raw).__name__}")
    return [tool_schema(t) for t in raw]


def tools_in_text(text: str) -> list[dict[str, Any]]:
    """The first JSON array of tools (objects with a "name") inside free text, e.g. a system prompt."""
    decoder = json.JSONDecoder()
    for m in re.finditer(r"\[", text):
        try:
            value, _ = decoder.raw_decode(text, m.start())
        except json.JSONDecodeError:
            continue
        if isinstance(value, list) and value and all(isinstance(t, dict) and "name" in t for t in value):
            return [tool_schema(t) for t in value]
    return []


# ---- calls -----------------------------------------------------------------------------------
_NAMED_CONSTANTS = {"true": True, "false": False, "null": None, "none": None}


def _literal(node: ast.AST) -> Any:
    """The value of a literal expression; anything else (names, calls, operators) is a bad row."""
    if isinstance(node, ast.Constant) and not isinstance(node.value, (bytes, type(...))):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict) and None not in node.keys:
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True)}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Name) and node.id.lower() in _NAMED_CONSTANTS:
        return _NAMED_CONSTANTS[node.id.lower()]
    raise BadRow(f"argument value {ast.unparse(node)[:60]!r} is not a literal")


def python_calls(text: str, tool_names: list[str]) -> list[ToolCall] | None:
    """Parse ToolACE's ``[name(arg=value, …), …]``; None when the text is not a call list at all.

    Tool names that are not Python identifiers ("Market Trends API", "math.factorial") are swapped
    for placeholders before parsing. Text that starts like a call list but does not parse raises
    `BadRow` rather than being kept as a plain answer: training on a broken call teaches the model
    to write text where it should call.
    """
    s = text.strip()
    if not s.startswith("["):
        return None
    placeholders: dict[str, str] = {}
    for i, name in enumerate(sorted(set(tool_names), key=len, reverse=True)):
        if name.isidentifier() and not keyword.iskeyword(name):
            continue
        ph = f"_botpsy_tool_{i}"
        s, n = re.subn(
            r"(?<=[\[,])(\s*)" + re.escape(name) + r"\s*\(", lambda m, ph=ph: m.group(1) + ph + "(", s
        )
        if n:
            placeholders[ph] = name
    looks_like_calls = re.match(r"\[\s*[\w. -]+\(", s) is not None
    if not (looks_like_calls or s.endswith("]")):
        return None
    try:
        tree = ast.parse(s, mode="eval").body
    except (SyntaxError, ValueError) as e:
        if looks_like_calls:
            raise BadRow(
                f"assistant text starts like a call list but does not parse ({e.__class__.__name__}: {e}); "
                "a call to a tool the row does not list cannot be read either"
            ) from None
        return None
    if not isinstance(tree, ast.List) or not tree.elts:
        return None
    if not all(isinstance(e, ast.Call) for e in tree.elts):
        if any(isinstance(e, ast.Call) for e in tree.elts):
            raise BadRow("assistant call list mixes calls and other values")
        return None
    calls = []
    for call in tree.elts:
        if not isinstance(call.func, (ast.Name, ast.Attribute)):
            raise BadRow(f"cannot read the function name in {ast.unparse(call)[:60]!r}")
        name = ast.unparse(call.func)
        name = placeholders.get(name, name)
        if call.args or any(k.arg is None for k in call.keywords):
            raise BadRow(f"call to {name} has positional or ** arguments; the data must name every argument")
        calls.append(ToolCall(name, {k.arg: _literal(k.value) for k in call.keywords}))
    return calls


def json_calls(value: Any) -> list[ToolCall]:
    """Calls written as JSON: an object, a list of objects, or that text (optionally in <TOOLCALL>)."""
    if isinstance(value, str):
        text = re.sub(r"^\s*<TOOLCALL>|</TOOLCALL>\s*$", "", value.strip())
        try:
            value = json.loads(text)
        except json.JSONDecodeError as e:
            raise BadRow(f"tool call is not valid JSON ({e.msg})") from None
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise BadRow(f"a tool call needs a name and arguments, got {json.dumps(item)[:80]}")
        args = item.get("arguments", item.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args or "{}")
            except json.JSONDecodeError as e:
                raise BadRow(f"arguments of {item['name']} are not valid JSON ({e.msg})") from None
        calls.append(ToolCall(item["name"], args))
    return calls


_TOOLCALL_RE = re.compile(r"<TOOLCALL>(.*?)(?:</TOOLCALL>|\Z)", re.S)


def split_toolcall_tags(content: str) -> tuple[str, list[ToolCall]]:
    """When2Call's ``<TOOLCALL>[…]</TOOLCALL>`` inside assistant text: (the remaining text, the calls)."""
    calls: list[ToolCall] = []
    for m in _TOOLCALL_RE.finditer(content):
        calls.extend(json_calls(m.group(1)))
    return _TOOLCALL_RE.sub("", content).strip(), calls
