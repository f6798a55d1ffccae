"""Public tool-use datasets (xLAM, ToolACE, When2Call, OpenAI chat) load into botpsy conversations.

Each fixture is a small file written here in the dataset's published layout (nothing is
downloaded): xLAM's JSON array with `tools`/`answers` as JSON strings, ToolACE's `system` +
`conversations` with Python-like call text, When2Call's train SFT rows (`<TOOLCALL>` in the
assistant text) and test MCQ rows, and OpenAI chat JSONL with `tool_calls`.
"""

from __future__ import annotations

import json

import pytest

from botpsy.data.public import load, parse_spec
from botpsy.data.public_schema import BadRow, python_calls, tool_schema, type_schema
from botpsy.protocol.messages import ToolCall

# ---- fixtures in the published layouts ---------------------------------------------------------
XLAM_TOOLS = [
    {
        "name": "live_giveaways_by_type",
        "description": "Retrieve live giveaways based on the specified type.",
        "parameters": {
            "type": {
                "description": "The type of giveaways (game, loot, beta).",
                "type": "str",
                "default": "game",
            },
            "platforms": {"description": "Platform ids.", "type": "List[int]"},
            "region": {"description": "Region code.", "type": "str, optional"},
        },
    }
]
XLAM_ROW = {
    "id": 0,
    "query": "Where can I find live giveaways for beta access and games?",
    "answers": json.dumps(
        [
            {"name": "live_giveaways_by_type", "arguments": {"type": "beta", "platforms": [1, 2]}},
            {"name": "live_giveaways_by_type", "arguments": {"type": "game", "platforms": [3]}},
        ]
    ),
    "tools": json.dumps(XLAM_TOOLS),
}

TOOLACE_FUNCTIONS = [
    {
        "name": "Market Trends API",
        "description": "Get the latest market trends.",
        "parameters": {
            "type": "dict",
            "properties": {
                "trend_type": {"description": "Trend type.", "type": "string"},
                "country": {"description": "Country code.", "type": "string", "default": "us"},
                "ratio": {"description": "Minimum ratio.", "type": "float"},
            },
            "required": ["trend_type"],
        },
        "required": None,
    }
]
TOOLACE_ROW = {
    "system": (
        "You are an expert in composing functions. You are given a question and a set of possible "
        "functions.\nHere is a list of functions in JSON format that you can invoke:\n"
        + json.dumps(TOOLACE_FUNCTIONS)
        + ". \nShould you decide to return the function call(s), Put it in the format of "
        "[func1(params_name=params_value, params_name2=params_value2...), func2(params)]\n\n"
        "NO other text MUST be included. \n"
    ),
    "conversations": [
        {"from": "user", "value": "What are the current market trends in the US?"},
        {
            "from": "assistant",
            "value": '[Market Trends API(trend_type="MARKET_INDEXES", country="us", ratio=-0.5)]',
        },
        {
            "from": "tool",
            "value": json.dumps(
                [{"name": "Market Trends API", "results": {"trends": [{"name": "S&P 500"}]}}]
            ),
        },
        {"from": "assistant", "value": "The S&P 500 leads the US market indexes today."},
    ],
}

W2C_TOOL = {
    "name": "get_ico_calendar",
    "description": "Fetch the ICO calendar.",
    "parameters": {
        "type": "object",
        "properties": {"category": {"type": "string", "description": "Sectors, comma-separated."}},
        "required": ["category"],
    },
}
W2C_SFT_ROW = {
    "tools": [W2C_TOOL],
    "messages": [
        {"role": "user", "content": "Show me completed ICOs in the e-commerce and finance sectors."},
        {
            "role": "assistant",
            "content": '<TOOLCALL>[{"name": "get_ico_calendar", "arguments": {"category": "e-commerce,finance"}}]'
            "</TOOLCALL>",
        },
    ],
}


