"""The grounding guard (agent.grounding): a call with a number nobody stated is not run; the user is asked.

Pins what BFCL's irrelevance category showed of the embedded model: with no fitting tool it calls
the nearest one with made-up numbers. The gold of every training world must never trip the guard.
"""

import json

import pytest

from botpsy.agent.grounding import (
    ALL_PAIRS_UP_TO,
    ToolNumbers,
    ask_for,
    empty,
    held_calls,
    held_result,
    known_numbers,
    missing_paths,
    numbers_in,
    placeholder,
    tool_numbers,
    ungrounded,
)
from botpsy.agent.loop import Agent, AgentConfig
from botpsy.data.mix import MixConfig, mix_conversations
from botpsy.engine.oracle import ScriptedEngine
from botpsy.protocol.messages import Message, ToolCall
from botpsy.stores.workspace import Workspace
from botpsy.tools.base import tool
from botpsy.tools.registry import SUITES

# Every suite tool as the agent checks it (a conversation's later tools are not in its system
# block); synthetic tools come from the conversation.
SUITE_TOOLS = {t.name: tool_numbers(t.schema(), t.defaults) for s in SUITES.values() for t in s.tools}


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Transfer 1,200.50 to Bob", {1200.5}),
        ("set it to -4 degrees", {4.0, -4.0}),
        ("a 15% tip", {1.0, 15.0, 0.15}),  # "a" is one: "a pizza"
        ("budget of 5k", {5.0, 5000.0}),
        ("two tickets for a dozen people", {1.0, 2.0, 12.0}),
        ("twenty five apples and three hundred pears", {20.0, 5.0, 25.0, 3.0, 100.0, 300.0}),
        ("the third row", {3.0}),
        ("open it halfway", {0.5, 50.0}),
        ("(resolved: 2 hours = 120 minutes)", {2.0, 60.0, 3600.0, 120.0}),  # units: 60 a minute
        ("charges of 1e-9 and 2.5E+3, revenue of $1.2M", {1e-9, 2500.0, 1.2, 1.2e6}),
        ("the host count for February", {2.0}),
        ("order A12 on 2026-12-04", {12.0, 2026.0, 4.0}),  # a hyphen after a digit is no sign
        ("no numbers here", set()),
    ],
)
def test_numbers_in(text, expected):
    assert numbers_in(text) == expected


AREA = {
    "type": "function",
    "function": {
        "name": "area",
        "description": "Area of a triangle, rounded to 3 places by default.",
        "parameters": {
            "type": "object",
            "properties": {
                "base": {"type": "number"},
                "height": {"type": "number"},
                "unit": {"type": "string"},
                "precision": {"type": "integer", "default": 2},
                "mode": {"type": "integer", "enum": [1, 7]},
                "points": {"type": "array", "items": {"type": "integer"}},
                "exact": {"type": "boolean"},
            },
            "required": ["base", "height", "unit", "precision", "mode", "points", "exact"],
        },
    },
}
TOOL = tool_numbers(AREA, {"scale": 9})


def test_a_tool_offers_its_own_numbers():
    assert TOOL.offered == {2.0, 3.0, 1.0, 7.0, 9.0} and "height" in TOOL.required


def test_an_invented_number_is_ungrounded_and_a_stated_one_is_not():
    known = numbers_in("What is the area of a triangle with base 10 cm?")
    call = ToolCall("area", {"base": 10, "height": 5, "unit": "cm 99"})
    assert ungrounded(call, known, TOOL) == [("height", 5)]  # strings are not checked
    assert ungrounded(ToolCall("area", {"base": 10.0, "exact": True}), known, TOOL) == []


def test_what_the_tool_offers_lists_and_signs():
    known = numbers_in("points 4 and 6, ten below zero")
    offered_by_tool = {"precision": 2, "mode": 7, "height": 3, "base": 9}
    assert ungrounded(ToolCall("area", offered_by_tool), known, TOOL) == []
    assert ungrounded(ToolCall("area", {"precision": 4}), known, TOOL) == []  # stated
    assert ungrounded(ToolCall("area", {"points": [4, 6], "base": -10}), known, TOOL) == []
    assert ungrounded(ToolCall("area", {"points": [4, 8]}), known, TOOL) == [("points", [4, 8])]
    assert ungrounded(ToolCall("area", {"mode": 5}), known) == [("mode", 5)]


