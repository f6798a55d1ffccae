"""Rendering and parsing of the qwen35 (XML) and hermes (JSON) tool-call formats."""

import json
import re

import pytest

from botpsy.protocol.arguments import ToolError
from botpsy.protocol.formats import ChatFormat, detect_format, parse_completion, template_text
from botpsy.protocol.messages import Message, ToolCall
from botpsy.tools.calendar import TOOLS

SCHEMAS = {t.name: t.parameters for t in TOOLS}
TOOL_LIST = [t.schema() for t in TOOLS]


def conversation() -> list[Message]:
    return [
        Message("system", "Today is Tuesday, December 1, 2026."),
        Message("user", "Move my dentist appointment to Friday 3pm"),
        Message("assistant", "", "Find it first.", [ToolCall("find_events", {"query": "dentist"})]),
        Message("tool", '{"events": [{"id": "evt-3", "title": "Dentist"}]}', name="find_events"),
        Message(
            "assistant",
            "",
            "Move evt-3.",
            [
                ToolCall("update_event", {"event_id": "evt-3", "start": "2026-12-04T15:00"}),
                ToolCall("list_events", {"date": "2026-12-04"}),
            ],
        ),
        Message("tool", '{"updated": {"id": "evt-3"}}', name="update_event"),
        Message("tool", '{"events": []}', name="list_events"),
        Message("assistant", "Moved it to Friday at 15:00.", ""),
        Message("user", "Thanks! Anything with attendees [a, b] and 3 >= 2?"),
        Message(
            "assistant",
            "Here you go.",
            "Answer.",
            [
                ToolCall(
                    "create_event",
                    {
                        "title": "x",
                        "start": "2026-12-05T09:00",
                        "attendees": ["a", "b"],
                        "duration_minutes": 30,
                    },
                )
            ],
        ),
    ]


@pytest.mark.parametrize("fmt", ["qwen35", "hermes"])
def test_rendering_matches_the_jinja_template_through_transformers(fmt):
    """Parity: our incremental renderer == transformers.apply_chat_template with the project's template."""
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models

    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel({"<unk>": 0}, "<unk>"))
    )
    msgs = conversation()
    for thinking in (True, False):
        ours = ChatFormat(fmt).render(msgs, TOOL_LIST, add_generation_prompt=True, thinking=thinking)
        theirs = tok.apply_chat_template(
            [m.to_openai() for m in msgs],
            tools=TOOL_LIST,
            chat_template=template_text(fmt),
            tokenize=False,
            add_generation_prompt=True,
            enable_thinking=thinking,
        )
        assert ours == theirs


@pytest.mark.parametrize("fmt", ["qwen35", "hermes"])
def test_the_transcript_concatenates_to_the_full_rendering(fmt):
    """The blocks the agent and SFT append (protocol.transcript) are the template's rendering."""
    from botpsy.protocol.transcript import Transcript

    f = ChatFormat(fmt)
    msgs = conversation()
    t = Transcript.of_messages(msgs, TOOL_LIST, f, lambda text: list(str(text).encode()))
    assert bytes(t.ids).decode() + "\n" == f.render(msgs, TOOL_LIST)
    # the generated ids are exactly the assistant completions
    generated = bytes(i for i, m in zip(t.ids, t.mask, strict=True) if m).decode()
    assert generated == "".join(f.completion(m) for m in msgs if m.role == "assistant")


@pytest.mark.parametrize("fmt", ["qwen35", "hermes"])
def test_round_trip_of_every_assistant_turn(fmt):
    f = ChatFormat(fmt)
    for m in conversation():
        if m.role != "assistant":
            continue
        parsed = f.parse(f.completion(m), SCHEMAS)
        assert parsed.errors == []
        assert parsed.content == m.content
        assert parsed.reasoning == (m.reasoning or "")
        assert [c.name for c in parsed.calls] == [c.name for c in m.tool_calls]
        for got, want in zip(parsed.calls, m.tool_calls, strict=True):
            assert got.arguments == want.arguments  # values converted back by the schema


def test_detect_format_from_templates():
    assert detect_format(template_text("qwen35")) == "qwen35"
    assert detect_format(template_text("hermes")) == "hermes"
    assert detect_format(None) == "qwen35"
    assert detect_format("{{ messages }}") == "qwen35"


def test_xml_values_are_converted_by_schema():
    text = (
        "ok\n</think>\n\n<tool_call>\n<function=create_event>\n<parameter=title>\nGym\n</parameter>\n"
        "<parameter=start>\n2026-12-02T07:00\n</parameter>\n<parameter=duration_minutes>\n45\n</parameter>\n"
        '<parameter=attendees>\n["Ann", "Bo"]\n</parameter>\n</function>\n</tool_call>'
    )
    p = parse_completion(text, "qwen35", SCHEMAS)
    assert p.errors == []
    assert p.calls[0].arguments == {
        "title": "Gym",
        "start": "2026-12-02T07:00",
        "duration_minutes": 45,
        "attendees": ["Ann", "Bo"],
    }