def w2c_mcq_row(correct: str) -> dict:
    return {
        "uuid": "a1",
        "source": "BFCL v2 Live",
        "source_id": "live_simple_1",
        "question": "Show me the ICO calendar.",
        "correct_answer": correct,
        "answers": {
            "direct": "Here is the calendar: …",
            "tool_call": json.dumps({"name": "get_ico_calendar", "arguments": {"category": "finance"}}),
            "request_for_info": "Which sectors are you interested in?",
            "cannot_answer": "I cannot fetch the calendar with these tools.",
        },
        "target_tool": json.dumps(W2C_TOOL),
        "tools": [json.dumps(W2C_TOOL)],
        "orig_tools": [json.dumps(W2C_TOOL)],
        "orig_question": "Show me the ICO calendar.",
        "held_out_param": "category",
    }


OPENAI_ROW = {
    "tools": [{"type": "function", "function": W2C_TOOL}],
    "messages": [
        {"role": "system", "content": "You help with crypto questions."},
        {"role": "user", "content": "Any finance ICOs?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_ico_calendar", "arguments": '{"category": "finance"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"icos": ["Coin A"]}'},
        {"role": "assistant", "content": "Coin A is the one finance ICO."},
    ],
}


def write_jsonl(path, rows, raw_lines=()):
    lines = [json.dumps(r) for r in rows]
    for index, text in raw_lines:
        lines.insert(index, text)
    path.write_text("\n".join(lines) + "\n")
    return path


def quiet(_msg):
    pass


# ---- one row per shape -------------------------------------------------------------------------
def test_xlam_row_becomes_parallel_calls_with_a_json_schema(tmp_path):
    path = tmp_path / "xlam_function_calling_60k.json"
    path.write_text(json.dumps([XLAM_ROW]))
    res = load(path, log=quiet)
    assert res.shape == "xlam" and res.skipped == 0
    [(msgs, tools)] = res.conversations
    assert [m.role for m in msgs] == ["user", "assistant"]
    assert msgs[0].content == XLAM_ROW["query"]
    assert msgs[1].content == "" and msgs[1].tool_calls == [
        ToolCall("live_giveaways_by_type", {"type": "beta", "platforms": [1, 2]}),
        ToolCall("live_giveaways_by_type", {"type": "game", "platforms": [3]}),
    ]
    assert tools == [
        {
            "type": "function",
            "function": {
                "name": "live_giveaways_by_type",
                "description": "Retrieve live giveaways based on the specified type.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "type": {
                            "type": "string",
                            "description": "The type of giveaways (game, loot, beta).",
                            "default": "game",
                        },
                        "platforms": {
                            "type": "array",
                            "items": {"type": "integer"},
                            "description": "Platform ids.",
                        },
                        "region": {"type": "string", "description": "Region code."},
                    },
                    "required": ["platforms"],  # "type" has a default, "region" is optional
                },
            },
        }
    ]


def test_toolace_row_parses_tools_from_system_and_python_calls(tmp_path):
    path = tmp_path / "data.json"
    path.write_text(json.dumps([TOOLACE_ROW]))
    res = load(path, log=quiet)
    assert res.shape == "toolace"
    [(msgs, tools)] = res.conversations
    assert [m.role for m in msgs] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]  # ToolACE's system text dropped
    assert msgs[1].tool_calls == [
        ToolCall("Market Trends API", {"trend_type": "MARKET_INDEXES", "country": "us", "ratio": -0.5})
    ]
    assert msgs[2].name == "Market Trends API" and json.loads(msgs[2].content) == {
        "trends": [{"name": "S&P 500"}]
    }
    assert msgs[3].content.startswith("The S&P 500") and not msgs[3].tool_calls
    params = tools[0]["function"]["parameters"]
    assert params["type"] == "object" and params["required"] == ["trend_type"]
    assert params["properties"]["ratio"]["type"] == "number"  # "float" mapped to JSON schema


