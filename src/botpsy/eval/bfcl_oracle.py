"""BFCL's ground truth as assistant turns: the oracle backend that must score 100% through botpsy's path.

Possible answers list acceptable values per argument; the oracle picks one per argument, writes
the call as the model would, and for multi-turn items plays the gold call strings turn by turn.
"""

from __future__ import annotations

import ast
from typing import Any

from botpsy.eval.bfcl_data import MULTI_TURN, to_json_schema
from botpsy.eval.bfcl_literals import source_literal
from botpsy.protocol.messages import Message, ToolCall

# ---- the oracle: ground truth as assistant turns -----------------------------------------------


def _pick(options: list[Any]) -> tuple[bool, Any]:
    """One acceptable value of a possible answer: (False, None) when leaving the argument out is
    accepted (`""` among the options: always safe, whatever the other options' types), else the
    first option. Dicts in possible answers hold option lists per key, so they are picked from too.
    """
    if not isinstance(options, list) or "" in options or not options:
        return False, None
    return True, _materialise(options[0])


def _materialise(value: Any) -> Any:
    if isinstance(value, dict):
        out = {}
        for k, opts in value.items():
            keep, v = _pick(opts) if isinstance(opts, list) else (True, opts)
            if keep:
                out[k] = v
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return [_materialise(v) for v in value]
    return value


def _placeholder(schema: dict[str, Any]) -> Any:
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    return {"integer": 1, "number": 1.0, "boolean": True, "array": [], "object": {}}.get(
        schema.get("type"), "x"
    )


def parse_call_string(text: str, functions: dict[str, dict[str, Any]]) -> ToolCall:
    """`sort('final_report.pdf')` → ToolCall("sort", {"file_name": ...}): positional arguments are
    named after the function doc's parameter order (BFCL's gold calls use both forms)."""
    node = ast.parse(text.strip(), mode="eval").body
    if not isinstance(node, ast.Call):
        raise ValueError(f"not a call: {text!r}")
    name = ast.unparse(node.func)
    order = list(functions.get(name, {}).get("parameters", {}).get("properties", {}))
    args: dict[str, Any] = {}
    for i, a in enumerate(node.args):
        if i >= len(order):
            raise ValueError(f"{text!r}: more positional arguments than {name} has parameters")
        args[order[i]] = ast.literal_eval(a)
    for kw in node.keywords:
        args[kw.arg] = ast.literal_eval(kw.value)  # type: ignore[index]
    return ToolCall(name, args)


def gold_messages(category: str, entry: dict[str, Any], truth: Any) -> list[Message]:
    """The assistant turns a perfect model would produce for one entry, in botpsy's message form."""
    reasoning = "The ground truth."
    if category in MULTI_TURN:
        docs = {f["name"]: f for f in entry["function"]}
        for funcs in entry.get("missed_function", {}).values():
            docs.update({f["name"]: f for f in funcs})
        out = []
        for turn in truth:
            calls = [parse_call_string(s, docs) for s in turn]
            if calls:
                out.append(Message("assistant", "", reasoning, calls))
                out.append(Message("assistant", "Done.", reasoning))
            else:
                out.append(Message("assistant", "I cannot do that with the functions I have.", reasoning))
        return out
    if "irrelevance" in category:
        return [Message("assistant", "None of the available functions fits this request.", reasoning)]
    if category == "live_relevance":
        f = entry["function"][0]
        props = to_json_schema({**f["parameters"], "type": "dict"}).get("properties", {})
        args = {p: _placeholder(props[p]) for p in f["parameters"].get("required", []) if p in props}
        return [Message("assistant", "", reasoning, [ToolCall(f["name"], args)])]
    language = "java" if "java" in category and "javascript" not in category else None
    language = "javascript" if "javascript" in category else language
    raw = _raw_docs(category, entry["id"]) if language else {}
    calls = []
    for answer in truth:
        ((name, params),) = answer.items()
        doc = next((f for f in entry["function"] if f["name"] == name), {})
        required = set(doc.get("parameters", {}).get("required", []))
        args = {}
        for p, options in params.items():
            keep, value = _pick(options)
            others = [o for o in options if o != ""] if isinstance(options, list) else []
            if not keep and p in required and others:  # the checker insists on required arguments
                keep, value = True, _materialise(others[0])
            if keep and language:
                schema = raw.get(name, {}).get("parameters", {}).get("properties", {}).get(p, {})
                value = source_literal(language, value, schema)
            if keep:
                args[p] = value
        calls.append(ToolCall(name, args))
    return [Message("assistant", "", reasoning, calls)]


_RAW: dict[str, dict[str, dict[str, Any]]] = {}


def _raw_docs(category: str, item_id: str) -> dict[str, dict[str, Any]]:
    """The entry's function docs by name, with their declared Java/JavaScript types (no hints)."""
    if category not in _RAW:
        from bfcl_eval.utils import load_dataset_entry

        for e in load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False):
            _RAW[e["id"]] = {f["name"]: f for f in e["function"]}
        _RAW[category] = {}
    return _RAW.get(item_id, {})
