"""A conversation that outlives the context window: checkpoints, rollback, and dropping old turns.

`botpsy chat --suites all` stopped answering after five turns at the default 4,096-token window
(issue 36, item 4): every turn stayed in the history, failed ones too, and nothing made room, so
each later request overflowed and printed "(no answer)".

* A **checkpoint** records how long the trace's lists are and the agent fields that move with the
  conversation; **rollback** cuts back to it. Chat drops an interrupted request or a failed turn
  that changed nothing this way, and `/reset` rolls back to the start (the CLI no longer reaches
  into the agent's private fields).
* Before a new request, when the history plus the request would leave less than `room` tokens
  for the turn's own steps, the **oldest whole turns are dropped** from the ids the model sees —
  right after the system block, so the cached system-and-tools prefix (the costly part) stays
  valid and only the remaining turns are read again, once. A turn is a user request and
  everything up to the next one; the first kept turn then follows the system block exactly as a
  first request does. The trace's messages keep everything (what the user saw, what evaluation
  reads); its token ids are what the model sees.

Summarising dropped turns instead was rejected: on a 135M model a summary is another generation
(seconds) that can invent facts, and the user can say again what matters.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

TRACE_LISTS = ("messages", "events", "timings", "token_ids", "generated_mask")
# The agent's fields that change as the conversation goes on (everything else is configuration).
AGENT_FIELDS = ("_after_completion", "_system", "_shown", "_last_user")


@dataclass(frozen=True)
class Checkpoint:
    lengths: dict[str, int]
    parse_errors: int
    stopped: str
    fields: dict[str, Any] = field(default_factory=dict)


def take(agent) -> Checkpoint:
    t = agent.trace
    return Checkpoint(
        {name: len(getattr(t, name)) for name in TRACE_LISTS},
        t.parse_errors,
        t.stopped,
        {name: copy.copy(getattr(agent, name)) for name in AGENT_FIELDS},
    )


def restore(agent, cp: Checkpoint) -> None:
    t = agent.trace
    for name, n in cp.lengths.items():
        if len(getattr(t, name)) < n:
            raise ValueError(f"cannot roll {name} back to {n} entries: it holds {len(getattr(t, name))}")
        del getattr(t, name)[n:]
    agent.transcript.cut(cp.lengths["token_ids"])  # its blocks; the ids are the trace's, cut above
    t.parse_errors, t.stopped = cp.parse_errors, cp.stopped
    for name, value in cp.fields.items():
        setattr(agent, name, copy.copy(value))


def room(n_ctx: int, max_tokens: int) -> int:
    """Tokens a new request keeps free for its own steps: two full generations, or a quarter of the window."""
    return max(2 * max_tokens, n_ctx // 4)


def turns_to_drop(turns: list[tuple[int, int]], total: int, extra: int, limit: int) -> int:
    """How many of the oldest turns to drop so that `total` ids minus the dropped ones, plus
    `extra`, stay within `limit`; every turn but the newest may go (0: nothing to drop or no help).

    `turns` are (start, block) id offsets per request: where its lead separator starts and where
    its own block starts. Dropping k turns removes ids [turns[0].start, turns[k].block)."""
    if total + extra <= limit or len(turns) < 2:
        return 0
    for k in range(1, len(turns)):
        removed = turns[k][1] - turns[0][0]
        if total - removed + extra <= limit:
            return k
    return len(turns) - 1


def drop_turns(agent, k: int) -> int:
    """Drop the `k` oldest turns from the ids the model sees; returns how many ids went."""
    turns = agent.transcript.turns()
    lo, hi = turns[0][0], turns[k][1]
    agent.transcript.drop(lo, hi)
    return hi - lo
