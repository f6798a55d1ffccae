"""`agent.stream.AnswerStream`: what chat shows of an answer while it is generated.

Pins issue 14 item 6 (chat streamed nothing: 10-37 s of blank screen) together with item 1 (a
declined action must never be reported as done): only the answer goes out, never the reasoning or
tool-call markup, and a sentence that claims an action waits for the guard's verdict on its step.
"""

from __future__ import annotations

import pytest

from botpsy.agent.stream import AnswerStream

CALL = "<tool_call>\n<function=list_events>\n<parameter=date>\n2026-12-03\n</parameter>\n</function>\n</tool_call>"


def feed(text: str, size: int, thinking: bool = True) -> str:
    shown: list[str] = []
    stream = AnswerStream(shown.append, thinking)
    for i in range(0, len(text), size):
        stream.feed(text[i : i + size])
    assert "".join(shown) == stream.shown
    return stream.shown


@pytest.mark.parametrize("size", [1, 2, 5, 1000])
@pytest.mark.parametrize(
    "text,thinking,shown",
    [
        # the reasoning never goes out, even its complete sentences; the last sentence waits for its end
        (
            "Look it up. Then answer.\n</think>\n\nYou have Standup [/] at 09:00. Anything else?",
            True,
            "You have Standup [/] at 09:00.",
        ),
        ("still thinking. about it. ", True, ""),
        # text before a call goes out, the call's markup never does
        (f"ok\n</think>\n\nLet me check.\n{CALL}", True, "Let me check."),
        (f"ok\n</think>\n\n{CALL}\nMore text. after. ", True, ""),
        # a claim and everything after it are held for the step's outcome
        (
            "ok\n</think>\n\nSure. Done: the dentist appointment is on your calendar. See you! Bye.",
            True,
            "Sure.",
        ),
        ("ok\n</think>\n\nI've added the dentist appointment.\nAnything else?", True, ""),
        # negated and asked are not claims
        (
            "ok\n</think>\n\nI have not added it. Shall I add it? Tell me.",
            True,
            "I have not added it. Shall I add it?",
        ),
        # without thinking the step is its answer; a model that opens <think> anyway is still hidden
        ("Hello there! How can I help?", False, "Hello there!"),
        ("<think>\nhmm. yes. \n</think>\n\nHi. Bye.", False, "Hi."),
    ],
)
def test_only_the_answer_goes_out_and_never_a_claim(text, thinking, shown, size):
    assert feed(text, size, thinking) == shown


def test_each_step_starts_afresh_after_end_step():
    shown: list[str] = []
    stream = AnswerStream(shown.append)
    stream.feed("a\n</think>\n\nOne. Done: it is on your calendar. x")
    stream.end_step()
    assert stream.shown == "One."  # kept until the next step begins
    stream.feed("b\n</think>\n\nTwo. Three.")
    assert stream.shown == "Two." and shown == ["One.", "Two."]
