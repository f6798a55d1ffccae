"""RL2's shaping terms: DAPO's soft overlong punishment and the reasoning-loop penalty.

The tool-use rewards (format, partial call credit, world success) are the checkers of turn items,
`botpsy.data.turns`, shared with RL2's tool-use domain.
"""

from __future__ import annotations

from botpsy.agent.detectors import reasoning_loop
from botpsy.protocol.formats import THINK_CLOSE

# ---- length and loop shaping (RL2) -----------------------------------------------------------


def overlong_penalty(n_tokens: int, max_len: int, cache: int) -> float:
    """DAPO's soft overlong punishment (arXiv:2503.14476, eq. 13), in [-1, 0].

    0 up to `max_len - cache` tokens, then falling linearly to -1 at `max_len`, and -1 beyond: the
    model learns that length costs before the hard cap truncates it (truncated completions are
    also masked from the loss, so this is the only signal they leave).
    """
    if cache <= 0 or n_tokens <= max_len - cache:
        return 0.0 if n_tokens <= max_len else -1.0
    if n_tokens <= max_len:
        return (max_len - cache - n_tokens) / cache
    return -1.0


def loop_penalty(completion: str) -> float:
    """-1 when the reasoning is stuck in a loop (the evaluation's own detector, `agent.detectors.reasoning_loop`)."""
    reasoning = completion.split(THINK_CLOSE, 1)[0]
    return -1.0 if reasoning_loop(reasoning) else 0.0
