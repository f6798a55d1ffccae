"""What a user may read of an answer while it is generated (`botpsy chat` streams through this).

The engine streams everything it generates (`Agent(on_text=...)`): the reasoning, the answer and
tool-call markup. `AnswerStream` passes on only the answer of each model step — the part
`protocol.formats.parse_completion` calls its content — and holds back what the phantom-action
guard (`agent.guards`) could still take back:

* The answer goes out sentence by sentence, cut where `agent.detectors.action_claims` cuts it (end
  punctuation or a newline, then white space). A sentence's claim status is settled once the
  sentence is complete, so a sentence that went out is never one of the claims the guard acts on.
* A sentence that claims an action ("Done: it is on your calendar.") and everything after it wait
  for the end of the step. Only then does the loop know whether a successful call backs the
  claim, whether it nudges for the call, or whether it replaces the answer with a 'not done' line
  (`guards.not_done_answer`). The caller prints the rest of the final answer after the step; when
  the final answer does not continue what was shown (it was replaced), it marks it as a correction.
* The reasoning (up to `</think>`) and everything from `<tool_call>` on never go out.

Rejected: streaming every sentence and retracting a claim afterwards — the user would have read
"Done" for a declined action, the very thing issue 14 item 1 forbids. Holding only the claims the
agent cannot back would need the loop's per-turn bookkeeping here; a held claim waits only for
the rest of its own step, which is the answer's tail.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from botpsy.agent.detectors import action_claims
from botpsy.protocol.formats import IM_END, THINK_CLOSE, THINK_OPEN

CALL_OPEN = "<tool_call>"
# Where `action_claims` splits an answer into sentences: after . ! ? or a newline, before white space.
_SENTENCE_END = re.compile(r"[.!?\n](?=\s)")


class AnswerStream:
    """Feed it the engine's pieces (`feed`) and tell it where each model step ends (`end_step`, on
    the loop's `model` event); `show` gets the answer text that can be shown now."""

    def __init__(self, show: Callable[[str], None], thinking: bool = True):
        self.show, self.thinking = show, thinking
        self.reset()

    def reset(self) -> None:
        """Forget the step in progress (a new turn, or one dropped by Ctrl-C)."""
        self._raw, self.shown, self._held, self._ended = "", "", False, False

    def end_step(self) -> None:
        """The step is complete; the next piece starts the next step (`shown` keeps this one's)."""
        self._ended = True

    def feed(self, piece: str) -> None:
        if self._ended:
            self.reset()
        self._raw += piece
        if self._held:
            return
        visible = self._visible()
        start = len(self.shown)
        for m in _SENTENCE_END.finditer(visible, start):
            sentence = visible[start : m.end()]
            if action_claims(sentence):
                self._held = True  # this claim and all after it wait for the step's outcome
                break
            self.shown += sentence
            self.show(sentence)
            start = m.end()

    def _visible(self) -> str:
        """The step's answer so far: after the reasoning, before any tool call."""
        text = self._raw.replace(IM_END, "")
        if self.thinking or text.lstrip().startswith(THINK_OPEN):
            _, closed, text = text.partition(THINK_CLOSE)
            if not closed:
                return ""
        text = text.lstrip()
        # A partial `<tool_call>` at the end needs no care: no sentence end lies inside it, so it
        # stays in the unfinished sentence that is held anyway.
        cut = text.find(CALL_OPEN)
        return text[:cut] if cut >= 0 else text