@pytest.mark.parametrize(
    "arguments, kept, error",
    [
        (
            {"title": "Gym", "start": "2026-12-02T07:00", "location": None},
            {"title": "Gym", "start": "2026-12-02T07:00"},
            None,
        ),
        ({"title": None, "start": "2026-12-02T07:00"}, None, "missing required argument(s) title"),
        ({"title": "Gym", "start": "2026-12-02T07:00", "room": "B"}, None, "unknown argument(s) room"),
    ],
    ids=["null-optional-is-not-given", "null-required-is-missing", "unknown"],
)
def test_parser_and_tool_share_one_argument_validator(arguments, kept, error):
    # Regression (issue 15): the parser and Tool.bind had two validators that disagreed on nulls.
    call = json.dumps({"name": "create_event", "arguments": arguments})
    text = f"r\n</think>\n\n<tool_call>\n{call}\n</tool_call>"
    p = parse_completion(text, "hermes", SCHEMAS)
    tool = next(t for t in TOOLS if t.name == "create_event")
    if error is None:
        assert p.errors == [] and p.calls[0].arguments == kept == tool.bind(arguments)
    else:
        assert [e.kind for e in p.errors] == ["bad_arguments"] and error in p.errors[0].message
        with pytest.raises(ToolError, match=re.escape(error)):
            tool.bind(arguments)


def test_multiline_parameter_value_is_kept():
    text = "r\n</think>\n\n<tool_call>\n<function=create_event>\n<parameter=title>\nline one\nline two\n</parameter>\n<parameter=start>\n2026-12-02T07:00\n</parameter>\n</function>\n</tool_call>"
    assert parse_completion(text, "qwen35", SCHEMAS).calls[0].arguments["title"] == "line one\nline two"


CALL = "<tool_call>\n<function=list_events>\n<parameter=date>\n2026-12-03\n</parameter>\n</function>\n</tool_call>"
MALFORMED = [
    # (name, format, completion text after "<think>\n", expected error kind or None, calls parsed)
    ("unclosed think", "qwen35", "I am thinking forever", "unclosed_think", 0),
    (
        "unclosed call at end is tolerated",
        "qwen35",
        "r\n</think>\n\n" + CALL.removesuffix("</tool_call>"),
        None,
        1,
    ),
    ("empty call", "qwen35", "r\n</think>\n\n<tool_call>", "unclosed_call", 0),
    (
        "no function tag",
        "qwen35",
        "r\n</think>\n\n<tool_call>\nlist_events(date=1)\n</tool_call>",
        "no_function",
        0,
    ),
    (
        "unclosed parameter",
        "qwen35",
        "r\n</think>\n\n<tool_call>\n<function=list_events>\n<parameter=date>\n2026-12-03\n</function>\n</tool_call>",
        "unclosed_call",
        0,
    ),
    (
        "unknown function",
        "qwen35",
        "r\n</think>\n\n" + CALL.replace("list_events", "book_flight"),
        "unknown_function",
        0,
    ),
    (
        "missing argument",
        "qwen35",
        "r\n</think>\n\n<tool_call>\n<function=list_events>\n</function>\n</tool_call>",
        "bad_arguments",
        0,
    ),
    (
        "extra argument",
        "qwen35",
        "r\n</think>\n\n" + CALL.replace("</function>", "<parameter=colour>\nred\n</parameter>\n</function>"),
        "bad_arguments",
        0,
    ),
    (
        "mistyped integer",
        "qwen35",
        "r\n</think>\n\n<tool_call>\n<function=find_free_slots>\n<parameter=date>\n2026-12-03\n</parameter>\n<parameter=duration_minutes>\nan hour\n</parameter>\n</function>\n</tool_call>",
        "bad_arguments",
        0,
    ),
    ("stray closing tag", "qwen35", "r\n</think>\n\nsure </tool_call>", "stray_tag", 0),
    (
        "bad json",
        "hermes",
        'r\n</think>\n\n<tool_call>\n{"name": "list_events", "arguments": {"date": }\n</tool_call>',
        "bad_json",
        0,
    ),
    (
        "json without name",
        "hermes",
        'r\n</think>\n\n<tool_call>\n{"arguments": {}}\n</tool_call>',
        "no_function",
        0,
    ),
    (
        "json arguments not an object",
        "hermes",
        'r\n</think>\n\n<tool_call>\n{"name": "list_events", "arguments": [1]}\n</tool_call>',
        "bad_arguments",
        0,
    ),
    (
        "json arguments as a string",
        "hermes",
        'r\n</think>\n\n<tool_call>\n{"name": "list_events", "arguments": "{\\"date\\": \\"2026-12-03\\"}"}\n</tool_call>',
        None,
        1,
    ),
    (
        "json mistyped",
        "hermes",
        'r\n</think>\n\n<tool_call>\n{"name": "find_free_slots", "arguments": {"date": "2026-12-03", "duration_minutes": true}}\n</tool_call>',
        "bad_arguments",
        0,
    ),
    ("plain answer", "qwen35", "r\n</think>\n\nYou have nothing on Thursday.", None, 0),
    (
        "two calls, one bad",
        "qwen35",
        "r\n</think>\n\n" + CALL + "\n" + CALL.replace("list_events", "nope"),
        "unknown_function",
        1,
    ),
    ("garbage bytes", "qwen35", "\x00\x01<tool_call><function=", "unclosed_think", 0),
]


@pytest.mark.parametrize("name,fmt,text,kind,n_calls", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_output_becomes_structured_errors(name, fmt, text, kind, n_calls):
    p = parse_completion(text, fmt, SCHEMAS)
    assert [e.kind for e in p.errors] == ([kind] if kind else [])
    assert len(p.calls) == n_calls
    for e in p.errors:
        assert json.loads(e.as_tool_result())["error"]  # goes back to the model as a tool error


def test_message_dict_round_trip():
    for m in conversation():
        assert Message.from_dict(m.to_openai()) == m
