"""Call normalisation: when two tool calls of a world do the same thing.

Evaluation's exact-match figure (`eval/worlds.py`), the RL partial credit on arguments
(`data/turns.py`) and the splice test of the success reward all compare calls through
`norm_call`, so a model is never scored differently by two notions of "the same call": the tool's
defaults are filled in, an explicit null is "not given", and text is compared with case and
spacing folded.
"""

from __future__ import annotations

import json

from botpsy.protocol.messages import ToolCall
from botpsy.worlds.base import Domain


def norm_call(call: ToolCall, domain: Domain) -> str:
    """The call as canonical JSON text: equal text means the same call in this domain."""
    tools = {t.name: t for t in domain.tools}
    args = dict(call.arguments)
    if call.name in tools:
        args = {**tools[call.name].defaults, **args}
        args = {k: v for k, v in args.items() if v is not None}
    args = {k: " ".join(v.split()).casefold() if isinstance(v, str) else v for k, v in args.items()}
    return json.dumps({"name": call.name, "arguments": args}, sort_keys=True, default=str)
