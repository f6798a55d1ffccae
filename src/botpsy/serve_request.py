"""A chat-completions request body, checked field by field before anything is generated.

Everything a client sends is validated here, so a malformed request is a 400 that names the field,
what was expected and what came, and never a 500 from deep inside rendering or tokenizing. The
server runs this before it sends any header, which is what lets a streamed request that cannot be
served get a real 400 instead of an HTTP 200 whose event stream carries the error.

Types are checked strictly (JSON `true` is not an integer, `1.5` tokens is not a count, `NaN` is
not a temperature) because the alternative, coercing, turns a client bug into a silent behaviour.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from botpsy.agent.retrieval import tool_prior
from botpsy.protocol.messages import Message, ToolCall
from botpsy.serve_errors import BadRequest
from botpsy.serve_errors import kind_of as _kind
from botpsy.serve_options import Options, parse_options
from botpsy.serve_schema import check_function
from botpsy.tools.base import Labels, Tool

__all__ = ["BadRequest", "ChatRequest", "Options", "parse_body", "parse_request"]

ROLES = ("system", "user", "assistant", "tool")
MAX_TOKENS_CAP = 1 << 20  # far above any context window: larger is a client bug, not a request
DEFAULT_MAX_TOKENS = 512


@dataclass(frozen=True)
class ChatRequest:
    messages: list[Message]
    tools: list[dict[str, Any]]
    max_tokens: int
    temperature: float
    stream: bool
    options: Options = Options()

    def schemas(self) -> dict[str, dict[str, Any]]:
        """Each tool's parameters schema by name (what the parser and the copy guide read)."""
        return {t["function"]["name"]: t["function"].get("parameters") or {} for t in self.tools}

    def prior(self, query: str) -> dict[str, float]:
        """How well `query` matches each of the client's tools, 0 to 1 (`agent.retrieval.tool_prior`),
        for the copy guide's choice of the tool the reasoning names, as the agent has it."""
        tools = [
            Tool(f["name"], _not_here, str(f.get("description") or ""), f.get("parameters") or {}, Labels())
            for f in (t["function"] for t in self.tools)
        ]
        return tool_prior(query, tools)


def _not_here(**_: Any) -> None:
    """A client's tool runs on the client; the server only ranks it."""


def _text(value: Any, where: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise BadRequest(f"{where} must be a string, got {_kind(value)}")
    return value


def _content(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # OpenAI content parts: keep the text ones
        out = []
        for j, part in enumerate(value):
            if not isinstance(part, dict):
                raise BadRequest(f"{where}[{j}] must be an object like {{'type': 'text', 'text': …}}")
            kind = part.get("type", "text")
            if kind != "text":  # dropping it would answer as if the image or audio were not there
                raise BadRequest(
                    f"{where}[{j}] is a {str(kind)[:40]!r} part; this server's model reads text only"
                )
            out.append(_text(part.get("text"), f"{where}[{j}].text"))
        return "".join(out)
    raise BadRequest(f"{where} must be a string or a list of text parts, got {_kind(value)}")


def _tool_calls(value: Any, where: str) -> list[ToolCall]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRequest(f"{where} must be a list, got {_kind(value)}")
    calls = []
    for j, c in enumerate(value):
        fn = c.get("function", c) if isinstance(c, dict) else None
        if not isinstance(fn, dict):
            raise BadRequest(
                f"{where}[{j}] must be {{'type': 'function', 'function': {{'name': …, 'arguments': …}}}}"
            )
        name = _text(fn.get("name"), f"{where}[{j}].function.name")
        args = fn.get("arguments", {})
        if isinstance(args, str):
            try:
                args = json.loads(args or "{}")
            except (json.JSONDecodeError, RecursionError):
                raise BadRequest(f"{where}[{j}].function.arguments is not valid JSON") from None
        if not isinstance(args, dict):
            raise BadRequest(f"{where}[{j}].function.arguments must be a JSON object, got {_kind(args)}")
        calls.append(ToolCall(name, args))
    return calls


def parse_messages(raw: Any) -> list[Message]:
    if not isinstance(raw, list) or not raw:
        raise BadRequest(
            f"'messages' must be a non-empty list, got {_kind(raw) if raw != [] else 'an empty list'}"
        )
    out = []
    for i, m in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise BadRequest(f"{where} must be an object with a role and content, got {_kind(m)}")
        role = m.get("role")
        if role not in ROLES:
            raise BadRequest(f"{where} needs a role of system, user, assistant or tool, got {role!r}"[:300])
        if role == "system" and i > 0:
            raise BadRequest(f"{where}: a system message can only come first")
        reasoning = m.get("reasoning") if "reasoning" in m else m.get("reasoning_content")
        out.append(
            Message(
                role=role,
                content=_content(m.get("content"), f"{where}.content"),
                reasoning=_text(reasoning, f"{where}.reasoning_content", optional=True),
                tool_calls=_tool_calls(m.get("tool_calls"), f"{where}.tool_calls"),
                name=_text(m.get("name"), f"{where}.name", optional=True),
            )
        )
    return out


def parse_tools(raw: Any) -> list[dict[str, Any]]:
    """The client's tools, each schema checked (`serve_schema`); names must be distinct."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise BadRequest(f"'tools' must be a list, got {_kind(raw)}")
    seen: set[str] = set()
    for i, t in enumerate(raw):
        name = check_function(t, i)
        if name in seen:
            raise BadRequest(
                f"tools[{i}].function.name {name!r} is used by an earlier tool; names must differ"
            )
        seen.add(name)
    return raw


def _max_tokens(body: dict[str, Any]) -> int:
    key = "max_tokens" if body.get("max_tokens") is not None else "max_completion_tokens"
    value = body.get(key)
    if value is None:
        return DEFAULT_MAX_TOKENS
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise BadRequest(f"{key} must be an integer, got {_kind(value)}")
    if not 1 <= value <= MAX_TOKENS_CAP:
        raise BadRequest(f"{key} must be between 1 and {MAX_TOKENS_CAP}, got {value}")
    return value


def _temperature(body: dict[str, Any]) -> float:
    value = body.get("temperature")
    if value is None:
        return 0.0
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise BadRequest(f"temperature must be a number, got {_kind(value)}")
    if not (math.isfinite(value) and 0.0 <= value <= 2.0):
        raise BadRequest(f"temperature must be between 0 and 2, got {value}")
    return float(value)


def parse_request(body: Any) -> ChatRequest:
    if not isinstance(body, dict):
        raise BadRequest(f"the request body must be a JSON object, got {_kind(body)}")
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise BadRequest(f"stream must be true or false, got {_kind(stream)}")
    tools = parse_tools(body.get("tools"))
    return ChatRequest(
        messages=parse_messages(body.get("messages")),
        tools=tools,
        max_tokens=_max_tokens(body),
        temperature=_temperature(body),
        stream=stream,
        options=parse_options(body, [t["function"]["name"] for t in tools], stream),
    )


def parse_body(data: bytes) -> ChatRequest:
    """JSON bytes → a checked request; every way the bytes can be wrong is a BadRequest."""
    try:
        body = json.loads(data or b"null")
        # Lone surrogates ("\ud800") parse but cannot be encoded; refuse them here, not in the tokenizer.
        json.dumps(body, ensure_ascii=False).encode("utf-8")
    except (
        ValueError,
        RecursionError,
    ):  # JSONDecodeError, UnicodeDecodeError and UnicodeEncodeError are ValueErrors
        raise BadRequest(
            "the request body is not valid JSON (UTF-8, at most a few hundred levels deep)"
        ) from None
    return parse_request(body)
