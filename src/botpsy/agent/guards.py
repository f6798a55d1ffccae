"""Runtime guards of the agent loop: cut looping or overlong reasoning, catch phantom actions.

Both guards use the detectors evaluation counts with (`botpsy.agent.detectors`), so what the runtime
prevents is exactly what evaluation counts; every time a guard fires the loop records an event
(`loop_guard`, `phantom_guard`) so evaluation can also count the interventions.

**Loop guard.** Engines generate a whole step at once and offer no stop callback, but every
engine honours `max_tokens` and takes token ids as its prompt. So the loop generates the
reasoning part of a step in chunks of `loop_check_every` tokens: after each chunk it appends the
generated ids (without the end-of-turn marker the engine adds on a cap) and checks the reasoning
so far with `detectors.reasoning_loop`, and against the reasoning budget. A cut appends a forced
`</think>` (masked as not generated) and generation continues to the answer or tool call. The
conversation stays append-only, so a prefix-caching engine (llama.cpp) evaluates one pending
token per chunk instead of prefilling again; streaming (`on_text`) still sees every piece. Once
the reasoning has closed, the rest of the step is one generate call, as without the guard.

A post-hoc check on an engine that ignores `max_tokens` (the scripted test engines) could only
report a loop, not save its tokens, so the guard does not fire there.

**Phantom-action guard.** An answer that claims a completed action ("I've sent it") while no
acting tool (mutating or egress) was called since the user's message gets one nudge and one
retry. The nudge goes back as a `<tool_response>` error, the same channel as parse errors:
not as a user message, because evaluation reads a user turn as the user's consent (a retried
mutating call would count as confirmed), and not as a system message, because Qwen's chat
templates accept a system message only at the start. If the retry still calls nothing, its
answer stands — the claim may refer to an earlier turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from botpsy.agent.detectors import action_claims, phantom_action, reasoning_loop
from botpsy.protocol.formats import THINK_CLOSE, tojson
from botpsy.protocol.messages import StepTiming, ToolCall
from botpsy.tools.base import Tool

# What the loop appends to close a cut reasoning: the same text the chat format puts between a
# reasoning and its answer (`ChatFormat.completion`), so the model continues as after a real close.
FORCED_CLOSE = f"\n{THINK_CLOSE}\n\n"


def resolve_budget(budget: int | str | None, max_tokens: int, answer_reserve: int) -> int | None:
    """Reasoning tokens per step before the loop guard cuts, or None for no budget.

    "auto" keeps `answer_reserve` tokens of the step's cap for the answer (None when the cap is
    too small to split); 0 or None switch the budget off; a budget at or above `max_tokens`
    never fires (the token cap comes first).
    """
    if budget == "auto":
        budget = max_tokens - answer_reserve if max_tokens >= 2 * answer_reserve else None
    elif budget is not None and not isinstance(budget, int):
        raise ValueError(f"reasoning_budget: expected a token count, 0, None or 'auto', got {budget!r}")
    return budget if budget and budget > 0 else None


def cut_reason(reasoning: str, reasoning_tokens: int, budget: int | None, check_loops: bool) -> str | None:
    """Why an unfinished reasoning must be cut now: "loop", "budget", or None to let it go on."""
    if check_loops and reasoning_loop(reasoning):
        return "loop"
    if budget is not None and reasoning_tokens >= budget:
        return "budget"
    return None


def merge_timings(parts: list[StepTiming]) -> StepTiming:
    """One model step's timing from the timings of its chunks (`len(trace.timings)` counts steps).

    Time to first token and prefill speed are the first chunk's (later chunks prefill a few
    tokens); prompt and generated tokens and the total time add up; decode speed is the decode
    tokens over the decode time of all chunks.
    """
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    generated = sum(t.generated_tokens for t in parts)
    decode_s = sum(max(t.total_s - t.ttft_s, 0.0) for t in parts)
    decode_tokens = sum(max(t.generated_tokens - 1, 0) for t in parts)
    return StepTiming(
        prompt_tokens=sum(t.prompt_tokens for t in parts),
        cached_tokens=first.cached_tokens,
        generated_tokens=generated,
        ttft_s=first.ttft_s,
        prefill_tok_s=first.prefill_tok_s,
        decode_tok_s=decode_tokens / decode_s if decode_s > 0 else 0.0,
        total_s=sum(t.total_s for t in parts),
    )


def acting_tools(tools: Iterable[Tool]) -> set[str]:
    """Tools whose call performs an action a claim can refer to (as evaluation counts them)."""
    return {t.name for t in tools if t.labels.mutates or t.labels.egress}


def unresolved(not_done: Iterable[str], calls_made: Iterable[str]) -> list[str]:
    """The declined or failed calls that no later successful call of the same tool made good."""
    made = set(calls_made)
    return sorted({n for n in not_done if n not in made})


def phantom_claims(
    answer: str, calls_made: list[str], acting: set[str], not_done: Iterable[str] = ()
) -> list[str]:
    """The action claims of an answer that no successful acting call backs (empty: nothing to nudge).

    `calls_made` are this turn's acting calls that succeeded; `not_done` the calls that were
    declined or failed. A claim stands unbacked when nothing acted, and also when some action was
    declined or failed and never made good: a declined call must never be followed by "Done".
    With no acting tool installed nothing can back a claim, and no call would help: no nudge.
    """
    if not acting:
        return []
    if phantom_action(answer, calls_made, acting) or unresolved(not_done, calls_made):
        return action_claims(answer)
    return []


def phantom_nudge(claims: list[str], not_done: Iterable[str] = ()) -> str:
    """The tool-response note that asks for the call the answer claims, or for the truth."""
    failed = unresolved(not_done, [])
    if failed:
        error = (
            f"your answer says an action was done, but {', '.join(failed)} was declined or failed "
            f"and did nothing: {json.dumps(claims[0])}. Tell the user it was not done"
        )
    else:
        error = (
            "your answer says an action was done, but no tool call did it in this turn: "
            f"{json.dumps(claims[0])}. To do it you must call the tool now; if you did not do it, "
            "say so instead of claiming it"
        )
    return tojson({"error": error, "kind": "phantom_action"})


def not_done_answer(not_done: Iterable[str]) -> str:
    """What the user is told when the model insists on a claim after a declined or failed call."""
    names = ", ".join(unresolved(not_done, []))
    return f"This was not done: {names} was declined or failed, so nothing was changed by it."


# The tool response of an acting call that repeats an earlier one of the same step word for word.
REPEATED_RESULT = json.dumps({"error": "the same action as the call before in this step; it ran once"})


def repeated_calls(calls: Iterable[ToolCall], acting: set[str]) -> set[int]:
    """Positions of the acting calls (`acting_tools`) that repeat an earlier call of the same step
    exactly (name and arguments). A small model loops a call it has just written; running it again
    would send, pay or delete twice. Reads are left alone: two identical draws from a random
    generator are two answers (BFCL's parallel_158 asks for exactly that)."""
    seen: set[str] = set()
    out: set[int] = set()
    for i, c in enumerate(calls):
        if c.name in acting and c.key() in seen:
            out.add(i)
        seen.add(c.key())
    return out
