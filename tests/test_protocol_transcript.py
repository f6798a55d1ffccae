"""`Transcript`: the one construction of the ids the model reads (issue 34)."""

import pytest

from botpsy.agent.loop import Agent, AgentConfig
from botpsy.engine.oracle import ScriptedEngine
from botpsy.protocol.formats import ChatFormat
from botpsy.protocol.messages import Message, ToolCall
from botpsy.protocol.transcript import Transcript
from botpsy.stores.workspace import Workspace


def tok(text):
    return list(str(text).encode())


def test_blocks_kinds_and_masks():
    fmt = ChatFormat()
    msgs = [
        Message("system", "sys"),
        Message("user", "hi"),
        Message("assistant", "", "r", [ToolCall("list_events", {"date": "2026-12-03"})]),
        Message("tool", '{"events": []}', name="list_events"),
        Message("assistant", "Nothing.", "r"),
    ]
    t = Transcript.of_messages(msgs, [], fmt, tok, bos=[7])
    assert [k for _, k in t.blocks] == [
        "bos",
        "system",
        "request",
        "completion",
        "separator",
        "results",
        "completion",
    ]
    assert t.ids[0] == 7 and len(t.ids) == len(t.mask)
    # exactly the completions are generated
    gen = bytes(i for i, m in zip(t.ids, t.mask, strict=True) if m).decode()
    assert gen == str(fmt.completion(msgs[2])) + str(fmt.completion(msgs[4]))


def test_cut_and_drop_keep_blocks_in_step():
    t = Transcript(tok)
    t.add("SYS", "system")
    t.add("AAAA", "request")
    t.add("BB", "completion", generated=True)
    t.add("CCC", "request")
    t.drop(3, 9)  # the first request and its completion
    assert bytes(t.ids).decode() == "SYSCCC" and t.blocks == [(0, "system"), (3, "request")]
    t.cut(3)
    assert bytes(t.ids).decode() == "SYS" and t.blocks == [(0, "system")]
    with pytest.raises(ValueError, match="unknown block kind"):
        t.add("x", "banter")


def test_the_agent_reads_what_sft_builds(tmp_path):
    """The agent's transcript of a conversation equals `of_messages` on the messages it recorded."""
    call = "r\n</think>\n\n<tool_call>\n<function=list_events>\n<parameter=date>\n2026-12-03\n</parameter>\n</function>\n</tool_call>"
    eng = ScriptedEngine([call, "r\n</think>\n\nNothing that day."])
    ws = Workspace(tmp_path, suites=["calendar"])
    agent = Agent(eng, ws, "sys", AgentConfig(loop_check_every=0, reasoning_budget=None, call_grace=0))
    agent.send("What do I have on December 3 2026?")
    built = Transcript.of_messages(agent.trace.messages, ws.toolbox.schemas(), eng.chat_format, eng.tokenize)
    assert agent.transcript.ids == built.ids and agent.transcript.mask == built.mask
    assert [k for _, k in agent.transcript.blocks] == [k for _, k in built.blocks]
