"""Hermes calls written without `<tool_call>` tags (issue 36, item 11).

Regression: Qwen2.5-Coder-0.5B-Instruct, a real hermes GGUF, wrote 45 of 48 calls as bare or
```json-fenced JSON; botpsy parsed none and reported no error.
"""

import pytest

from botpsy.protocol.formats import parse_completion

TOOLS = {
    "get_weather": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    }
}
CALL = '{"name": "get_weather", "arguments": {"city": "Oslo", "days": 2}}'


@pytest.mark.parametrize(
    "text, calls, content",
    [
        (CALL, [("get_weather", {"city": "Oslo", "days": 2})], ""),
        ("```json\n" + CALL + "\n```", [("get_weather", {"city": "Oslo", "days": 2})], ""),
        (
            "Let me check.\n```\n" + CALL + "\n```\nOne moment.",
            [("get_weather", {"city": "Oslo", "days": 2})],
            "Let me check.\n\nOne moment.",
        ),
        (
            "[" + CALL + ", " + CALL.replace("Oslo", "Rome") + "]",
            [("get_weather", {"city": "Oslo", "days": 2}), ("get_weather", {"city": "Rome", "days": 2})],
            "",
        ),
        (
            CALL + "\n" + CALL.replace("Oslo", "Rome"),
            [("get_weather", {"city": "Oslo", "days": 2}), ("get_weather", {"city": "Rome", "days": 2})],
            "",
        ),
        ('{"name": "get_weather", "parameters": {"city": "Oslo"}}', [("get_weather", {"city": "Oslo"})], ""),
        (
            '{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}',
            [("get_weather", {"city": "Oslo"})],
            "",
        ),
        # JSON that is an answer, not a call, stays text
        ('{"city": "Oslo", "temp": 3}', [], '{"city": "Oslo", "temp": 3}'),
        (
            '```json\n{"name": "Oslo", "population": 700000}\n```',
            [],
            '```json\n{"name": "Oslo", "population": 700000}\n```',
        ),
        ("It is sunny in Oslo.", [], "It is sunny in Oslo."),
    ],
)
def test_bare_and_fenced_hermes_calls(text, calls, content):
    p = parse_completion("ok\n</think>\n\n" + text, "hermes", TOOLS)
    assert p.errors == []
    assert [(c.name, c.arguments) for c in p.calls] == calls
    assert p.content == content


def test_bare_call_to_an_unknown_tool_is_an_error_the_model_sees():
    p = parse_completion('ok\n</think>\n\n{"name": "get_news", "arguments": {}}', "hermes", TOOLS)
    assert p.calls == [] and [e.kind for e in p.errors] == ["unknown_function"]


def test_bare_call_with_bad_arguments_is_an_error():
    p = parse_completion('ok\n</think>\n\n{"name": "get_weather", "arguments": {"days": 2}}', "hermes", TOOLS)
    assert p.calls == [] and [e.kind for e in p.errors] == ["bad_arguments"]


def test_tagged_calls_win_and_qwen35_stays_strict():
    tagged = "ok\n</think>\n\n<tool_call>\n" + CALL + "\n</tool_call>"
    assert len(parse_completion(tagged, "hermes", TOOLS).calls) == 1
    assert parse_completion("ok\n</think>\n\n" + CALL, "qwen35", TOOLS).calls == []
