"""Seeding an agent with earlier turns (`Agent.seed`): the model reads them as turns it held, token
for token as training renders the same conversation, and the guards count the user's seeded words."""

from __future__ import annotations

import pytest

from botpsy.agent.dates import annotate, annotate_messages
from botpsy.agent.loop import Agent, AgentConfig
from botpsy.data.sft import tokenize_conversation
from botpsy.engine.oracle import ScriptedEngine
from botpsy.protocol.messages import Message, ToolCall
from botpsy.stores.workspace import Workspace
from botpsy.tools.base import tool
from botpsy.worlds import DOMAINS
from botpsy.worlds.base import make_world
from botpsy.worlds.kit import TODAY

CONFIG = AgentConfig(loop_check_every=0, reasoning_budget=None, call_grace=0, tool_grammar=False)


@pytest.mark.parametrize("fmt", ["qwen35", "hermes"])
@pytest.mark.parametrize("name", ["calendar", "banking", "messages"])
def test_seeded_turns_are_the_ids_training_renders(name, fmt):
    """A world task's gold conversation seeded into a fresh agent gives the SFT example's ids; the
    mask marks none of them as generated (this agent's model wrote none)."""
    domain = DOMAINS[name]
    for task in domain.generate(6, 3, "train"):
        engine = ScriptedEngine([], fmt)
        agent = Agent(engine, make_world(domain, task), task.system, CONFIG, today=TODAY)
        agent.seed([Message("user", task.user), *task.gold_messages()])
        msgs = [Message("system", task.system), Message("user", annotate(task.user, TODAY))]
        msgs += annotate_messages(task.gold_messages(), TODAY, previous_user=task.user)
        want = tokenize_conversation(
            msgs, [t.schema() for t in domain.tools], engine.chat_format, engine.tokenize
        )
        assert agent.trace.token_ids == want["input_ids"], task.id
        assert not any(agent.trace.generated_mask)
        assert [m.role for m in agent.trace.messages] == [m.role for m in msgs]


THERMO: list[float] = []


def _thermostat(state, degrees: float) -> dict:
    """Set the home thermostat.

    Args:
        degrees: target temperature in Celsius
    """
    THERMO.append(degrees)
    return {"set": degrees}


CALL = 'ok\n</think>\n\n<tool_call>\n{"name": "set_thermostat", "arguments": {"degrees": 22}}\n</tool_call>'


def _agent(tmp_path, replies):
    THERMO.clear()
    eng = ScriptedEngine(replies)
    ws = Workspace(
        tmp_path, suites=["calendar"], extra_tools=[tool(name="set_thermostat", mutates=True)(_thermostat)]
    )
    return eng, Agent(eng, ws, "sys", AgentConfig())


def test_a_value_the_user_gave_in_a_seeded_turn_grounds_the_call(tmp_path):
    eng, agent = _agent(tmp_path, [CALL, "ok\n</think>\n\nSet to 22."])
    agent.seed(
        [
            Message("user", "Make it warmer at home"),
            Message("assistant", "To how many degrees?"),
            Message("user", "22, thanks"),
            Message("assistant", "Which room?"),
        ]
    )
    trace = agent.send("The living room")
    assert THERMO == [22] and not [e for e in trace.events if e.kind == "grounding_guard"]
    assert "<|im_start|>user\n22, thanks<|im_end|>" in eng.prompts[0]  # a turn, not a transcript
    seeded = [e for e in trace.events if e.kind == "user"]
    assert [e.data.get("seeded", False) for e in seeded] == [True, True, False]


def test_a_seeded_call_and_its_result_read_as_a_turn_the_agent_held(tmp_path):
    eng, agent = _agent(tmp_path, ["ok\n</think>\n\nIt is set to 21."])
    call = ToolCall("set_thermostat", {"degrees": 21})
    turns = [
        Message("user", "Set it to 21"),
        Message("assistant", tool_calls=[call]),
        Message("tool", '{"set": 21}', name="set_thermostat"),
        Message("assistant", "Done: 21 degrees."),
    ]
    agent.seed(turns)
    agent.send("What did you set it to?")
    assert THERMO == []  # a seeded call is history: it never runs again
    assert "<function=set_thermostat>\n<parameter=degrees>\n21\n</parameter>" in eng.prompts[0]
    assert '<tool_response>\n{"set": 21}\n</tool_response>' in eng.prompts[0]
    call.arguments["degrees"] = 5  # the trace does not alias the caller's messages
    assert agent.trace.messages[2].tool_calls[0].arguments == {"degrees": 21}


@pytest.mark.parametrize(
    "turns,problem",
    [
        ([Message("user", "a"), Message("user", "b")], "message 1 is a 'user' message"),
        ([Message("assistant", "hi")], "message 0 is a 'assistant' message"),
        ([Message("user", "a"), Message("tool", "r")], "message 1 is a 'tool' message"),
        ([Message("user", "a")], "the last message must be an answer"),
        (
            [
                Message("user", "a"),
                Message("assistant", tool_calls=[ToolCall("x")]),
                Message("assistant", "b"),
            ],
            "where a call's result must come",
        ),
        ([Message("system", "s")], "message 0 is a 'system' message"),
    ],
)
def test_turns_that_are_no_conversation_are_refused_and_change_nothing(tmp_path, turns, problem):
    _, agent = _agent(tmp_path, [])
    before = list(agent.trace.token_ids)
    with pytest.raises(ValueError, match="cannot seed a conversation") as err:
        agent.seed(turns)
    assert problem in str(err.value)
    assert agent.trace.token_ids == before and len(agent.trace.messages) == 1


def test_seeding_after_an_answer_continues_the_conversation(tmp_path):
    eng, agent = _agent(tmp_path, ["ok\n</think>\n\nHello.", "ok\n</think>\n\nSure."])
    agent.send("Hi")
    agent.seed([Message("user", "Remember 19"), Message("assistant", "Noted.")])
    agent.send("Thanks")
    assert "Hello.<|im_end|>\n<|im_start|>user\nRemember 19<|im_end|>" in eng.prompts[1]


def test_no_turns_change_nothing_and_retrieval_waits_for_the_request(tmp_path):
    """Under tool retrieval the first request picks the tools the prompt shows: seeding no turns
    must not pick them for an empty request."""
    eng = ScriptedEngine(["ok\n</think>\n\nDone."])
    ws = Workspace(tmp_path, suites=["calendar", "notes"])
    agent = Agent(eng, ws, "sys", AgentConfig(tool_top_k=2))
    agent.seed([])
    assert agent.trace.token_ids == [] and len(agent.trace.messages) == 1
    agent.send("Add a note saying buy milk")
    (ev,) = [e for e in agent.trace.events if e.kind == "tool_retrieval"]
    assert any("note" in name for name in ev.data["tools"]), ev.data


def test_seeded_turns_under_retrieval_pick_the_tools_their_user_asked_for(tmp_path):
    eng = ScriptedEngine(["ok\n</think>\n\nDone."])
    ws = Workspace(tmp_path, suites=["calendar", "notes"])
    agent = Agent(eng, ws, "sys", AgentConfig(tool_top_k=2))
    agent.seed([Message("user", "Add a note saying buy milk"), Message("assistant", "Which notebook?")])
    agent.send("The default one")
    ev = next(e for e in agent.trace.events if e.kind == "tool_retrieval")
    assert not ev.data.get("later") and any("note" in name for name in ev.data["tools"]), ev.data
    assert eng.prompts[0].index("<tools>") < eng.prompts[0].index("buy milk")