def test_when2call_sft_row_reads_toolcall_tags(tmp_path):
    path = write_jsonl(tmp_path / "when2call_train_sft.jsonl", [W2C_SFT_ROW])
    res = load(path, log=quiet)
    assert res.shape == "when2call"
    [(msgs, tools)] = res.conversations
    assert msgs[1].content == "" and msgs[1].tool_calls == [
        ToolCall("get_ico_calendar", {"category": "e-commerce,finance"})
    ]
    assert tools[0]["function"]["parameters"]["required"] == ["category"]


@pytest.mark.parametrize(
    "correct, content, calls",
    [
        ("tool_call", "", [ToolCall("get_ico_calendar", {"category": "finance"})]),
        ("request_for_info", "Which sectors are you interested in?", []),
        ("cannot_answer", "I cannot fetch the calendar with these tools.", []),
    ],
)
def test_when2call_mcq_row_answers_with_the_correct_choice(tmp_path, correct, content, calls):
    path = write_jsonl(tmp_path / "when2call_test_mcq.jsonl", [w2c_mcq_row(correct)])
    res = load(path, log=quiet)
    assert res.shape == "when2call"
    [(msgs, tools)] = res.conversations
    assert [m.role for m in msgs] == ["user", "assistant"]
    assert msgs[1].content == content and msgs[1].tool_calls == calls
    assert tools[0]["function"]["name"] == "get_ico_calendar"


def test_openai_row_names_tool_turns_from_call_ids(tmp_path):
    path = write_jsonl(tmp_path / "chat.jsonl", [OPENAI_ROW])
    res = load(path, log=quiet)
    assert res.shape == "openai"
    [(msgs, tools)] = res.conversations
    assert [m.role for m in msgs] == ["system", "user", "assistant", "tool", "assistant"]
    assert msgs[2].tool_calls == [ToolCall("get_ico_calendar", {"category": "finance"})]
    assert msgs[3].name == "get_ico_calendar"
    assert tools == OPENAI_ROW["tools"]  # already OpenAI-style: unchanged


@pytest.mark.parametrize(
    "row, shape",
    [(XLAM_ROW, "xlam"), (TOOLACE_ROW, "toolace"), (W2C_SFT_ROW, "when2call"), (OPENAI_ROW, "openai")],
)
def test_shape_is_detected_from_the_first_parseable_row(tmp_path, row, shape):
    path = write_jsonl(tmp_path / "rows.jsonl", [row, row], raw_lines=[(0, "{broken")])
    res = load(path, log=quiet)
    assert res.shape == shape and len(res.conversations) == 2 and res.skipped == 1


