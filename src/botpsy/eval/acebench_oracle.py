"""ACEBench answers as botpsy turns (the oracle), and calls in ACEBench's written form.

`call_text` writes calls the way ACEBench's answers and milestones write them (`[f(a='x', n=3)]`):
the special checker reads a reply as that text, and the agent's process score compares milestones
with it. `parse_call_text` reads milestones back, tolerant of their unescaped quotes
(`merchant_name='Domino's'`). `gold_messages` is what a perfect model says for an item: the first
possible answer's calls, the special reply the checker accepts, or the milestones' calls then an
answer; `--backend oracle` feeds it through the same agent, parser and checker as a model.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from typing import Any

from botpsy.engine.base import Engine
from botpsy.engine.oracle import OracleEngine
from botpsy.eval import acebench_checker as checker
from botpsy.eval.acebench_checker import base_name
from botpsy.eval.acebench_data import AGENT
from botpsy.protocol.messages import Message, ToolCall

_WS = (
    "normal multi-turn: ACEBench strips all whitespace from the output before decoding, then compares "
    "str() of a list inside an object with the unstripped answer, so no output passes"
)
_STEP_LOGIN = "the milestones never log in to the food platform, the answer state has the order"
_STEP_LATEST = "the milestones delete the earliest message; the answer (and the question) the latest"
# Items whose possible answer fails ACEBench's own rules through any output (checked with the
# oracle on the English data): the oracle scores below 100% by exactly these.
KNOWN_UNPASSABLE = {
    **{
        f"normal_multi_turn_user_adjust_{i}": _WS
        for i in (
            "3_0",
            "4_0",
            "13_0",
            "14_0",
            "15_0",
            "15_2",
            "16_0",
            "24_0",
            "29_0",
            "38_0",
            "43_0",
            "45_0",
            "48_0",
        )
    },
    **{
        f"normal_multi_turn_user_switch_{i}": _WS
        for i in (
            "6_0",
            "8_0",
            "10_1",
            "11_0",
            "15_1",
            "20_0",
            "25_0",
            "31_1",
            "33_0",
            "35_0",
            "40_0",
            "43_0",
            "45_0",
            "45_1",
        )
    },
    "normal_single_turn_parallel_function_42": "an empty list answer for an array of objects fails the inner type check",
    "normal_preference_40": "an array without item types is checked as a list of objects; the answer is a list of strings",
    "agent_multi_step_0": "a milestone orders 'Super Supreme', which is not on the menu",
    "agent_multi_step_1": "a milestone orders 'Super Supreme', which is not on the menu",
    "agent_multi_step_12": _STEP_LOGIN,
    "agent_multi_step_13": _STEP_LOGIN,
    "agent_multi_step_14": _STEP_LATEST,
    "agent_multi_step_15": _STEP_LATEST,
    "agent_multi_step_16": "the milestones never log in to the device, the answer state sends the message",
    "agent_multi_step_17": _STEP_LATEST,
    "agent_multi_turn_6": "the milestones never log in to the device, the answer state has the reminder",
}


def call_text(calls: list[ToolCall] | list[dict[str, Any]]) -> str:
    """Calls in ACEBench's written form, `[f(a='x', n=3), g()]` (strings quoted as its answers are)."""

    def value(v: Any) -> str:
        return f"'{v}'" if isinstance(v, str) else repr(v)

    parts = []
    for c in calls:
        name, args = (c.name, c.arguments) if isinstance(c, ToolCall) else next(iter(c.items()))
        parts.append(f"{name}({', '.join(f'{k}={value(v)}' for k, v in args.items())})")
    return "[" + ", ".join(parts) + "]"


def _split_args(text: str) -> list[str]:
    out, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote and not re.match(r"\w", text[i + 1 : i + 2] or " ") else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0 and re.match(r"\s*\w+\s*=", text[i + 1 :]):
            out.append(text[start:i])
            start = i + 1
    out.append(text[start:])
    return [p.strip() for p in out if p.strip()]


def _literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
            return text[1:-1]  # an answer string with an unescaped quote inside: 'Domino's'
        return text


def parse_call_text(text: str) -> list[ToolCall]:
    """ACEBench's milestone text `[f(a='x'), g(n=1)]` as calls, tolerant of its unescaped quotes."""
    body = text.strip()
    body = body[1:-1] if body.startswith("[") and body.endswith("]") else body
    calls = []
    for m in re.finditer(r"(\w+)\((.*?)\)(?=\s*(?:,\s*\w+\(|$))", body, re.S):
        args = {}
        for part in _split_args(m.group(2)):
            key, _, val = part.partition("=")
            args[key.strip()] = _literal(val.strip())
        calls.append(ToolCall(m.group(1), args))
    return calls


# ---- the oracle -----------------------------------------------------------------------------------


def special_reply(category: str, truth: Any) -> str:
    """The reply ACEBench's special checker accepts for one item."""
    if "incomplete" in category:
        return checker.missing_reply(truth)
    if "error" in category:
        return checker.incorrect_reply(truth)
    return checker.IRRELEVANT_REPLY


def gold_messages(category: str, item: dict[str, Any]) -> list[Message]:
    """The assistant turns a perfect model would produce, in botpsy's message form."""
    why = "The possible answer."
    if category.startswith("special"):
        return [Message("assistant", special_reply(category, item["truth"]), why)]
    if category in AGENT:
        stones = item["mile_stone"]
        stones = stones[0] if stones and isinstance(stones[0], list) else stones
        turns = [Message("assistant", "", why, parse_call_text(s)) for s in stones]
        return [*turns, Message("assistant", "All done.", why)]
    answer = item["truth"][0] if isinstance(item["truth"], list) else item["truth"]
    calls = [ToolCall(base_name(k), dict(v)) for k, v in answer.items()]
    return [Message("assistant", "", why, calls)]


def oracle_engine_for(chat_format: str = "qwen35") -> Callable[[str, dict[str, Any]], Engine]:
    def engine_for(category: str, item: dict[str, Any]) -> Engine:
        return OracleEngine(gold_messages(category, item), chat_format)

    return engine_for
