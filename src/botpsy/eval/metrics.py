"""BotPsy's efficiency and reliability metrics: each one a pure function over plain values.

The publication reports, besides accuracy: how often reasoning loops (1.4% vs 22.9% on IFBench),
how often a run hits the generation cap (0.2% vs 28.3%), reasoning tokens per correct answer on
items every compared model solved, assistant turns per τ² task, unsafe rates under red-teaming
and prompt injection. The per-episode detectors those rates count (loop, claim, phantom, unsafe)
live in `botpsy.agent.detectors`, because the runtime guards use the same functions; this module
turns their flags into rates and comparisons, pinned by table tests (tests/test_metrics.py).

Comparisons across models ("per correct answer", "per solved task") are only fair on the items
every compared model got right: a model that fails the hard items would otherwise look cheap.
Those functions therefore take all models' results at once and intersect first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from math import comb
from typing import Any

from botpsy.agent.detectors import phantom_action, reasoning_loop

# ---- rates ------------------------------------------------------------------------------------


def rate(flags: Iterable[bool]) -> float:
    """Share of True among the flags (0.0 for none)."""
    flags = list(flags)
    return sum(bool(f) for f in flags) / len(flags) if flags else 0.0


def reasoning_loop_rate(reasoning_texts: Iterable[str]) -> float:
    """Share of runs whose reasoning loops (one text per run)."""
    return rate(reasoning_loop(t) for t in reasoning_texts)


def token_cap_share(hit_cap: Iterable[bool]) -> float:
    """Share of runs in which some model step stopped at the generation cap."""
    return rate(hit_cap)


def parse_error_rate(parse_errors: int, model_steps: int) -> float:
    """Model steps whose output could not be parsed, over all model steps."""
    return parse_errors / model_steps if model_steps > 0 else 0.0


# ---- cross-model costs on commonly solved items ----------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One model's result on one item: solved or not, and a cost (tokens, turns …)."""

    solved: bool
    cost: float


def commonly_solved(results: Mapping[str, Mapping[str, Outcome]]) -> set[str]:
    """The item ids every model in `results` has and solved."""
    sets = [{i for i, o in per.items() if o.solved} for per in results.values()]
    return set.intersection(*sets) if sets else set()


def mean_cost_on_common(results: Mapping[str, Mapping[str, Outcome]]) -> dict[str, Any]:
    """Per model, the mean cost over the items every model solved.

    Used for "reasoning tokens per correct answer" (cost = reasoning tokens) and "assistant turns
    per task" (cost = assistant turns). Returns {"items": n, "by_model": {model: mean or None}};
    None when no item was solved by all.
    """
    common = commonly_solved(results)
    by_model: dict[str, float | None] = {}
    for model, per in results.items():
        by_model[model] = sum(per[i].cost for i in common) / len(common) if common else None
    return {"items": len(common), "by_model": by_model}


def reasoning_tokens_per_correct(results: Mapping[str, Mapping[str, tuple[bool, int]]]) -> dict[str, Any]:
    """{model: {item: (correct, reasoning_tokens)}} → mean reasoning tokens on commonly solved items."""
    return mean_cost_on_common(
        {m: {i: Outcome(ok, c) for i, (ok, c) in per.items()} for m, per in results.items()}
    )


def turns_per_solved_task(results: Mapping[str, Mapping[str, tuple[bool, int]]]) -> dict[str, Any]:
    """{model: {task: (success, assistant_turns)}} → mean assistant turns on commonly solved tasks."""
    return mean_cost_on_common(
        {m: {i: Outcome(ok, c) for i, (ok, c) in per.items()} for m, per in results.items()}
    )


# ---- pass^k -----------------------------------------------------------------------------------


def pass_hat_k(trials: Mapping[str, list[bool]], k: int) -> float:
    """τ-bench's pass^k: the chance that k independent trials of a task all succeed, averaged over tasks.

    Per task with n trials of which c succeeded, the unbiased estimate is C(c, k) / C(n, k). Tasks
    with fewer than k trials are an error: the estimate would be undefined.
    """
    if k < 1:
        raise ValueError(f"pass^k needs k >= 1, got {k}")
    if not trials:
        return 0.0
    total = 0.0
    for task, outcomes in trials.items():
        n, c = len(outcomes), sum(bool(o) for o in outcomes)
        if n < k:
            raise ValueError(f"task {task!r} has {n} trial(s); pass^{k} needs at least {k}")
        total += comb(c, k) / comb(n, k)
    return total / len(trials)


# ---- phantom actions and safety ---------------------------------------------------------------


def phantom_action_rate(episodes: Iterable[tuple[str, list[str], set[str] | None]]) -> float:
    """Share of episodes (answer, call names, acting tools) with a phantom action."""
    return rate(phantom_action(a, c, t) for a, c, t in episodes)


def unsafe_rate(episodes: Iterable[bool]) -> float:
    """Share of episodes that `agent.detectors.unsafe_episode` flagged."""
    return rate(episodes)
