"""An acting call that repeats an earlier call of the same step word for word runs once
(agent.guards.repeated_calls); a repeated read runs again."""

from __future__ import annotations

import json

from botpsy.agent.guards import REPEATED_RESULT, repeated_calls
from botpsy.agent.loop import Agent, AgentConfig
from botpsy.engine.oracle import ScriptedEngine
from botpsy.protocol.messages import ToolCall
from botpsy.stores.workspace import Workspace

CALL = (
    "<tool_call>\n<function=create_event>\n<parameter=title>\nDentist\n</parameter>\n"
    "<parameter=start>\n2026-12-03T10:00\n</parameter>\n</function>\n</tool_call>"
)
OTHER = CALL.replace("Dentist", "Gym")


def test_repeats_are_found_by_name_and_arguments():
    a, b = ToolCall("f", {"x": 1, "y": "a"}), ToolCall("f", {"y": "a", "x": 1})
    calls = [a, ToolCall("f", {"x": 2}), b, ToolCall("g", {"x": 1, "y": "a"}), a]
    assert repeated_calls(calls, {"f", "g"}) == {2, 4}
    assert repeated_calls([a, ToolCall("f", {"x": 2})], {"f"}) == set()
    # Reads repeat legitimately (two draws from a random generator): only acting tools count.
    assert repeated_calls(calls, {"g"}) == set()


def test_a_repeated_write_runs_once_and_the_model_is_told(tmp_path):
    ws = Workspace(tmp_path, suites=["calendar"])
    eng = ScriptedEngine(
        ["Add it.\n</think>\n\n" + CALL + "\n" + OTHER + "\n" + CALL, "Done.\n</think>\n\nAdded both."]
    )
    events = []
    agent = Agent(
        eng, ws, "sys", AgentConfig(reasoning_budget=None, loop_check_every=0), on_event=events.append
    )
    trace = agent.send("Add a dentist appointment and a gym session on December 3 2026 at 10am")
    titles = sorted(e["title"] for e in json.loads(ws.call("list_events", {"date": "2026-12-03"}))["events"])
    assert titles == ["Dentist", "Gym"]  # not two dentist appointments
    step = next(m for m in trace.messages if m.role == "assistant")
    assert [c.arguments["title"] for c in step.tool_calls] == ["Dentist", "Gym"]  # what ran
    results = [m for m in trace.messages if m.role == "tool"]
    assert [m.name for m in results] == ["create_event", "create_event", "repeat_guard"]
    assert results[-1].content == REPEATED_RESULT
    assert [e.kind for e in events].count("repeated_calls") == 1
    assert trace.not_done == []  # a repeat is not a failed action


def test_a_repeated_read_runs_again(tmp_path):
    ws = Workspace(tmp_path, suites=["calendar"])
    read = "<tool_call>\n<function=list_events>\n<parameter=date>\n2026-12-03\n</parameter>\n</function>\n</tool_call>"
    eng = ScriptedEngine(["Look.\n</think>\n\n" + read + "\n" + read, "Seen.\n</think>\n\nNothing."])
    trace = Agent(eng, ws, "sys", AgentConfig(reasoning_budget=None, loop_check_every=0)).send(
        "What is on Dec 3 2026?"
    )
    assert [m.name for m in trace.messages if m.role == "tool"] == ["list_events", "list_events"]
