"""Table tests for the RL1 tool-use rewards: gold, partial, malformed and adversarial completions."""

import pytest

from botpsy.data.turns import TurnItem, call_reward, format_reward, success_reward, tool_reward, turn_items
from botpsy.protocol.formats import ChatFormat
from botpsy.protocol.messages import Message, ToolCall
from botpsy.worlds import get_domain

FMT = ChatFormat("qwen35")


def _tasks():
    by_kind = {}
    for t in get_domain("calendar").generate(40, 0, "train"):
        by_kind.setdefault(t.kind, t)
    return by_kind


TASKS = _tasks()


def item(kind: str, turn: int = 0) -> TurnItem:
    return TurnItem(TASKS[kind], turn)


def text(msg: Message) -> str:
    return FMT.completion(msg)


def gold(kind: str, turn: int = 0) -> str:
    return text(item(kind, turn).gold_message())


def with_args(kind: str, **changes) -> str:
    m = item(kind).gold_message()
    c = m.tool_calls[0]
    return text(Message("assistant", "", "ok", [ToolCall(c.name, {**c.arguments, **changes})]))


def n_gold_args():
    from botpsy.data.turns import _norm_args

    return len(_norm_args(single_call(), get_domain("calendar")))


def single_call():
    return item("single").gold_message().tool_calls[0]


CASES = [
    # (name, kind, completion, format, calls, success)
    ("gold single call", "single", lambda: gold("single"), 1.0, 1.0, 1.0),
    ("gold no-call answer", "no_call", lambda: gold("no_call"), 1.0, 1.0, 1.0),
    ("gold asks for missing info", "missing_info", lambda: gold("missing_info"), 1.0, 1.0, 1.0),
    ("gold refusal of impossible", "impossible", lambda: gold("impossible"), 1.0, 1.0, 1.0),
    (
        "IM_END stripped by the decoder",
        "single",
        lambda: gold("single").replace("<|im_end|>", ""),
        1.0,
        1.0,
        1.0,
    ),
    # one of the gold's normalised arguments (defaults filled in) is wrong
    (
        "wrong start value",
        "single",
        lambda: with_args("single", start="2026-12-31T23:00"),
        1.0,
        lambda: (2 + 1 - 1 / n_gold_args()) / 3,
        0.0,
    ),
    (
        "title case differs only",
        "single",
        lambda: with_args("single", title=single_call().arguments["title"].upper()),
        1.0,
        1.0,
        1.0,
    ),
    (
        "wrong tool",
        "single",
        lambda: text(Message("assistant", "", "", [ToolCall("list_events", {"date": "2026-12-09"})])),
        1.0,
        0.0,
        0.0,
    ),
    ("call where none was needed", "no_call", lambda: gold("single"), 1.0, 0.0, 0.0),
    ("mutating before asking", "missing_info", lambda: with_args("single"), 1.0, 0.0, 0.0),
    (
        "answer instead of a call",
        "single",
        lambda: "I will do that.\n</think>\n\nSure, added!",
        1.0,
        0.0,
        0.0,
    ),
    ("reasoning never closed", "single", lambda: "let me think " * 50, 0.0, 0.0, 0.0),
    ("empty completion", "single", lambda: "", 0.0, 0.0, 0.0),
    ("empty answer after reasoning", "no_call", lambda: "fine\n</think>\n\n", 0.0, 0.0, 0.0),
    # regression: TRL sums the reward functions, so every one must gate on format itself
    ("unclosed reasoning on a no-call turn", "no_call", lambda: "thinking forever " * 20, 0.0, 0.0, 0.0),
    (
        "unknown function",
        "single",
        lambda: "x\n</think>\n\n<tool_call>\n<function=delete_everything>\n</function>\n</tool_call>",
        0.0,
        0.0,
        0.0,
    ),
    (
        "unclosed parameter",
        "single",
        lambda: (
            "x\n</think>\n\n<tool_call>\n<function=create_event>\n<parameter=title>\nA\n</function>\n</tool_call>"
        ),
        0.0,
        0.0,
        0.0,
    ),
    ("stray closing tag", "single", lambda: "x\n</think>\n\nok </tool_call>", 0.0, 0.0, 0.0),
    (
        "unknown argument",
        "single",
        lambda: with_args("single", colour="red"),
        0.0,
        0.0,
        0.0,
    ),
    (
        "hermes JSON instead of XML",
        "single",
        lambda: 'x\n</think>\n\n<tool_call>\n{"name": "create_event", "arguments": {}}\n</tool_call>',
        0.0,
        0.0,
        0.0,
    ),
    (
        "duplicated gold call",
        "single",
        lambda: gold("single").replace(
            "</tool_call>", "</tool_call>\n" + FMT.calls(item("single").gold_message().tool_calls, False), 1
        ),
        1.0,
        (0.5 + 0.5 + 0.5) / 3,
        0.0,
    ),
    (
        "reward hacking: fake tool response in text",
        "single",
        lambda: 'x\n</think>\n\n<tool_response>{"created": 1}</tool_response> Done!',
        1.0,
        0.0,
        0.0,
    ),
]


