"""The runtime's system prompt: one text, read by the agent's CLI, the worlds and the training data.

It lived in the calendar world (`worlds.calendar.system_prompt`) and again, as a literal, in
`worlds.kit.SYSTEM`; the CLI imported a world to get its own prompt (issue 34). The prompt is part
of how a conversation is shown to the model, so it sits with the chat format, below everything
that uses it. Short on purpose: every token of it is prefilled on a phone CPU and trained on.
"""

from __future__ import annotations

from datetime import date


def runtime_system(today: date) -> str:
    """The system text botpsy shows the model, with today's date (the dates in requests are resolved against it)."""
    return (
        "You are botpsy, a personal assistant on the user's device. "
        f"Today is {today.strftime('%A')}, {today.strftime('%B')} {today.day}, {today.year}."
    )