def test_named_shape_overrides_detection_and_skips_rows_that_do_not_fit(tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", [XLAM_ROW, OPENAI_ROW])
    res = load(path, "openai", log=quiet)
    assert len(res.conversations) == 1 and res.skipped == 1 and res.reasons[0].startswith("line 1:")
    assert parse_spec(f"openai:{path}") == ("openai", str(path)) and parse_spec(str(path)) == (
        None,
        str(path),
    )


# ---- bad rows ----------------------------------------------------------------------------------
def test_a_broken_line_is_reported_and_skipped(tmp_path):
    path = write_jsonl(tmp_path / "xlam.jsonl", [XLAM_ROW, XLAM_ROW], raw_lines=[(1, '{"query": "cut off')])
    logged = []
    res = load(path, log=logged.append)
    assert len(res.conversations) == 2 and res.skipped == 1
    assert res.reasons[0].startswith("line 2: not JSON")
    assert (
        any("skipped line 2" in m for m in logged) and "2 conversations (xlam), 1 rows skipped" in logged[-1]
    )


def test_only_the_first_few_skipped_rows_are_logged(tmp_path):
    path = write_jsonl(tmp_path / "x.jsonl", [XLAM_ROW], raw_lines=[(1, "nope")] * 8)
    logged = []
    res = load(path, log=logged.append)
    assert res.skipped == 8 and sum("skipped line" in m for m in logged) == 5
    assert "(3 not shown)" in logged[-1]


def bad_rows():
    unlisted = dict(XLAM_ROW, answers=json.dumps([{"name": "delete_everything", "arguments": {}}]))
    injected = json.loads(json.dumps(TOOLACE_ROW))
    injected["conversations"][1]["value"] = '[Market Trends API(trend_type=__import__("os").system("ls"))]'
    positional = json.loads(json.dumps(TOOLACE_ROW))
    positional["conversations"][1]["value"] = '[Market Trends API("MARKET_INDEXES")]'
    truncated = json.loads(json.dumps(TOOLACE_ROW))
    truncated["conversations"][1]["value"] = '[Market Trends API(trend_type="MARKET'
    no_answer = dict(OPENAI_ROW, messages=OPENAI_ROW["messages"][:2])
    bad_args = json.loads(json.dumps(OPENAI_ROW))
    bad_args["messages"][2]["tool_calls"][0]["function"]["arguments"] = "{category: finance"
    wrong_choice = dict(w2c_mcq_row("tool_call"), correct_answer="maybe")
    return [
        ("unlisted tool", XLAM_ROW, unlisted, "not among the row's tools"),
        ("code in an argument", TOOLACE_ROW, injected, "is not a literal"),
        ("positional argument", TOOLACE_ROW, positional, "positional"),
        ("truncated call list", TOOLACE_ROW, truncated, "does not parse"),
        ("no assistant turn", OPENAI_ROW, no_answer, "no assistant turn"),
        ("arguments not JSON", OPENAI_ROW, bad_args, "JSONDecodeError"),
        ("unknown MCQ choice", w2c_mcq_row("direct"), wrong_choice, "not one of the answers"),
    ]


@pytest.mark.parametrize("what, good, bad, reason", bad_rows(), ids=[b[0] for b in bad_rows()])
def test_a_row_that_does_not_fit_is_skipped(tmp_path, what, good, bad, reason):
    path = write_jsonl(tmp_path / "rows.jsonl", [good, bad])
    res = load(path, log=quiet)
    assert len(res.conversations) == 1 and res.skipped == 1, what
    assert res.reasons[0].startswith("line 2:") and reason in res.reasons[0]


def test_missing_file_unknown_shape_and_nothing_usable_raise_value_error(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        load(tmp_path / "nope.jsonl", log=quiet)
    path = write_jsonl(tmp_path / "bad.jsonl", [], raw_lines=[(0, "garbage"), (1, "[1, 2")])
    with pytest.raises(ValueError, match="no row could be used"):
        load(path, log=quiet)
    path = write_jsonl(tmp_path / "other.jsonl", [{"text": "hello"}])
    with pytest.raises(ValueError, match="cannot tell the dataset shape"):
        load(path, log=quiet)
    with pytest.raises(ValueError, match="unknown dataset shape"):
        load(path, "sharegpt", log=quiet)
    with pytest.raises(ValueError, match="unknown dataset shape 'xlm'"):
        parse_spec("xlm:" + str(path))


# ---- pure parsers ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, schema, optional",
    [
        ("str", {"type": "string"}, False),
        ("int", {"type": "integer"}, False),
        ("float", {"type": "number"}, False),
        ("bool", {"type": "boolean"}, False),
        ("List[int]", {"type": "array", "items": {"type": "integer"}}, False),
        ("List[Dict[str, Any]]", {"type": "array", "items": {"type": "object"}}, False),
        ("str, optional", {"type": "string"}, True),
        ("Optional[str]", {"type": "string"}, True),
        ("Union[int, float]", {"type": "number"}, False),
        ("Union[str, None]", {"type": "string"}, True),
        ("Any", {}, False),
        ("datetime.date", {"type": "string"}, False),
    ],
)
def test_type_names_map_to_json_schema(text, schema, optional):
    assert type_schema(text) == (schema, optional)


def test_openai_tool_schemas_pass_through_unchanged():
    schema = {"type": "function", "function": W2C_TOOL}
    assert tool_schema(schema) == schema and tool_schema(json.dumps(W2C_TOOL)) == schema


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The answer is 4.", None),
        ("[Note] this is prose", None),
        ("[1, 2, 3]", None),
        (
            '[f(a="x", b=[1, true, null], c={"k": -2.5})]',
            [ToolCall("f", {"a": "x", "b": [1, True, None], "c": {"k": -2.5}})],
        ),
        ("[math.factorial(n=5), f()]", [ToolCall("math.factorial", {"n": 5}), ToolCall("f", {})]),
    ],
)
def test_python_call_lists(text, expected):
    assert python_calls(text, ["f", "math.factorial"]) == expected


