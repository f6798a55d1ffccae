"""Long chats keep working (issue 36, item 4): old turns leave the window, failed turns leave the
history, /help and /reset exist.

Regression: `chat --suites all` answered "(no answer)" forever after five turns at the default
context: every turn, failed ones too, stayed in the history, and nothing made room.
"""

from __future__ import annotations

import pytest

from botpsy import cli, cli_agent
from botpsy.agent import history
from botpsy.agent.loop import Agent, AgentConfig
from botpsy.engine.base import EngineError
from botpsy.engine.oracle import ScriptedEngine
from botpsy.stores.workspace import Workspace

ANSWER = "ok\n</think>\n\nNoted, nothing on your calendar needs to change for that."


class WindowEngine(ScriptedEngine):
    """A scripted engine with llama.cpp's window rule: a prompt that fills the window is an error."""

    def __init__(self, texts, n_ctx):
        super().__init__(texts)
        self.n_ctx = n_ctx

    def generate(self, prompt_ids, max_tokens=512, temperature=0.0, on_text=None, **kw):
        if len(prompt_ids) >= self.n_ctx:
            raise EngineError(
                f"the conversation ({len(prompt_ids)} tokens) fills the context window ({self.n_ctx})"
            )
        return super().generate(prompt_ids, max_tokens, temperature, on_text)


def _agent(tmp_path, n_ctx=5000, turns=30):
    eng = WindowEngine([ANSWER] * turns, n_ctx)
    cfg = AgentConfig(max_tokens=96, loop_check_every=0, reasoning_budget=None)
    return Agent(eng, Workspace(tmp_path, suites=["calendar"]), "sys", cfg), eng


def test_thirty_turns_in_a_small_window_all_answer(tmp_path):
    agent, eng = _agent(tmp_path)
    system = list(agent.trace.token_ids)
    for i in range(30):
        trace = agent.send(f"Turn {i}: remind me that the plumber comes on Friday, please keep it in mind.")
        assert trace.stopped == "answer", (i, trace.events[-1])
    trimmed = [e for e in agent.trace.events if e.kind == "history_trimmed"]
    assert trimmed, (
        "a 5,000-byte window (the system block takes 2,956) cannot hold 30 turns: old ones must go"
    )
    ids = agent.trace.token_ids
    assert ids[: len(system)] == system  # the cached system prefix is never touched
    assert len(ids) < eng.n_ctx
    # the first kept turn follows the system block as a first request does (no stray separator)
    assert bytes(ids[len(system) :]).decode().startswith("<|im_start|>user\n")
    assert len(agent.trace.token_ids) == len(agent.trace.generated_mask)
    # every user message is still in the record, in order
    users = [m.content for m in agent.trace.messages if m.role == "user"]
    assert len(users) == 30 and users[0].startswith("Turn 0")


def test_dropping_keeps_the_rest_byte_for_byte(tmp_path):
    """After dropping, the ids equal a conversation that began at the first kept turn."""
    agent, _ = _agent(tmp_path, n_ctx=10**6)
    for i in range(4):
        agent.send(f"request {i}")
    before = list(agent.trace.token_ids)
    turns = agent.transcript.turns()
    history.drop_turns(agent, 2)
    assert agent.trace.token_ids == before[: turns[0][0]] + before[turns[2][1] :]
    assert [b - s for s, b in agent.transcript.turns()] == [0, *(b - s for s, b in turns[3:])]


@pytest.mark.parametrize(
    "turns, total, extra, limit, k",
    [
        ([(10, 10), (30, 31), (60, 61)], 90, 5, 100, 0),  # fits
        ([(10, 10), (30, 31), (60, 61)], 90, 20, 100, 1),  # one turn makes room
        ([(10, 10), (30, 31), (60, 61)], 90, 60, 100, 2),  # all but the newest
        ([(10, 10), (30, 31), (60, 61)], 90, 500, 100, 2),  # no help possible: still only the old ones
        ([(10, 10)], 90, 500, 100, 0),  # a single turn is never dropped
    ],
)
def test_turns_to_drop(turns, total, extra, limit, k):
    assert history.turns_to_drop(turns, total, extra, limit) == k


def test_checkpoint_rollback_and_reset(tmp_path):
    agent, _ = _agent(tmp_path, n_ctx=10**6)
    start = list(agent.trace.token_ids)
    agent.send("first")
    cp = agent.checkpoint()
    ids = list(agent.trace.token_ids)
    agent.send("second")
    agent.rollback(cp)
    assert agent.trace.token_ids == ids and len(agent.trace.messages) == cp.lengths["messages"]
    agent.reset()
    assert (
        agent.trace.token_ids == start
        and agent.trace.messages == []
        or all(m.role == "system" for m in agent.trace.messages)
    )
    assert agent.transcript.turns() == []


def _chat(monkeypatch, tmp_path, engine, inputs):
    monkeypatch.setattr(cli_agent, "open_engine", lambda model, n_ctx=4096, threads=None: engine)
    queue = list(inputs)
    monkeypatch.setattr(cli.console, "input", lambda prompt="", **k: queue.pop(0))
    return cli.main(["chat", "--workspace", str(tmp_path)])


def test_chat_help_reset_and_a_failed_turn_leaves_no_trace(monkeypatch, tmp_path, capsys):
    engine = WindowEngine([None, ANSWER, ANSWER], 10**6)  # the first request's backend dies
    code = _chat(monkeypatch, tmp_path, engine, ["first", "/help", "second", "/reset", "/nope", "third", ""])
    err = capsys.readouterr().err
    assert code == 0
    assert "/reset" in err and "conversation cleared" in err and "unknown command" in err
    # the failed first request left the history: the second request's prompt does not hold it
    assert "first" not in engine.prompts[1] and "second" in engine.prompts[1]
    # after /reset the third request starts over
    assert "second" not in engine.prompts[2] and "third" in engine.prompts[2]
