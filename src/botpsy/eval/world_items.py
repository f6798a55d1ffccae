"""The worlds as per-item results for the report: success, kind, and the safety and honesty flags.

The episode is `worlds.episode.run_episode` (agent, scripted user, the world checker), as in
`eval worlds`; each item also records whether its final answer claims an action no call made
(phantom action) and, on injection and sensitive tasks, whether it was unsafe (see
`agent.detectors`). A backend that fails fails the item (`eval.runs.run_items` records why).

Instruction-following tasks of the worlds (kind "instruction"): a held-out world task whose request
also carries one IFBench constraint on the answer ("Write the entire response in title case"),
drawn from the constraint types RL2 never trains on (`data.verifiable.if_instruction_ids`). It
succeeds when the world checker passes *and* IFBench's own verifier accepts the final answer, so
a model must act correctly and shape its reply. The gold oracle replays gold text that ignores the
constraint, so this kind is the one where the oracle is not a 100% self-check.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from botpsy.agent.detectors import phantom_action, unsafe_episode
from botpsy.agent.guards import acting_tools
from botpsy.agent.loop import Agent, AgentConfig
from botpsy.data.verifiable import check_instruction, draw_instruction
from botpsy.engine.base import Engine, EngineError
from botpsy.eval.runs import ItemResult, ResultCache, run_items, token_counter, trace_figures
from botpsy.eval.worlds import _reason_class
from botpsy.worlds.base import Domain, Task
from botpsy.worlds.episode import run_episode
from botpsy.worlds.kit import TODAY

SAFETY_KINDS = ("injection", "sensitive")
INSTRUCTED_FROM = ("single", "multi_step", "no_call", "impossible")  # kinds whose answer is the model's own


def instructed_task(task: Task, seed: int = 0) -> tuple[Task, str, dict[str, Any]]:
    """The task with one held-out IFBench constraint appended to its request (deterministic)."""
    drawn = draw_instruction(random.Random(f"{task.id}:{seed}"), held_out=True)
    if drawn is None:
        raise ValueError(f"no IFBench constraint could be drawn for {task.id}")
    iid, text, kwargs = drawn
    return dataclasses.replace(task, id=f"{task.id}-if", user=f"{task.user}\n\n{text}"), iid, kwargs


def instructed_tasks(domain: Domain, n: int, seed: int) -> list[tuple[Task, str, dict[str, Any]]]:
    """`n` held-out tasks of `domain` with a constraint each, from the kinds in INSTRUCTED_FROM."""
    if n <= 0:
        return []
    pool = [t for t in domain.generate(4 * n + 8, seed + 1, "eval") if t.kind in INSTRUCTED_FROM]
    return [instructed_task(t, seed) for t in pool[:n]]


def _reason(text: str) -> str:
    # Keep how an episode ended (token_cap, step_limit): the class alone would hide it.
    return text[:40] if text.startswith("episode ended by") else _reason_class(text)


def run_world_item(
    domain: Domain,
    task: Task,
    engine: Engine,
    model: str,
    config: AgentConfig,
    instruction: tuple[str, dict[str, Any]] | None = None,
) -> ItemResult:
    episode = run_episode(domain, task, lambda world: Agent(engine, world, task.system, config, today=TODAY))
    if episode.error is not None:
        raise episode.error
    trace, verdict = episode.trace, episode.verdict
    if trace.stopped == "error":
        raise EngineError(
            next((e.data["message"] for e in reversed(trace.events) if e.kind == "error"), "backend error")
        )
    assert verdict is not None  # every episode that ran to its end is judged
    acting = acting_tools(domain.tools)
    turns = [
        (m.role, [c.name for c in m.tool_calls]) for m in trace.messages if m.role in ("user", "assistant")
    ]
    unsafe = unsafe_episode(task.kind, turns, task.forbidden, acting) if task.kind in SAFETY_KINDS else None
    ok, reason = verdict.success, "" if verdict.success else _reason(verdict.reason)
    detail: dict[str, Any] = {
        "kind": task.kind,
        "phantom": phantom_action(trace.final_answer, [c.name for c in trace.tool_calls], acting),
        "unsafe": unsafe,
    }
    if instruction is not None:
        iid, kwargs = instruction
        followed = check_instruction(trace.final_answer, iid, kwargs) > 0
        detail.update(kind="instruction", task_kind=task.kind, instruction=iid, instruction_followed=followed)
        if ok and not followed:
            ok, reason = False, "instruction not followed"
    return ItemResult(
        "worlds",
        domain.name,
        task.id,
        model,
        ok,
        reason,
        detail=detail,
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
    instructed_per_domain: int = 0,
) -> list[ItemResult]:
    """Held-out tasks of every domain, plus `instructed_per_domain` instruction-following ones;
    `trial` tells repeated runs apart (for pass^k)."""
    extra = {"instructed": instructed_per_domain} if instructed_per_domain else {}
    cache = ResultCache(
        out, "worlds", model, {"model": model, "n": n_per_domain, "seed": seed, **extra, **(run_config or {})}
    )
    results: list[ItemResult] = []
    for domain in domains:
        tasks = domain.generate(n_per_domain, seed, "eval")
        instructed = instructed_tasks(domain, instructed_per_domain, seed)
        if on_domain:
            on_domain(domain.name, len(tasks) + len(instructed))
        results += run_items(
            ((domain.name, t.id, t) for t in tasks),
            lambda t, d=domain: run_world_item(d, t, engine_for(t), model, config),
            cache,
            "worlds",
            model,
            progress,
            seed=trial,
        )
        results += run_items(
            ((domain.name, t.id, (t, (iid, kw))) for t, iid, kw in instructed),
            lambda item, d=domain: run_world_item(d, item[0], engine_for(item[0]), model, config, item[1]),
            cache,
            "worlds",
            model,
            progress,
            seed=trial,
        )
    return results
