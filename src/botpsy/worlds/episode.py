"""One episode of a world task: a fresh world, the agent, the scripted user, the world checker.

This is the one place an episode runs: `eval worlds` (per-task figures, `eval.worlds`) and the
report's worlds items (`eval.world_items`, with safety and instruction flags) each had their own
copy of this loop (issue 15), and the copies had already drifted once (only one built the acting
user that telecom tasks need).

The agent comes in as `make_agent(world)`: worlds sit below the agent in the layer order
(tests/test_layers.py), so this module knows only what an episode needs of it — `send` a user
message and get the conversation's trace back, and the `trace` so far if `send` raised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from botpsy.protocol.messages import Trace
from botpsy.worlds.base import Domain, Task, Verdict, World, check_trace, make_user, make_world

# The scripted user answers at most this many times after the first request: enough for every
# generated task (one missing fact, one confirmation), and a bound on agents that keep asking.
MAX_USER_REPLIES = 4


class EpisodeAgent(Protocol):
    """What an episode needs of the agent (`agent.loop.Agent` is one)."""

    trace: Trace

    def send(self, text: str) -> Trace: ...


@dataclass
class Episode:
    trace: Trace
    world: World
    verdict: Verdict | None  # the world checker's; None when the agent raised (see `error`)
    error: Exception | None = None  # what the agent raised mid-conversation; the trace is as far as it got


def mutating_tools(domain: Domain) -> set[str]:
    return {t.name for t in domain.tools if t.labels.mutates}


def run_episode(domain: Domain, task: Task, make_agent: Callable[[World], EpisodeAgent]) -> Episode:
    """Run `task` in a fresh world of `domain` and judge it.

    The user's first message, then the scripted user's replies while the agent answers (at most
    MAX_USER_REPLIES). An exception from the agent (a backend that dies) ends the episode: it comes
    back in `error`, the trace marked stopped "error", and no verdict; the caller decides whether
    that is a failed task or a failed run.
    """
    world = make_world(domain, task)
    agent = make_agent(world)
    user = make_user(domain, task, world)
    try:
        trace = agent.send(task.user)
        for _ in range(MAX_USER_REPLIES):
            if trace.stopped != "answer":
                break
            reply = user.respond(trace.final_answer)
            if reply is None:
                break
            trace = agent.send(reply)
    except Exception as e:
        trace = agent.trace
        trace.stopped = "error"
        return Episode(trace, world, None, e)
    return Episode(trace, world, check_trace(task, trace, world.hash(), mutating_tools(domain)))
