"""Parser fuzz: random and mutated model output through `parse_completion`, in both formats.

`ChatFormat.parse` promises never to raise on bad output: whatever a model writes becomes
content, calls or `ParseError`s. Issue 14 item 3 found a 5,000-digit integer escaping the hermes
parser (Python's int-digit limit raises ValueError from `json.loads`). This drives 10,000 inputs
per format (seeded, a few seconds) through the parser with and without tool schemas: mutations of
well-formed calls (cut, repeat, splice in tags, huge numbers, deep nesting, nulls, control
characters) and fully random strings over the format's own vocabulary; a fifth of them without
their call tags (hermes models write bare or fenced JSON, issue 36 item 11), and a sixth of the
schema sets malformed (issue 36 item 9: 181 of 35,000 parses escaped with AttributeError and
TypeError from a broken schema before `check_arguments` named the schema instead).

Run more as a script: `python tests/test_protocol_fuzz.py 100000` prints cases and escapes.
"""

from __future__ import annotations

import random
import sys
import traceback

import pytest

from botpsy.protocol.formats import ChatFormat, parse_completion
from botpsy.protocol.messages import Message, ToolCall
from botpsy.tools.registry import SUITES

TOOLS = {t.name: t.parameters for s in ("calendar", "email", "banking") for t in SUITES[s].tools}

PIECES = [
    "<tool_call>",
    "</tool_call>",
    "<function=",
    "<function=create_event>",
    "</function>",
    "<parameter=",
    "<parameter=start>",
    "</parameter>",
    "<think>",
    "</think>",
    "<|im_end|>",
    "\n",
    " ",
    "{",
    "}",
    "[",
    "]",
    '"',
    ":",
    ",",
    "null",
    "true",
    "NaN",
    "Infinity",
    "-",
    "1e999",
    "9" * 5000,
    "-" + "7" * 4400,
    "[" * 3000,
    "{" * 1500,
    '{"a":' * 1200,
    '"name"',
    '"arguments"',
    '"create_event"',
    '"\\ud800"',
    "\\u0000",
    "\x00",
    "\ufeff",
    "é",
    ">",
    "=",
]


def seeds() -> list[tuple[str, str]]:
    """Well-formed completions in both formats: the texts mutations start from."""
    calls = [
        ToolCall("create_event", {"title": "Dentist", "start": "2026-12-03T10:00", "attendees": ["a@b.cc"]}),
        ToolCall("transfer_money", {"from_account": "acc-1", "to": "acc-2", "amount": 25.5}),
        ToolCall("list_events", {"date": "2026-12-03"}),
        ToolCall("no_such_tool", {"x": [1, {"y": None}]}),
    ]
    out = []
    for fmt in ("qwen35", "hermes"):
        f = ChatFormat(fmt)
        for i in range(len(calls)):
            m = Message("assistant", "Sure." if i % 2 else "", "the user wants it", calls[i : i + 2])
            out.append((fmt, f.completion(m, thinking=True)))
    return out


def mutate(text: str, rng: random.Random) -> str:
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        i = rng.randint(0, len(text))
        j = rng.randint(i, min(len(text), i + 40))
        if op == 0:  # cut a span
            text = text[:i] + text[j:]
        elif op == 1:  # splice in a piece of the vocabulary
            text = text[:i] + rng.choice(PIECES) + text[i:]
        elif op == 2:  # repeat a span
            text = text[:j] + text[i:j] * rng.randint(2, 5) + text[j:]
        elif op == 3:  # truncate (the token cap)
            text = text[:i]
        elif op == 4:  # replace a span with a piece
            text = text[:i] + rng.choice(PIECES) + text[j:]
        else:  # flip one character
            if text:
                k = rng.randrange(len(text))
                text = text[:k] + chr(rng.randrange(32, 0x2FF)) + text[k + 1 :]
    return text


def random_text(rng: random.Random) -> str:
    return "".join(
        rng.choice(PIECES) if rng.random() < 0.7 else chr(rng.randrange(0, 0x250))
        for _ in range(rng.randint(0, 30))
    )


JUNK = [None, 5, "string", [], {}, [1, "x"], {"type": 7}, {"type": ["string", 3]}, {"enum": 3}, "x" * 300]