def test_a_negative_or_long_number_the_tool_states_is_offered_as_written():
    schema = {
        "name": "f",
        "description": "-1 means all; g is 9.80665",
        "parameters": {"required": ["n", "g"]},
    }
    assert ungrounded(ToolCall("f", {"n": -1, "g": 9.80665}), set(), tool_numbers(schema)) == []


def test_optional_parameters_are_the_models_to_refine():
    optional = ToolNumbers(frozenset(), frozenset({"base"}))
    assert ungrounded(ToolCall("area", {"base": 3, "precision": 8}), set(), optional) == [("base", 3)]


@pytest.mark.parametrize(
    "value,is_empty",
    [(None, True), ("", True), ("  ", True), ([], True), ({}, True), ([{}], True), (["", None], True),
     ({"a": []}, True), (0, False), (0.0, False), (False, False), ("0", False), ([0], False),
     ([{"x": 1}], False), ("London", False)],
)  # fmt: skip
def test_empty(value, is_empty):
    assert empty(value) is is_empty


def test_an_empty_required_argument_is_a_value_nobody_gave():
    """BFCL irrelevance: "Find me restaurants in London" with only a points-of-interest tool whose
    category is required became `find_pois(location="London", category=[])`."""
    pois = tool_numbers({"name": "find_pois", "parameters": {"required": ["location", "category"]}})
    known = numbers_in("Find me restaurants in London")
    call = ToolCall("find_pois", {"location": "London", "category": []})
    assert ungrounded(call, known, pois) == [("category", [])]
    assert ungrounded(ToolCall("find_pois", {"location": "London", "category": ["food"]}), known, pois) == []
    # an optional argument left empty is the tool's to default
    optional = tool_numbers({"name": "find_pois", "parameters": {"required": ["location"]}})
    assert ungrounded(call, known, optional) == []
    assert "is empty" in held_result(call, [("category", [])])


@pytest.mark.parametrize(
    "season,held",
    [("2014", True), ("2,014", True), (" 2019 ", True), ("2020", False), ("-2020", False),
     ("2014-15", False), ("the 2014 season", False), ("v2014", False)],
)  # fmt: skip
def test_a_string_that_is_only_a_number_is_checked_as_one(season, held):
    """ "What is the assist average of LeBron James?" became `average_scoring(season="2014")`: a
    number in quotes is still a number. A string with more than a number stays unchecked."""
    stats = tool_numbers({"name": "stats", "parameters": {"required": ["player", "season"]}})
    known = numbers_in("LeBron James in 2020?")
    call = ToolCall("stats", {"player": "LeBron James", "season": season})
    assert (ungrounded(call, known, stats) == [("season", season)]) is held


def test_one_step_of_arithmetic_on_stated_numbers():
    said = [
        Message("user", "Top up the groceries budget with another 100"),
        Message("tool", json.dumps({"groceries": {"limit": 400}, "gift_card": 128, "fare": 375})),
    ]
    known = known_numbers(said)
    assert {500.0, 300.0, 40000.0, 247.0} <= known and not {
        123.0,
        800.0,
        0.0,
    } & known  # 800 = 400 + 400: one number


def test_a_long_tool_result_combines_only_with_the_users_numbers():
    listing = json.dumps([{"id": i, "price": 1000 + 7 * i} for i in range(ALL_PAIRS_UP_TO)])
    known = known_numbers([Message("user", "add 3 more"), Message("tool", listing)])
    assert 1007.0 + 3 in known and 1000.0 + 1007.0 not in known


