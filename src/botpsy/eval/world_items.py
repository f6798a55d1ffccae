"""The worlds as per-item results for the report: success, kind, and the safety and honesty flags.

Same episode as `eval.worlds.run_episode` (agent, scripted user, the world checker), with two
differences: the user is `make_user`'s, so users who act on their own device (telecom) do, and
each episode also records whether its final answer claims an action no call made (phantom action)
and, on injection and sensitive tasks, whether it was unsafe (see `eval.metrics`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from botpsy.agent.loop import Agent, AgentConfig
from botpsy.engine.base import Engine, EngineError
from botpsy.eval.metrics import phantom_action, unsafe_episode
from botpsy.eval.runs import ItemResult, ResultCache, run_items, token_counter, trace_figures
from botpsy.eval.worlds import _reason_class
from botpsy.worlds.base import Domain, Task, check_trace, make_user, make_world

SAFETY_KINDS = ("injection", "sensitive")


def _reason(text: str) -> str:
    # Keep how an episode ended (token_cap, step_limit): the class alone would hide it.
    return text[:40] if text.startswith("episode ended by") else _reason_class(text)


def run_world_item(domain: Domain, task: Task, engine: Engine, model: str, config: AgentConfig) -> ItemResult:
    world = make_world(domain, task)
    agent = Agent(engine, world, task.system, config)
    user = make_user(domain, task, world)
    trace = agent.send(task.user)
    for _ in range(4):
        if trace.stopped != "answer":
            break
        reply = user.respond(trace.final_answer)
        if reply is None:
            break
        trace = agent.send(reply)
    if trace.stopped == "error":
        raise EngineError(
            next((e.data["message"] for e in reversed(trace.events) if e.kind == "error"), "backend error")
        )
    mutating = {t.name for t in domain.tools if t.labels.mutates}
    acting = {t.name for t in domain.tools if t.labels.mutates or t.labels.egress}
    verdict = check_trace(task, trace, world.hash(), mutating)
    turns = [
        (m.role, [c.name for c in m.tool_calls]) for m in trace.messages if m.role in ("user", "assistant")
    ]
    unsafe = unsafe_episode(task.kind, turns, task.forbidden, acting) if task.kind in SAFETY_KINDS else None
    return ItemResult(
        "worlds",
        domain.name,
        task.id,
        model,
        verdict.success,
        "" if verdict.success else _reason(verdict.reason),
        detail={
            "kind": task.kind,
            "phantom": phantom_action(trace.final_answer, [c.name for c in trace.tool_calls], acting),
            "unsafe": unsafe,
        },
        **trace_figures(trace, token_counter(engine)),
    )


def evaluate_worlds_items(
    domains: list[Domain],
    n_per_domain: int,
    model: str,
    engine_for: Callable[[Task], Engine],
    config: AgentConfig = AgentConfig(),
    out: str | Path | None = None,
    progress: Callable[[ItemResult], None] | None = None,
    on_domain: Callable[[str, int], None] | None = None,
    seed: int = 1000,
    trial: int = 0,
    run_config: dict[str, Any] | None = None,
) -> list[ItemResult]:
    """Held-out tasks of every domain; `trial` tells repeated runs apart (for pass^k)."""
    cache = ResultCache(
        out, "worlds", model, {"model": model, "n": n_per_domain, "seed": seed, **(run_config or {})}
    )
    results: list[ItemResult] = []
    for domain in domains:
        tasks = domain.generate(n_per_domain, seed, "eval")
        if on_domain:
            on_domain(domain.name, len(tasks))
        results += run_items(
            ((domain.name, t.id, t) for t in tasks),
            lambda t, d=domain: run_world_item(d, t, engine_for(t), model, config),
            cache,
            "worlds",
            model,
            progress,
            seed=trial,
        )
    return results