def malformed_tools(rng: random.Random) -> dict:
    """The suites' schemas with a few fields replaced by junk, as a buggy MCP server or client sends
    them (issue 36, item 9): the parser must still never raise."""
    tools = {k: dict(v) for k, v in TOOLS.items()}
    for name in rng.sample(sorted(tools), 6):
        schema = dict(tools[name])
        props = dict(schema.get("properties") or {})
        for _ in range(rng.randint(1, 3)):
            where = rng.randrange(4)
            if where == 0:
                schema[rng.choice(["type", "properties", "required", "additionalProperties"])] = rng.choice(
                    JUNK
                )
            elif where == 1 and props:
                props[rng.choice(sorted(props))] = rng.choice(JUNK)
            elif where == 2 and props:
                key = rng.choice(sorted(props))
                props[key] = {
                    **(props[key] if isinstance(props[key], dict) else {}),
                    rng.choice(["type", "enum", "items", "properties", "minimum"]): rng.choice(JUNK),
                }
            else:
                tools[name] = rng.choice(JUNK)
        if isinstance(tools[name], dict):
            schema["properties"] = props if rng.random() < 0.8 else schema.get("properties")
            tools[name] = schema
    return tools


def cases(n: int, seed: int = 0):
    """(format, text, tools): mutated and random outputs; a fifth without their call tags (hermes
    models write bare or fenced JSON, issue 36 item 11); tools none, the suites', or malformed."""
    rng = random.Random(seed)
    base = seeds()
    for k in range(n):
        fmt, text = base[k % len(base)]
        text = random_text(rng) if k % 5 == 4 else mutate(text, rng)
        if k % 5 == 2:
            text = text.replace("<tool_call>", "").replace("</tool_call>", rng.choice(["", "```", "\n"]))
            if rng.random() < 0.5:
                text = "ok\n</think>\n\n```json\n" + text.split("</think>")[-1].strip() + "\n```"
        tools = (None, TOOLS, malformed_tools(rng) if k % 6 == 5 else TOOLS)[k % 3]
        yield fmt, text, tools


def run(n: int, seed: int = 0) -> tuple[int, list[str]]:
    """Parse `n` inputs per format; (cases run, one line per exception that escaped)."""
    escapes, count = [], 0
    for fmt_seed, text, tools in cases(n, seed):
        for fmt in ("qwen35", "hermes"):
            if fmt != fmt_seed and count % 2:  # half the inputs also cross formats
                continue
            count += 1
            try:
                parsed = parse_completion(text, fmt, tools, thinking=count % 4 != 0)
                for e in parsed.errors:
                    e.as_tool_result()  # what the agent sends back must be writable too
            except Exception as e:  # the property under test: nothing escapes
                escapes.append(f"{fmt} {type(e).__name__}: {e!s:.80} | {text[:60]!r}")
    return count, escapes


def test_no_exception_escapes_the_parser_on_10k_inputs_per_format():
    count, escapes = run(10_000)
    assert count >= 10_000 * 1.5
    assert escapes == [], "\n".join(escapes[:10])


@pytest.mark.parametrize("fmt", ["qwen35", "hermes"])
@pytest.mark.parametrize(
    "body",
    [
        '{"name": "list_events", "arguments": {"date": ' + "9" * 5000 + "}}",
        '{"name": "list_events", "arguments": ' + "[" * 5000 + "]" * 5000 + "}",
        '{"name": "list_events", "arguments": "' + "[" * 5000 + '"}',
        "<function=create_event>\n<parameter=duration_minutes>\n"
        + "9" * 5000
        + "\n</parameter>\n</function>",
        "<function=create_event>\n<parameter=attendees>\n" + "[" * 5000 + "\n</parameter>\n</function>",
    ],
)
def test_huge_numbers_and_deep_nesting_are_parse_errors(fmt, body):
    text = f"ok\n</think>\n\n<tool_call>\n{body}\n</tool_call>"
    parsed = parse_completion(text, fmt, TOOLS)
    assert not parsed.calls and parsed.errors
    assert all(len(e.message) < 300 for e in parsed.errors)


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    count, escapes = run(n, seed=int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    print(f"{count} parses of {n} inputs, {len(escapes)} escapes")
    for line in escapes[:20]:
        print(" ", line)
    if escapes:
        traceback.print_exc()
    sys.exit(1 if escapes else 0)


@pytest.mark.parametrize(
    "params, value",
    [
        (None, '"a"'),
        ({"properties": []}, '"a"'),
        ({"properties": {"x": "string"}}, '"a"'),
        ({"properties": {"x": {"type": "array", "items": 3}}}, '["a"]'),
        ({"properties": {"x": {"type": "string", "enum": 5}}}, '"a"'),
        ({"properties": {"x": {}}, "required": "x"}, '"a"'),
    ],
)
def test_a_malformed_schema_is_a_parse_error_naming_the_tool(params, value):
    text = 'ok\n</think>\n\n<tool_call>\n{"name": "f", "arguments": {"x": ' + value + "}}\n</tool_call>"
    parsed = parse_completion(text, "hermes", {"f": params})
    assert not parsed.calls and [e.kind for e in parsed.errors] == ["bad_arguments"]
    assert "f: the tool's parameter schema is malformed" in parsed.errors[0].message