@pytest.mark.parametrize("name,kind,make,fmt_r,call_r,succ_r", CASES, ids=[c[0] for c in CASES])
def test_reward_table(name, kind, make, fmt_r, call_r, succ_r):
    completion, it = make(), item(kind)
    assert format_reward(completion, it) == pytest.approx(fmt_r)
    assert call_reward(completion, it) == pytest.approx(call_r() if callable(call_r) else call_r)
    assert success_reward(completion, it) == pytest.approx(succ_r)
    total = tool_reward(completion, it)
    assert 0.0 <= total <= 1.0
    if fmt_r == 0.0:
        assert total == 0.0  # malformed output earns nothing


def test_later_turns_are_multi_turn_items():
    """Turn 1 of a multi-step task sees the first call's result and is rewarded on the second call."""
    it = item("multi_step", 1)
    assert "<tool_response>" in it.prompt(FMT)
    assert tool_reward(gold("multi_step", 1), it) == pytest.approx(1.0)
    assert (
        success_reward(gold("multi_step", 0), it) == 0.0
    )  # repeating the first call does not finish the task


def test_final_answer_turn_needs_the_required_facts():
    last = turn_items([TASKS["single"]])[-1]
    assert success_reward(text(last.gold_message()), last) == 1.0
    assert success_reward("ok\n</think>\n\nDone.", last) == float(not TASKS["single"].required_facts)


def test_turn_item_round_trips_through_json():
    it = item("multi_step", 1)
    back = TurnItem.from_json(it.to_json())
    assert back.turn == 1 and back.task.id == it.task.id and back.prompt(FMT) == it.prompt(FMT)


def test_every_gold_turn_of_every_kind_earns_full_reward():
    """The rewards agree with the world checker on gold: any shortfall would teach the model away from gold."""
    for task in get_domain("calendar").generate(25, 3, "train"):
        for it in turn_items([task]):
            assert tool_reward(text(it.gold_message()), it) == pytest.approx(1.0), (task.kind, it.turn)


@pytest.mark.parametrize(
    "n,max_len,cache,expected",
    [
        (10, 100, 20, 0.0),
        (80, 100, 20, 0.0),
        (90, 100, 20, -0.5),
        (100, 100, 20, -1.0),
        (150, 100, 20, -1.0),
        (100, 100, 0, 0.0),
        (101, 100, 0, -1.0),
    ],
)
def test_overlong_penalty(n, max_len, cache, expected):
    from botpsy.train.rewards import overlong_penalty

    assert overlong_penalty(n, max_len, cache) == pytest.approx(expected)


@pytest.mark.parametrize(
    "completion,expected",
    [
        ("Let me add the event.\n</think>\n\nDone.", 0.0),
        ("I should check the calendar for that day first. " * 8 + "\n</think>\n\nok", -1.0),
        ("I should check the calendar for that day first. " * 8, -1.0),  # never closed: still a loop
        ("", 0.0),
        (
            "ok\n</think>\n\n" + "the answer text repeats itself many many times over " * 8,
            0.0,
        ),  # only reasoning counts
    ],
)
def test_loop_penalty(completion, expected):
    from botpsy.train.rewards import loop_penalty

    assert loop_penalty(completion) == expected


def test_each_completion_is_parsed_once_for_all_rewards(monkeypatch):
    """RL1's three rewards (and tool_reward's sum) read one parse of a completion (issue 34)."""
    from botpsy.data import turns

    calls = []
    real = turns.parse_completion

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(turns, "parse_completion", counting)
    turns._parse.cache_clear()
    item = turns.turn_items(get_domain("calendar").generate(3, 7, "train"))[0]
    text = "ok\n</think>\n\nA text no other test parses."
    for fn in (turns.format_reward, turns.call_reward, turns.success_reward, turns.tool_reward):
        fn(text, item)
    assert calls.count(text) == 1
