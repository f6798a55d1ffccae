"""The one episode runner (issue 15): a world task through any agent, the scripted user, the checker."""

from __future__ import annotations

import dataclasses

import pytest

from botpsy.agent.loop import Agent, AgentConfig
from botpsy.engine.oracle import OracleEngine
from botpsy.protocol.messages import Message, Trace
from botpsy.worlds import DOMAINS, get_domain
from botpsy.worlds.episode import MAX_USER_REPLIES, run_episode
from botpsy.worlds.kit import TODAY


class Parrot:
    """An agent without a model: answers every message with a fixed text, or raises on message `fail_at`."""

    def __init__(self, answer: str = "ok", fail_at: int | None = None):
        self.trace, self.answer, self.fail_at, self.heard = Trace(), answer, fail_at, []

    def send(self, text: str) -> Trace:
        self.heard.append(text)
        if self.fail_at is not None and len(self.heard) > self.fail_at:
            raise ConnectionError("backend gone")
        self.trace.messages += [Message("user", text), Message("assistant", self.answer)]
        self.trace.stopped = "answer"
        return self.trace


def _oracle_agent(task, config=AgentConfig(max_tokens=512)):
    engine = OracleEngine(task.gold_messages())
    return lambda world: Agent(engine, world, task.system, config, today=TODAY)


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_the_gold_oracle_passes_every_kind_of_every_world(name):
    domain = get_domain(name)
    for task in domain.generate(6, 1000, "eval"):
        episode = run_episode(domain, task, _oracle_agent(task))
        assert episode.error is None and episode.verdict is not None
        assert episode.verdict.success, (task.id, episode.verdict.reason)
        assert episode.world.hash() == task.expected_hash


def test_a_wrong_answer_is_judged_not_raised():
    domain = get_domain("calendar")
    mutating = {t.name for t in domain.tools if t.labels.mutates}
    task = next(t for t in domain.generate(20, 1000, "eval") if {c.name for c in t.gold_calls} & mutating)
    episode = run_episode(domain, task, lambda world: Parrot("nothing done"))
    assert episode.error is None and not episode.verdict.success


def test_an_agent_that_raises_ends_the_episode_with_its_trace():
    domain = get_domain("calendar")
    task = next(t for t in domain.generate(40, 1000, "eval") if t.user_replies)
    agent = Parrot(fail_at=1)  # the first request is answered, the user's reply is not
    episode = run_episode(domain, task, lambda world: agent)
    assert isinstance(episode.error, ConnectionError) and episode.verdict is None
    assert episode.trace is agent.trace and episode.trace.stopped == "error"
    assert len(episode.trace.messages) == 2


def test_the_scripted_user_answers_a_bounded_number_of_times():
    domain = get_domain("calendar")
    task = domain.generate(1, 1000, "eval")[0]
    task = dataclasses.replace(task, user_replies=[f"reply {i}" for i in range(MAX_USER_REPLIES + 3)])
    agent = Parrot()
    run_episode(domain, task, lambda world: agent)
    assert agent.heard == [task.user, *task.user_replies[:MAX_USER_REPLIES]]


def test_each_episode_gets_a_fresh_world():
    domain = get_domain("calendar")
    task = next(t for t in domain.generate(20, 1000, "eval") if t.gold_calls)
    first = run_episode(domain, task, _oracle_agent(task))
    second = run_episode(domain, task, _oracle_agent(task))
    assert first.world is not second.world and first.world.state is not second.world.state
    assert second.verdict.success
