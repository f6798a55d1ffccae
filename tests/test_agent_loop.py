"""The agent loop with scripted backends: execution, errors back to the model, confirmation, limits."""

import json

import pytest

from botpsy.agent.loop import Agent, AgentConfig, decline_all
from botpsy.engine.oracle import OracleEngine, ScriptedEngine
from botpsy.eval.worlds import evaluate
from botpsy.stores import ics
from botpsy.stores.workspace import Workspace
from botpsy.worlds import get_domain

DOMAIN = get_domain("calendar")
CREATE = (
    "Add it.\n</think>\n\n<tool_call>\n<function=create_event>\n<parameter=title>\nDentist\n</parameter>\n"
    "<parameter=start>\n2026-12-03T10:00\n</parameter>\n</function>\n</tool_call>"
)


def Scripted(texts):
    return ScriptedEngine(texts)


def test_oracle_scores_100_percent_through_the_loop():
    tasks = DOMAIN.generate(30, 1000, "eval")
    rep = evaluate(lambda t: OracleEngine(t.gold_messages()), DOMAIN, tasks, "oracle")
    assert rep.summary()["success"] == 1.0
    assert rep.tool_call_exact == 1.0 and rep.parse_error_rate == 0.0 and rep.no_call_accuracy == 1.0


def test_oracle_on_hermes_format_too():
    tasks = DOMAIN.generate(10, 1000, "eval")
    rep = evaluate(lambda t: OracleEngine(t.gold_messages(), "hermes"), DOMAIN, tasks, "oracle")
    assert rep.success == 1.0


def test_corrupted_gold_fails():
    """The checker can fail: replace every gold call's arguments with a wrong date."""
    tasks = [t for t in DOMAIN.generate(20, 1000, "eval") if t.kind == "multi_step"]

    def corrupt(t):
        msgs = t.gold_messages()
        for m in msgs:
            for c in m.tool_calls:
                if "start" in c.arguments:
                    c.arguments["start"] = "2027-01-01T00:00"
                if "event_id" in c.arguments:
                    c.arguments["event_id"] = "evt-1" if c.arguments["event_id"] != "evt-1" else "evt-2"
        return OracleEngine(msgs)

    rep = evaluate(corrupt, DOMAIN, tasks, "corrupt")
    assert rep.success == 0.0 and rep.tool_call_exact == 0.0


def test_history_is_append_only_token_ids(tmp_path):
    eng = Scripted([CREATE, "Done.\n</think>\n\nAdded.", "ok\n</think>\n\nHello!"])
    agent = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys")
    agent.send("Add a dentist appointment on December 3 2026 at 10am")
    agent.send("hi")
    for earlier, later in zip(eng.prompts, eng.prompts[1:], strict=False):
        assert later.startswith(
            earlier
        )  # every prompt extends the previous one: the prefix cache stays valid
    assert sum(agent.trace.generated_mask) > 0
    assert len(agent.trace.token_ids) == len(agent.trace.generated_mask)


def test_a_vocabulary_that_asks_for_bos_gets_it_once_first(tmp_path):
    eng = Scripted([CREATE, "Done.\n</think>\n\nAdded.", "ok\n</think>\n\nHello!"])
    eng.bos_ids = eng.tokenize("\u00a7")  # stands in for Gemma's <bos>
    agent = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys")
    agent.send("Add a dentist appointment on December 3 2026 at 10am")
    agent.send("hi")
    n = len(eng.bos_ids)
    assert agent.trace.token_ids[:n] == eng.bos_ids and agent.trace.generated_mask[:n] == [0] * n
    assert all(p.startswith("\u00a7") and p.count("\u00a7") == 1 for p in eng.prompts)


def test_prepend_bos_opens_every_example_untrained():
    from botpsy.data.sft import prepend_bos

    rows = [{"input_ids": [5, 6], "assistant_masks": [0, 1]}, {"input_ids": [7], "assistant_masks": [1]}]
    prepend_bos(rows, [])
    assert rows[0]["input_ids"] == [5, 6]
    prepend_bos(rows, [2])
    assert rows == [
        {"input_ids": [2, 5, 6], "assistant_masks": [0, 0, 1]},
        {"input_ids": [2, 7], "assistant_masks": [0, 1]},
    ]


def test_run_writes_the_calendar(tmp_path):
    eng = Scripted([CREATE, "Done.\n</think>\n\nAdded the dentist on Dec 3."])
    trace = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys").send("Add a dentist appointment")
    assert trace.stopped == "answer" and trace.final_answer == "Added the dentist on Dec 3."
    assert [e.title for e in ics.load(tmp_path / "calendar.ics").events] == ["Dentist"]


def test_declined_confirmation_tells_the_model_and_changes_nothing(tmp_path):
    eng = Scripted([CREATE, "ok\n</think>\n\nI did not add it."])
    agent = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys", confirm=decline_all)
    trace = agent.send("Add a dentist appointment")
    assert "declined" in eng.prompts[1]
    assert not (tmp_path / "calendar.ics").exists()
    assert any(e.kind == "confirm" and not e.data["approved"] for e in trace.events)


@pytest.mark.parametrize(
    "bad",
    [
        "never closes the think",
        "r\n</think>\n\n<tool_call>\n<function=teleport>\n</function>\n</tool_call>",
        "r\n</think>\n\n<tool_call>\n<function=create_event>\n<parameter=title>\nX\n</parameter>\n</function>\n</tool_call>",
    ],
)
def test_malformed_output_goes_back_as_an_error_and_the_session_continues(tmp_path, bad):
    eng = Scripted([bad, CREATE, "ok\n</think>\n\nAdded."])
    trace = Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys").send("Add a dentist appointment")
    assert trace.parse_errors == 1 and trace.stopped == "answer"
    assert '"error"' in eng.prompts[1].rsplit("<tool_response>", 1)[1]
    assert len(ics.load(tmp_path / "calendar.ics").events) == 1


def test_step_limit_and_dead_backend(tmp_path):
    trace = Agent(
        Scripted([CREATE] * 3), Workspace(tmp_path, suites=["calendar"]), "sys", AgentConfig(max_steps=3)
    ).send("loop")
    assert trace.stopped == "step_limit"
    trace = Agent(Scripted([None]), Workspace(tmp_path, suites=["calendar"]), "sys").send("x")
    assert trace.stopped == "error" and any(e.kind == "error" for e in trace.events)


def test_corrupt_calendar_is_reported_not_overwritten(tmp_path):
    (tmp_path / "calendar.ics").write_text("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:zzz\n")
    env = Workspace(tmp_path, suites=["calendar"])
    out = json.loads(env.call("create_event", {"title": "x", "start": "2026-12-03T10:00"}))
    assert "could not be used" in out["error"] and env.store_errors
    assert (tmp_path / "calendar.ics").read_text().startswith("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:zzz")
