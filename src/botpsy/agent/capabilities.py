""" "What can you do?" answered by code, from the suites that are installed.

What the assistant can do is a fact the runtime holds (the workspace's suites), not something a
model should recall. Asked "Hi! What can you do?" with only the calendar installed, the embedded
135M model answered "I can read your email and check, pay and transfer with your bank accounts":
it recites whichever capability line of its training worlds the prompt resembles. So, as with
dates (`agent.dates`), code answers where code is right every time:

* `is_capability_question(text)` recognises the question asked on its own: a greeting or the
  assistant's name may come before it, and nothing else may. "What can you do about my 3pm
  meeting?" is a request and goes to the model.
* `tools.registry.capability_answer(tools)` says what the installed suites do, each in its record's words
  (`tools.registry.Suite.capability`, the lines the worlds train on): one suite gives
  "I can <line>.", several a list. When any installed tool belongs to no suite (an MCP server's,
  a BFCL function) code does not know what it does, and the model answers as before.

The agent (`agent.loop.Agent.send`) puts the answer in the history as a complete assistant turn,
masked as not generated, and emits a `capabilities` event; no model step runs, so it costs no time.

Rejected: listing the suites in the system prompt for the model to copy. The embedded adapter was
trained on the prompt as it is; a new line would change every prompt it sees and need retraining
to be copied reliably, while this needs none and cannot be wrong.
"""

from __future__ import annotations

import re

_GREETING = re.compile(
    r"^(?:(?:hi|hello|hey|hiya|yo|good (?:morning|afternoon|evening)|botpsy|there|so|ok|okay)\b[\s,!.;:-]*)+"
)
_QUESTIONS = [
    r"what (?:else |exactly |all )?(?:can|could) (?:you|u) (?:do|help(?: me)?(?: out)? with|do for me|help me do)",
    r"what (?:things|kinds? of things|sorts? of things|tasks) (?:can|could) you (?:do|help(?: me)? with)",
    r"what (?:are|r) (?:you|u) able to do",
    r"what do you do",
    r"how (?:can|could) you help(?: me)?",
    r"what can i ask you(?: to do| for)?",
    r"what are your (?:capabilities|skills|features|abilities)",
    r"what do you know how to do",
    r"help(?: me)?",
]
_QUESTION = re.compile(r"(?:" + "|".join(_QUESTIONS) + r")(?: here| today| now)?")


def is_capability_question(text: str) -> bool:
    """True for "What can you do?" and its kin, asked with nothing but a greeting before it."""
    t = " ".join(text.lower().replace("’", "'").split())
    t = _GREETING.sub("", t).strip()
    t = re.sub(r"[\s?!.]+$", "", t)
    return bool(t) and _QUESTION.fullmatch(t) is not None