@pytest.mark.parametrize(
    "text", ["[f(a=lambda: 1)]", "[f(a=open('x'))]", "[f(**{'a': 1})]", "[f(a=1), 'x']", "[f(a=x.y)]"]
)
def test_python_call_lists_refuse_anything_but_literals(text):
    with pytest.raises(BadRow):
        python_calls(text, ["f"])


# ---- into SFT ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def bpe():
    """botpsy's byte-level BPE trained on a few world conversations, as the SFT tests use (≈1 s)."""
    pytest.importorskip("tokenizers")
    from botpsy.export.tiny_qwen import corpus_texts, train_tokenizer

    return train_tokenizer(corpus_texts(20), 600)


@pytest.mark.parametrize("row, name", [(XLAM_ROW, "x.json"), (TOOLACE_ROW, "t.json"), (OPENAI_ROW, "o.json")])
def test_converted_conversation_trains_on_assistant_tokens_only(tmp_path, bpe, row, name):
    from botpsy.data.sft import tokenize_conversation
    from botpsy.protocol.formats import ChatFormat

    path = tmp_path / name
    path.write_text(json.dumps([row]))
    [(msgs, tools)] = load(path, log=quiet).conversations
    fmt = ChatFormat("qwen35")
    ex = tokenize_conversation(msgs, tools, fmt, lambda s: bpe.encode(s, add_special_tokens=False).ids)
    ids, mask = ex["input_ids"], ex["assistant_masks"]
    assert len(ids) == len(mask) and 0 < sum(mask) < len(mask)
    trained = bpe.decode([i for i, m in zip(ids, mask, strict=True) if m], skip_special_tokens=False)
    assert trained == "".join(fmt.completion(m) for m in msgs if m.role == "assistant")
    untrained = bpe.decode([i for i, m in zip(ids, mask, strict=True) if not m], skip_special_tokens=False)
    assert untrained.startswith(fmt.system(tools, msgs[0].content if msgs[0].role == "system" else ""))
    for call in (c for m in msgs for c in m.tool_calls):
        assert f"<function={call.name}>" in trained and f"<function={call.name}>" not in untrained


def test_dataset_examples_and_shared_prefix(tmp_path, bpe):
    from botpsy.data.public import dataset_examples
    from botpsy.protocol.formats import IM_END, ChatFormat
    from botpsy.train.sft import shared_system_prefix, system_block_end

    xlam = tmp_path / "xlam.json"
    xlam.write_text(json.dumps([XLAM_ROW, XLAM_ROW]))
    chat = write_jsonl(tmp_path / "chat.jsonl", [OPENAI_ROW], raw_lines=[(0, "oops")])
    fmt = ChatFormat("qwen35")

    def tok(s):
        return bpe.encode(s, add_special_tokens=False).ids

    examples, skipped = dataset_examples([f"xlam:{xlam}", str(chat)], fmt, tok, log=quiet)
    assert len(examples) == 3 and skipped == 1
    ends = lambda row: system_block_end(row, lambda ids: bpe.decode(ids, skip_special_tokens=False))  # noqa: E731
    rows = [e["input_ids"] for e in examples]
    labels = [
        [t if m else -100 for t, m in zip(e["input_ids"], e["assistant_masks"], strict=True)]
        for e in examples
    ]
    # rows with different tools share only the block's opening; one row alone shares its whole block
    n = shared_system_prefix(rows, labels, ends)
    block = rows[0].index(tok(IM_END)[-1]) + 1
    assert 0 < n < block
    for e in examples:
        assert e["input_ids"][:n] == rows[0][:n] and e["assistant_masks"][n] == 0
    alone = shared_system_prefix(rows[:1], labels[:1], ends)
    assert alone == block and examples[0]["assistant_masks"][alone] == 0


