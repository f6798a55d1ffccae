"""World evaluation: run the agent on held-out tasks and judge each episode with the world checker.

Figures (all in [0, 1]):
* `success` — the checker's verdict: final state hash, required facts, and the kind's rule;
* `tool_call_exact` — the calls made equal the gold calls, in order, after filling defaults and
  normalising text case and spacing (a no-call task is exact when no call was made);
* `parse_error_rate` — model steps whose output could not be parsed, over all model steps;
* `no_call_accuracy` — on tasks whose gold makes no call, the share where the agent made none;
plus `success` per task kind. An episode that crashes is scored failed with its reason recorded.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botpsy.agent.loop import Agent, AgentConfig
from botpsy.engine.base import Engine
from botpsy.protocol.messages import Trace
from botpsy.worlds.base import Domain, Task
from botpsy.worlds.calls import norm_call
from botpsy.worlds.episode import run_episode
from botpsy.worlds.kit import TODAY


@dataclass
class EpisodeResult:
    task_id: str
    kind: str
    success: bool
    exact: bool
    parse_errors: int
    steps: int
    no_gold_calls: bool
    made_calls: int
    reason: str = ""
    generated_tokens: int = 0
    assistant_turns: int = 0
    domain: str = ""
    forbidden_calls: int = 0  # calls to the task's forbidden tools (an injection followed)
    held: int = 0  # model steps the grounding guard did not run (agent/grounding.py)


def run_task(
    engine_for: Callable[[Task], Engine], domain: Domain, task: Task, config: AgentConfig = AgentConfig()
) -> tuple[Trace, EpisodeResult]:
    """One episode (`worlds.episode.run_episode`) and its figures."""
    engine = engine_for(task)
    episode = run_episode(domain, task, lambda world: Agent(engine, world, task.system, config, today=TODAY))
    trace, verdict, e = episode.trace, episode.verdict, episode.error
    if e is not None:  # a backend that dies mid-run: score as failed, keep going
        return trace, EpisodeResult(
            task.id,
            task.kind,
            False,
            False,
            trace.parse_errors,
            len(trace.timings),
            not task.gold_calls,
            len(trace.tool_calls),
            f"{type(e).__name__}: {e}",
            domain=task.domain,
        )
    assert verdict is not None  # every episode that ran to its end is judged
    made = [norm_call(c, domain) for c in trace.tool_calls]
    gold = [norm_call(c, domain) for c in task.gold_calls]
    return trace, EpisodeResult(
        task.id,
        task.kind,
        verdict.success,
        made == gold,
        trace.parse_errors,
        len(trace.timings),
        not gold,
        len(made),
        verdict.reason,
        sum(t.generated_tokens for t in trace.timings),
        trace.assistant_turns,
        task.domain,
        sum(c.name in task.forbidden for c in trace.tool_calls),
        sum(e.kind == "grounding_guard" for e in trace.events),
    )


@dataclass
class WorldsReport:
    model: str
    n: int
    success: float
    tool_call_exact: float
    parse_error_rate: float
    no_call_accuracy: float
    by_kind: dict[str, float] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    results: list[EpisodeResult] = field(default_factory=list)
    by_domain: dict[str, float] = field(default_factory=dict)  # filled when several worlds ran
    forbidden_calls: int = 0  # over all episodes: injected instructions followed
    held: int = 0  # over all episodes: model steps the grounding guard did not run

    def summary(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "n": self.n,
            "success": round(self.success, 4),
            "tool_call_exact": round(self.tool_call_exact, 4),
            "parse_error_rate": round(self.parse_error_rate, 4),
            "no_call_accuracy": round(self.no_call_accuracy, 4),
            "by_kind": {k: round(v, 4) for k, v in self.by_kind.items()},
            "failures": self.failures,
            "forbidden_calls": self.forbidden_calls,
            "held": self.held,
            **({"by_domain": {k: round(v, 4) for k, v in self.by_domain.items()}} if self.by_domain else {}),
        }


def evaluate(
    engine_for: Callable[[Task], Engine],
    domain: Domain,
    tasks: list[Task],
    model_name: str,
    config: AgentConfig = AgentConfig(),
    progress: Callable[[EpisodeResult], None] | None = None,
) -> WorldsReport:
    return evaluate_items(engine_for, [(domain, t) for t in tasks], model_name, config, progress)


def evaluate_items(
    engine_for: Callable[[Task], Engine],
    items: list[tuple[Domain, Task]],
    model_name: str,
    config: AgentConfig = AgentConfig(),
    progress: Callable[[EpisodeResult], None] | None = None,
) -> WorldsReport:
    """Tasks of one or several worlds, each run in its own world; `by_domain` when several."""
    results = []
    for domain, task in items:
        _, res = run_task(engine_for, domain, task, config)
        results.append(res)
        if progress:
            progress(res)
    n = max(len(results), 1)
    steps = sum(r.steps for r in results)
    no_call = [r for r in results if r.no_gold_calls]
    kinds: dict[str, list[bool]] = defaultdict(list)
    domains: dict[str, list[bool]] = defaultdict(list)
    for r in results:
        kinds[r.kind].append(r.success)
        domains[r.domain].append(r.success)
    failures = Counter(_reason_class(r.reason) for r in results if not r.success)
    return WorldsReport(
        model=model_name,
        n=len(results),
        success=sum(r.success for r in results) / n,
        tool_call_exact=sum(r.exact for r in results) / n,
        parse_error_rate=sum(r.parse_errors for r in results) / max(steps, 1),
        no_call_accuracy=sum(r.made_calls == 0 for r in no_call) / max(len(no_call), 1),
        by_kind={k: sum(v) / len(v) for k, v in sorted(kinds.items())},
        failures=dict(failures),
        results=results,
        by_domain={k: sum(v) / len(v) for k, v in domains.items()} if len(domains) > 1 else {},
        forbidden_calls=sum(r.forbidden_calls for r in results),
        held=sum(r.held for r in results),
    )


def _reason_class(reason: str) -> str:
    for key in ("final state", "answer lacks", "made", "acted before", "episode ended by", "Error"):
        if key in reason:
            return key
    return reason.split(":")[0][:40] or "unknown"
