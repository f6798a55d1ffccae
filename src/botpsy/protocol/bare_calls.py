"""Hermes-format tool calls written without `<tool_call>` tags, as real models write them.

Qwen2.5-Coder-0.5B-Instruct, a real hermes-template GGUF, wrote 45 of 48 calls as bare JSON or as
JSON in a Markdown fence (issue 36, item 11), and the tag-only parser found none: no call, no
error. Servers that run such models accept these forms too (llama.cpp's and vLLM's tool parsers
read a fenced or bare JSON call). Accepted here, after no tagged call was found:

* the whole answer is one call object ``{"name": …, "arguments": {…}}`` (``parameters`` also
  accepted), a JSON list of them, or one per line;
* one or more fenced blocks (```` ```json ```` or a bare ```` ``` ````) each holding the same, with
  any text outside the fences kept as the answer's text.

Only the exact call shape counts: a JSON object without a string ``name`` and an object of
arguments is an answer that happens to be JSON, and stays text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from botpsy.protocol.messages import ToolCall

_FENCE_RE = re.compile(r"```[ \t]*(?:json|JSON|tool_call|tool_code)?[ \t]*\n(.*?)\n?[ \t]*```", re.S)


def _as_calls(obj: Any) -> list[ToolCall] | None:
    items = obj if isinstance(obj, list) else [obj]
    if not items:
        return None
    calls = []
    for it in items:
        if not isinstance(it, dict) or not isinstance(it.get("name"), str) or not it["name"].strip():
            return None
        if set(it) - {"name", "arguments", "parameters", "id", "type"}:
            return None
        args = it.get("arguments", it.get("parameters", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except (ValueError, RecursionError):
                return None
        if not isinstance(args, dict):
            return None
        calls.append(ToolCall(it["name"].strip(), args))
    return calls


def _parse(text: str) -> list[ToolCall] | None:
    text = text.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        return _as_calls(json.loads(text))
    except (ValueError, RecursionError):
        pass
    calls: list[ToolCall] = []
    for line in text.splitlines():  # one call object per line
        if not line.strip():
            continue
        try:
            got = _as_calls(json.loads(line))
        except (ValueError, RecursionError):
            return None
        if got is None:
            return None
        calls += got
    return calls or None


def bare_calls(content: str) -> tuple[list[ToolCall], str] | None:
    """The calls written as bare or fenced JSON in `content`, and the text left; None: no such call."""
    whole = _parse(content)
    if whole is not None:
        return whole, ""
    calls: list[ToolCall] = []
    rest, last = [], 0
    for m in _FENCE_RE.finditer(content):
        got = _parse(m.group(1))
        if got is None:
            continue
        calls += got
        rest.append(content[last : m.start()])
        last = m.end()
    if not calls:
        return None
    rest.append(content[last:])
    return calls, "".join(rest).strip()
