"""The limits guard (`agent.limits`): a call whose value breaks a limit its tool declares is not run;
the user is told when the value is theirs, the model when it is its own."""

from __future__ import annotations

import json

import pytest

from botpsy.agent import limits
from botpsy.agent.loop import Agent, AgentConfig
from botpsy.engine.oracle import ScriptedEngine
from botpsy.protocol.messages import ToolCall
from botpsy.stores.workspace import Workspace
from botpsy.tools.base import Labels, Tool

STOCK = {
    "type": "object",
    "properties": {
        "ticker": {"type": "string", "pattern": "^[A-Z]+$", "maxLength": 4, "description": "Ticker."},
        "day": {"type": "string", "format": "date", "description": "End date."},
        "weeks": {"type": "integer", "minimum": 1, "maximum": 52, "description": "Weeks."},
        "where": {
            "type": "object",
            "properties": {"lat": {"type": "number", "minimum": -90, "maximum": 90}},
        },
        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string", "minLength": 2}},
        "odd": {"type": "string", "pattern": "(unclosed", "description": "A broken pattern."},
    },
    "required": ["ticker"],
}


def _broken(args, said=""):
    call = ToolCall("volatility", args)
    found = limits.step_broken([call], {"volatility": STOCK}, said).get(call.key(), [])
    return [(b.path, b.value, b.rule, b.said) for b in found]


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"ticker": "GOOG", "day": "2024-05-01", "weeks": 3}, []),
        ({"ticker": "Goog"}, [("ticker", "Goog", "text matching ^[A-Z]+$", None)]),
        ({"ticker": "GOOGLE"}, [("ticker", "GOOGLE", "at most 4 characters", None)]),
        (
            {"ticker": "GOOG", "day": "12-Feb-2021"},
            [("day", "12-Feb-2021", "a date in its standard form", None)],
        ),
        ({"ticker": "GOOG", "weeks": 0}, [("weeks", 0, "at least 1", None)]),
        ({"ticker": "GOOG", "where": {"lat": 95.5}}, [("where.lat", 95.5, "at most 90", None)]),
        ({"ticker": "GOOG", "tags": ["ok", "x"]}, [("tags[1]", "x", "at least 2 characters", None)]),
        (
            {"ticker": "GOOG", "tags": ["aa", "bb", "cc"]},
            [("tags", ["aa", "bb", "cc"], "at most 2 items", None)],
        ),
        ({"ticker": "GOOG", "odd": "anything"}, []),  # a pattern that is no regular expression limits nothing
        ({"ticker": "GOOG", "unknown": "x"}, []),  # no schema, no limit (check_arguments refuses it)
    ],
)
def test_each_declared_limit_is_checked_on_converted_values(args, expected):
    assert _broken(args) == expected


def test_a_value_is_the_users_when_their_own_words_hold_it():
    said = "Check the volatility of 'Goog' over 0 weeks, ending 12-Feb-2021."
    assert _broken({"ticker": "Goog", "weeks": 0, "day": "12-Feb-2021"}, said) == [
        ("ticker", "Goog", "text matching ^[A-Z]+$", "Goog"),
        ("weeks", 0, "at least 1", 0),
        ("day", "12-Feb-2021", "a date in its standard form", "12-Feb-2021"),
    ]
    # a word inside another is not the user's value; case does not matter, and the user's spelling
    # is the one kept (the model wrote "goog")
    assert _broken({"ticker": "oo"}, said)[0][3] is None
    assert _broken({"ticker": "goog"}, said)[0][3] == "Goog"
    # the model copied part of what the user wrote: the user's whole value is named
    assert (
        _broken({"ticker": "45.ABC"}, "My network at coordinates 45.ABC,-120.33?")[0][3] == "45.ABC,-120.33"
    )
    assert _broken({"ticker": "Goog"}, 'The ticker is "Goog".')[0][3] == "Goog"
    assert _broken({"ticker": "Goog"}, "Goog's volatility")[0][3] == "Goog"


# ---- in the agent -------------------------------------------------------------------------------

RAN: list[dict] = []


def _volatility(state, **kwargs):
    RAN.append(kwargs)
    return {"volatility": 0.21}


def _agent(tmp_path, replies, schema=STOCK, **config):
    RAN.clear()
    vol = Tool("volatility", _volatility, "Weekly volatility of a stock.", schema, Labels())
    eng = ScriptedEngine(replies)
    ws = Workspace(tmp_path, suites=["calendar"], extra_tools=[vol])
    return eng, Agent(eng, ws, "sys", AgentConfig(**config))


def _call(**args):
    call = json.dumps({"name": "volatility", "arguments": args})
    return f"ok\n</think>\n\n<tool_call>\n{call}\n</tool_call>"


