"""API-Bank's level-3 training file as botpsy conversations (the ``apibank`` shape of `data.public`).

API-Bank (AlibabaResearch/DAMO-ConvAI, ``api-bank/training-data/lv3-train.json``, Apache-2.0)
publishes its training dialogues as Alpaca-style steps: ``instruction`` (a fixed template),
``input`` and ``output``. The ``input`` holds the ToolSearcher tool's description, the user's
request (``User: … TIME: 2034-04-15 10:00:00``) and every earlier step as
``API-Request: [Name(key='value')]->result``; the ``output`` is the next step, either another
``API-Request: […]`` or the final ``AI: …`` answer. So a dialogue appears once per step, each
row a prefix of the next, and the row whose output is the ``AI:`` answer holds it whole.

Only those final rows become conversations; a step row is skipped with a reason that says so
(it would repeat a prefix of a dialogue that is already in). In a conversation:

* ToolSearcher calls and their results are dropped, and the tools they returned (``name``,
  ``description``, ``input_parameters`` in xLAM's flat ``{arg: {type, description}}`` form)
  become the row's tool list. botpsy's runtime lists every tool in the system turn, so a model
  trained to search for a tool it can already see would learn a step the runtime never needs.
* Every other request becomes an assistant call (parsed with `ast`, never evaluated) followed
  by a tool message with the result (a Python literal, turned into JSON where it parses).
* The request's ``TIME: …`` suffix is cut: the runtime gives the date in its own line, and the
  build drops rows whose call dates contradict that line.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from botpsy.data.public_schema import BadRow, python_calls, tool_schema
from botpsy.protocol.formats import tojson
from botpsy.protocol.messages import Message

SEARCHER = "ToolSearcher"
_TIME = re.compile(r"\s*TIME:\s*[\d\-: ]*$")
_STEP = "\nAPI-Request: "


def is_apibank(row: dict) -> bool:
    """Whether a row has API-Bank's step layout (Alpaca keys, API-Request steps in the text)."""
    if not {"instruction", "input", "output"} <= row.keys():
        return False
    text = f"{row.get('instruction')}{row.get('input')}"
    return "API-Request" in text or SEARCHER in text


def _literal(text: str) -> Any:
    """A result or tool description as Python data; None when it is not a literal."""
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _found_tools(result: str, where: str) -> list[dict[str, Any]]:
    """The OpenAI-style schemas of the tool(s) a ToolSearcher call returned."""
    data = _literal(result)
    items = data if isinstance(data, list) else [data]
    tools = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise BadRow(
                f"{where}: the ToolSearcher result is not a tool description: {result.strip()[:80]!r}"
            )
        tools.append(
            tool_schema(
                {
                    "name": item["name"],
                    "description": item.get("description") or "",
                    "parameters": item.get("input_parameters") or {},
                }
            )
        )
    return tools


def from_apibank(row: dict) -> tuple[list[Message], list[dict[str, Any]]]:
    """One final API-Bank row as (messages, tools); a step row raises `BadRow` (see the module doc)."""
    fields = {k: row.get(k) for k in ("instruction", "input", "output")}
    for key, value in fields.items():
        if not isinstance(value, str):
            got = "nothing" if key not in row else type(value).__name__
            raise BadRow(f"'{key}' must be a str, got {got}")
    output = fields["output"].strip()
    if not output.startswith("AI:"):
        raise BadRow(
            "a step of a dialogue (its output is the next API request); the dialogue's last row, "
            "whose output is the 'AI:' answer, holds it whole"
        )
    _, sep, rest = fields["input"].partition("\nUser: ")
    if not sep:
        raise BadRow("'input' has no 'User:' line")
    rest = re.sub(r"\n?Generate (?:AI Response|API Request):\s*$", "", rest.rstrip())
    request, *steps = rest.split(_STEP)
    request = _TIME.sub("", request.strip()).strip()
    if not request:
        raise BadRow("the user's request is empty")
    msgs = [Message("user", request)]
    tools: dict[str, dict[str, Any]] = {}
    for n, step in enumerate(steps, 1):
        call_text, arrow, result = step.partition("]->")
        if not arrow:
            raise BadRow(f"step {n} is not 'API-Request: [Name(…)]->result': {step[:80]!r}")
        calls = python_calls(call_text + "]", [])
        if not calls:
            raise BadRow(f"step {n} holds no call: {call_text[:80]!r}")
        if all(c.name == SEARCHER for c in calls):
            for tool in _found_tools(result, f"step {n}"):
                tools.setdefault(tool["function"]["name"], tool)
            continue
        if any(c.name == SEARCHER for c in calls):
            raise BadRow(f"step {n} mixes ToolSearcher with other calls")
        msgs.append(Message("assistant", "", tool_calls=calls))
        data = _literal(result)
        content = tojson(data) if isinstance(data, (dict, list)) else result.strip()
        msgs.append(Message("tool", content, name=calls[0].name if len(calls) == 1 else None))
    answer = output[len("AI:") :].strip()
    if not answer:
        raise BadRow("the 'AI:' answer is empty")
    msgs.append(Message("assistant", answer))
    return msgs, list(tools.values())