def test_system_block_end_is_found_through_the_text():
    from botpsy.train.sft import shared_system_prefix, system_block_end

    # a vocabulary that spells <|im_end|> in pieces, the first merged with the text before it
    pieces = {1: "sys", 2: "tem.<", 3: "|im_end", 4: "|>", 5: "\n<|im_start|>user", 6: "hi", 7: "ok"}

    def decode(ids):
        return "".join(pieces[i] for i in ids)

    rows = [[1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 6]]
    assert system_block_end(rows[0], decode) == 4 and system_block_end([1, 2, 3], decode) == 0
    labels = [[-100] * 6 + [7], [-100] * 6 + [6]]
    ends = lambda row: system_block_end(row, decode)  # noqa: E731
    assert shared_system_prefix(rows, labels, ends) == 4
    assert shared_system_prefix(rows, [[-100, 2, *[-100] * 5]] * 2, ends) == 0  # a label at position 1
    assert shared_system_prefix([[1, 2, 3]], [[-100] * 3], ends) == 0  # no block end: nothing is shared


def test_recipe_takes_datasets_as_a_comma_separated_override(tmp_path):
    from botpsy.train.presets import resolve

    a = tmp_path / "a.json"
    a.write_text("[]")
    plan = resolve("tiny", ["sft"], [f"sft.datasets=xlam:{a},{a}"])
    assert plan["stages"]["sft"]["config"].datasets == (f"xlam:{a}", str(a))
    assert resolve("tiny", ["sft"], [])["stages"]["sft"]["config"].datasets == ()
    with pytest.raises(ValueError, match="not found"):
        resolve("tiny", ["sft"], [f"sft.datasets={tmp_path / 'missing.jsonl'}"])


# ---- rendered as the runtime renders ------------------------------------------------------------
def test_dataset_rows_get_the_runtime_system_prompt_and_date_line(tmp_path, bpe):
    """Public rows are shown the runtime's preamble (its system text with today's date, not the
    row's) and the agent's resolved-dates line, through the one renderer the synthetic
    conversations use (`data.mix.runtime_conversation`)."""
    from botpsy.agent.dates import annotate
    from botpsy.data.public import dataset_examples
    from botpsy.protocol.formats import ChatFormat
    from botpsy.worlds.kit import SYSTEM, TODAY

    row = {
        "messages": [
            {"role": "system", "content": "You are DatasetBot. Answer in ToolACE syntax."},
            {"role": "user", "content": "What is on my calendar tomorrow?"},
            {"role": "assistant", "content": "You have nothing booked tomorrow."},
        ],
        "tools": [],
    }
    path = write_jsonl(tmp_path / "chat.jsonl", [row])

    def tok(s):
        return bpe.encode(s, add_special_tokens=False).ids

    [ex], skipped = dataset_examples([f"openai:{path}"], ChatFormat("qwen35"), tok, log=quiet)
    text = bpe.decode(ex["input_ids"], skip_special_tokens=False)
    assert skipped == 0 and SYSTEM in text and "DatasetBot" not in text
    shown = annotate("What is on my calendar tomorrow?", TODAY)
    assert "(resolved:" in shown and "2026-12-02" in shown and shown in text