def test_only_system_user_and_tool_turns_ground_a_number():
    said = [
        Message("system", "Today is 2026-12-01."),
        Message("user", "Pay the bill"),
        Message("assistant", "I will pay 75."),  # the model's own words ground nothing
        Message("tool", json.dumps({"amount_due": 42.5})),
    ]
    calls = [ToolCall("pay", {"amount": 75}), ToolCall("pay", {"amount": 42.5, "day": 1})]
    held = held_calls(calls, {}, said)
    assert list(held) == [calls[0].key()] and held[calls[0].key()] == [("amount", 75)]
    assert ask_for(held, calls) == (
        "I don't have the amount for pay: you haven't said, and I won't guess. What should I use?"
    )


def test_the_question_names_a_value_once_however_many_calls_lacked_it():
    calls = [ToolCall("monitor", {"devices": [], "every": n}) for n in ("5min", "15min", "1h")]
    calls.append(ToolCall("alert", {"to": ""}))
    held = held_calls(calls, {}, [Message("user", "Watch the bandwidth every 5min, 15min and 1h")])
    assert len(held) == 4
    assert ask_for(held, calls) == (
        "I don't have the devices for monitor; the to for alert: you haven't said, and I won't guess. "
        "What should I use?"
    )


def test_the_gold_of_every_training_conversation_is_grounded():
    """Worlds (all suites and cross-suite), every task kind, and unseen synthetic tools: the
    conversations the model learns from never hold a number the guard would stop."""
    convs = mix_conversations(400, seed=5, cfg=MixConfig(domains=("all",), synthetic_share=0.25))
    checked = 0
    for conv in convs:
        synthetic = {s["function"]["name"]: tool_numbers(s) for s in conv.tools if conv.source == "synthetic"}
        tools = {**SUITE_TOOLS, **synthetic}
        for i, m in enumerate(conv.messages):
            if m.role == "assistant" and m.tool_calls:
                assert held_calls(m.tool_calls, tools, conv.messages[:i]) == {}, (conv.source, m)
                checked += 1
    assert checked > 300 and {c.source for c in convs} >= {"synthetic", "banking", "vehicle", "calendar"}


# ---- in the agent -------------------------------------------------------------------------------


def _thermostat(state, degrees: float) -> dict:
    """Set the home thermostat.

    Args:
        degrees: target temperature in degrees Celsius.
    """
    RAN.append(degrees)
    return {"set": degrees}


RAN: list[float] = []


def _agent(tmp_path, replies, **config):
    RAN.clear()
    extra = [tool(name="set_thermostat", mutates=True)(_thermostat)]
    eng = ScriptedEngine(replies)
    ws = Workspace(tmp_path, suites=["calendar"], extra_tools=extra)
    return eng, Agent(eng, ws, "sys", AgentConfig(**config))


CALL = 'ok\n</think>\n\n<tool_call>\n{"name": "set_thermostat", "arguments": {"degrees": 22}}\n</tool_call>'


def test_an_ungrounded_call_is_not_run_and_the_user_is_asked(tmp_path):
    eng, agent = _agent(tmp_path, [CALL, CALL])
    trace = agent.send("Make it warmer at home")
    assert RAN == [] and len(eng.prompts) == 1  # not run, no second model step
    assert trace.stopped == "answer" and trace.tool_calls == []  # the assistant made no call
    assert trace.final_answer == (
        "I don't have the degrees for set_thermostat: you haven't said, and I won't guess. What should I use?"
    )
    (ev,) = [e for e in trace.events if e.kind == "grounding_guard"]
    assert ev.data["held"] == {ToolCall("set_thermostat", {"degrees": 22.0}).key(): {"degrees": 22.0}}
    tool_msg = next(m for m in trace.messages if m.role == "tool")
    assert tool_msg.name == "grounding_guard" and '"kind": "ungrounded"' in tool_msg.content
    text = eng.detokenize(trace.token_ids)
    assert "degrees=22.0 appears nowhere in the conversation" in text  # the model sees why
    assert text.endswith(f"{trace.final_answer}<|im_end|>")
    # the user's answer grounds the value, and the model's next call runs
    agent.send("22 degrees please")
    assert RAN == [22]