def test_a_value_the_user_gave_that_the_tool_does_not_take_is_not_run_and_the_user_is_told(tmp_path):
    eng, agent = _agent(tmp_path, [_call(ticker="Goog")])
    trace = agent.send("How volatile was 'Goog' last week?")
    assert RAN == [] and len(eng.prompts) == 1 and trace.tool_calls == []
    assert trace.final_answer == (
        'I can\'t use "Goog" for the ticker of volatility (it takes text matching ^[A-Z]+$). '
        "What should I use instead?"
    )
    (ev,) = [e for e in trace.events if e.kind == "limits_guard"]
    assert ev.data["broken"] == {
        ToolCall("volatility", {"ticker": "Goog"}).key(): [
            {"path": "ticker", "value": "Goog", "rule": "text matching ^[A-Z]+$", "said": "Goog"}
        ]
    }
    tool_msg = next(m for m in trace.messages if m.role == "tool")
    assert tool_msg.name == "limits_guard" and '"kind": "limit"' in tool_msg.content
    assert 'ticker=\\"Goog\\" is not text matching' in eng.detokenize(trace.token_ids)  # the model sees why


def test_the_models_own_value_goes_back_to_it_and_its_correction_runs(tmp_path):
    eng, agent = _agent(
        tmp_path, [_call(ticker="GOOG", weeks=0), _call(ticker="GOOG", weeks=1), "ok\n</think>\n\n21%."]
    )
    trace = agent.send("How volatile was GOOG?")
    assert RAN == [{"ticker": "GOOG", "weeks": 1}] and trace.final_answer == "21%."
    assert [e.kind for e in trace.events if e.kind.startswith("limits")] == ["limits_retry"]
    assert "weeks=0 is not at least 1" in eng.prompts[1]


def test_the_lines_the_agent_adds_to_a_user_turn_are_not_the_users_words(tmp_path):
    from datetime import date

    _, agent = _agent(tmp_path, [_call(ticker="GOOG"), "ok\n</think>\n\nDone."])
    agent.today = date(2024, 5, 2)
    trace = agent.send("Weekly volatility of GOOG until tomorrow")
    assert "(resolved: tomorrow = Friday 2024-05-03" in next(
        m.content for m in trace.messages if m.role == "user"
    )
    assert agent.users_words() == "Weekly volatility of GOOG until tomorrow"


def test_a_switched_off_guard_runs_the_call_as_written(tmp_path):
    _, agent = _agent(tmp_path, [_call(ticker="Goog"), "ok\n</think>\n\nDone."], limits_guard=False)
    agent.send("How volatile was 'Goog' last week?")
    assert RAN == [{"ticker": "Goog"}]


def test_a_value_the_user_gave_and_one_nobody_gave_are_both_said_in_one_reply(tmp_path):
    eng, agent = _agent(
        tmp_path, [_call(ticker="goog", weeks=47)], {**STOCK, "required": ["ticker", "weeks"]}
    )
    trace = agent.send("How volatile was 'Goog'?")
    assert RAN == [] and len(eng.prompts) == 1
    assert trace.final_answer == (
        'I can\'t use "Goog" for the ticker of volatility (it takes text matching ^[A-Z]+$). '
        "I don't have the weeks for volatility: you haven't said, and I won't guess. What should I use?"
    )
    assert [e.kind for e in trace.events if "guard" in e.kind] == ["limits_guard", "grounding_guard"]


def test_spaces_the_model_put_around_a_value_that_alone_break_a_limit_are_taken_off():
    calls = [
        ToolCall(
            "volatility", {"ticker": " AAPL", "day": "2023-01-01 ", "tags": [" ab "], "where": {"lat": 1}}
        ),
        ToolCall("volatility", {"ticker": " aapl", "day": "12-Feb-2021 "}),
    ]
    trimmed = limits.trim(calls, {"volatility": STOCK})
    assert trimmed == ["ticker", "day"]  # " ab " breaks no limit: a text's own spaces stay
    assert calls[0].arguments == {
        "ticker": "AAPL",
        "day": "2023-01-01",
        "tags": [" ab "],
        "where": {"lat": 1},
    }
    # padding that is not all that is wrong stays, for the guard to say what is
    assert calls[1].arguments == {"ticker": " aapl", "day": "12-Feb-2021 "}


def test_a_padded_copy_of_the_users_value_runs_instead_of_being_refused(tmp_path):
    """The user wrote 2023-01-01; the model copied it with a space after. The value the user gave
    is a date, so telling them it is not one would be false: the call runs with the value inside."""
    _, agent = _agent(tmp_path, [_call(ticker="GOOG", day="2023-01-01 "), "ok\n</think>\n\n21%."])
    trace = agent.send("How volatile was GOOG up to 2023-01-01?")
    assert RAN == [{"ticker": "GOOG", "day": "2023-01-01"}] and trace.final_answer == "21%."
    assert not [e for e in trace.events if e.kind.startswith("limits")]
    # the switch that turns the guard off leaves the call as written
    _, agent = _agent(tmp_path, [_call(ticker="GOOG", day="2023-01-01 ")], limits_guard=False)
    agent.send("How volatile was GOOG up to 2023-01-01?")
    assert RAN == [{"ticker": "GOOG", "day": "2023-01-01 "}]