DATE_ROW = {
    "id": 1,
    "query": "Get the weather forecast for Oslo tomorrow.",
    "tools": json.dumps(
        [
            {
                "name": "forecast",
                "description": "Forecast.",
                "parameters": {"city": {"type": "str"}, "day": {"type": "str"}},
            }
        ]
    ),
}


@pytest.mark.parametrize(
    "query, day, conflict",
    [
        ("Get the weather forecast for Oslo tomorrow.", "2023-05-12", True),  # written on another day
        ("Get the weather forecast for Oslo tomorrow.", "2026-12-02", False),  # what the line says
        (
            "Get the forecast for Oslo on 2023-05-12, a day I remember.",
            "2023-05-12",
            False,
        ),  # the user's own date
        ("Get the weather forecast for Oslo.", "2023-05-12", False),  # no line: nothing to contradict
    ],
)
def test_rows_whose_dates_contradict_the_resolved_line_are_dropped(tmp_path, query, day, conflict):
    from botpsy.data.public import runtime_conversations

    row = {
        **DATE_ROW,
        "query": query,
        "answers": json.dumps([{"name": "forecast", "arguments": {"city": "Oslo", "day": day}}]),
    }
    path = tmp_path / "x.json"
    path.write_text(json.dumps([row]))
    convs, dropped = runtime_conversations(load(path, log=quiet))
    assert (len(convs), len(dropped)) == ((0, 1) if conflict else (1, 0))
    if conflict:
        assert dropped[0][0] == 0 and "2023-05-12" in dropped[0][1] and "2026-12-02" in dropped[0][1]


@pytest.mark.parametrize(
    "turns, expected",
    [
        # one call, straight from the request
        ([("assistant", [("forecast", {})])], ["forecast fits; its parameters come from the request."]),
        # several calls of one tool, and of two or three tools
        (
            [("assistant", [("forecast", {"city": "Oslo"}), ("forecast", {"city": "Lima"})])],
            ["2 requests for forecast, one call each, values from the request."],
        ),
        (
            [("assistant", [("forecast", {}), ("convert", {})])],
            ["Two requests: forecast and convert, each with its own values."],
        ),
        (
            [("assistant", [("a", {}), ("b", {}), ("c", {})])],
            ["3 requests: a, b and c, each with its own values."],
        ),
        # a chain: the second call follows a tool result; the text answer keeps no reasoning
        (
            [
                ("assistant", [("find", {})]),
                ("tool", "{}"),
                ("assistant", [("book", {})]),
                ("assistant", "Done."),
            ],
            [
                "find fits; its parameters come from the request.",
                None,
                "book next, with values from the request and the results so far.",
                None,
            ],
        ),
    ],
)
def test_public_call_turns_get_the_generated_tools_reasoning(turns, expected):
    """Public rows call with an empty <think>; the runtime's model decides call or decline at its
    first reasoning token, so each call turn gets the generated tools' line for its shape."""
    from botpsy.data.public import call_reasoning
    from botpsy.protocol.messages import Message

    msgs = [Message("user", "Plan my trip.")]
    for role, body in turns:
        if role == "tool":
            msgs.append(Message("tool", body, name="find"))
        elif isinstance(body, str):
            msgs.append(Message("assistant", body))
        else:
            msgs.append(Message("assistant", "", tool_calls=[ToolCall(n, a) for n, a in body]))
    out = call_reasoning(msgs)
    assert [m.reasoning for m in out[1:]] == expected
    assert [m.reasoning for m in msgs[1:]] == [None] * len(turns)  # the input is left as it was


def test_reasoning_a_row_has_is_kept():
    from botpsy.data.public import call_reasoning
    from botpsy.protocol.messages import Message

    m = Message("assistant", "", "The user wants Oslo's forecast.", [ToolCall("forecast", {"city": "Oslo"})])
    assert call_reasoning([Message("user", "Oslo?"), m])[1].reasoning == "The user wants Oslo's forecast."