@pytest.mark.parametrize(
    "request_text,config",
    [("Set the thermostat to 22", {}), ("Make it warmer at home", {"grounding_guard": False})],
)
def test_a_grounded_call_or_a_switched_off_guard_runs_it(tmp_path, request_text, config):
    _, agent = _agent(tmp_path, [CALL], **config)
    trace = agent.send(request_text)
    assert RAN == [22] and not [e for e in trace.events if e.kind == "grounding_guard"]


def test_a_made_up_amount_becomes_the_question_a_missing_info_task_needs():
    """ "I want to pay Noah": a made-up amount is not sent; the agent asks, the user's answer
    grounds the amount, and the task succeeds (the guard turned a wrong transfer into a question)."""
    from botpsy.eval.worlds import evaluate
    from botpsy.worlds import get_domain

    banking = get_domain("banking")
    task = next(t for t in banking.generate(40, seed=2, split="eval") if t.kind == "missing_info")
    (gold,) = task.gold_calls
    made_up = {**gold.arguments, "amount": 987654.32}

    def step(args):
        call = json.dumps({"name": gold.name, "arguments": args})
        return f"ok\n</think>\n\n<tool_call>\n{call}\n</tool_call>"

    eng = ScriptedEngine([step(made_up), step(gold.arguments), "ok\n</think>\n\nDone: sent."])
    rep = evaluate(lambda t: eng, banking, [task], "made-up")
    (r,) = rep.results
    assert r.held == 1 and rep.summary()["held"] == 1 and r.made_calls == 1, r
    assert r.success, r.reason
    assert "987654" not in json.dumps(task.gold)  # the made-up amount was never the task's


def test_missing_paths_name_the_values_inside_an_argument():
    known = known_numbers([Message("user", "The sea level rise for New York City from 2030 to 2050")])
    location = {"latitude": 40.7128, "longitude": -74.006}
    assert missing_paths("location", location, known) == ["location.latitude", "location.longitude"]
    assert missing_paths("span", {"from": 2030, "to": 2049}, known) == ["span.to"]
    assert missing_paths("dates", ["2030-01-01", ""], known) == ["dates[1]"]
    assert missing_paths("dates", [], known) == ["dates"]
    assert missing_paths("years", 12, known) == ["years"]


def test_the_guards_event_says_where_inside_an_argument_the_value_is_missing(tmp_path):
    eng, agent = _agent(tmp_path, [CALL])
    trace = agent.send("Make it warmer at home")
    (ev,) = [e for e in trace.events if e.kind == "grounding_guard"]
    assert ev.data["paths"] == {ToolCall("set_thermostat", {"degrees": 22.0}).key(): ["degrees"]}


@pytest.mark.parametrize(
    "key, value, said, is_placeholder",
    [
        ("book_id", "book_id", "", True),
        ("team1", "Team 1", "", True),
        ("data_entries", [{"patient_id": "patient_id", "kind": "x"}], "", True),
        ("book_id", "BK-204", "", False),
        ("project", "project", "analyse the project", False),  # the user's own word
        ("title", "", "", False),  # empty is `empty`'s to say
        ("count", 3, "", False),
    ],
)
def test_a_text_that_only_names_its_parameter_is_a_placeholder(key, value, said, is_placeholder):
    assert placeholder(key, value, said) is is_placeholder


def test_a_placeholder_in_a_required_argument_is_held_and_named_at_its_path():
    schema = {
        "type": "function",
        "function": {
            "name": "reserve_book",
            "parameters": {
                "type": "object",
                "properties": {"book_id": {"type": "string"}, "branch": {"type": "string"}},
                "required": ["book_id"],
            },
        },
    }
    call = ToolCall("reserve_book", {"book_id": "book_id", "branch": "branch"})
    said = [Message("user", "Reserve 'The Alchemist' at the New York branch")]
    held = held_calls([call], {"reserve_book": tool_numbers(schema)}, said)
    assert held == {call.key(): [("book_id", "book_id")]}  # the optional branch is not judged
    assert missing_paths("entries", [{"patient_id": "patient_id"}], set()) == ["entries[0].patient_id"]
