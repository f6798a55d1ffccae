"""What a call would change, before it runs: the confirmation shows this instead of bare arguments.

The tool runs on the suite's state loaded in a *read* transaction (no lock, never saved), and the
records it changed are diffed exactly as the journal diffs them after a real call
(`botpsy.stores.changes`), so the preview and the undo data cannot disagree. Whether the change
could be undone is said here too, from the same rule the journal uses (`not_undoable`).
`botpsy run --dry-run` goes one step further: every mutating call runs this way and none is
applied (`Control.dry_run`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from botpsy.stores import changes as ch
from botpsy.stores.common import StoreError
from botpsy.tools.base import Tool, ToolError

SHOWN = 60  # characters of a value shown on one line
# Where an egress call's data goes, by the argument that names it (first present wins).
DESTINATION_ARGS = ("to", "recipient", "contact", "payee", "to_account", "account", "bill_id", "flight_id")


def egress_of(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any] | None:
    if not tool.labels.egress:
        return None
    where = next((arguments[a] for a in DESTINATION_ARGS if arguments.get(a)), None)
    return {"sent": arguments, "to": where if where is not None else f"the {tool.suite or 'outside'} service"}


def not_undoable(tool: Tool, suite: str | None, changes: list[dict[str, Any]]) -> str | None:
    """Why a call's change cannot be taken back, or None when it can."""
    if tool.labels.egress:
        return (
            f"{tool.name} sent data off the device (an email, a message or a payment cannot be called back)"
        )
    if suite is None:
        return f"{tool.name} is an external tool; botpsy does not hold its data"
    added = [c["after"] for c in changes if c["before"] is None]
    for c in changes:
        b = c["before"]
        if isinstance(b, dict) and b.get("kind") == "file" and b.get("content") is None and b not in added:
            return f"{c['record'].partition('/')[2]} is a binary or large file whose bytes were not kept"
        if isinstance(b, dict) and c["after"] is None and b.get("attachments"):
            return f"the attachments of {c['record']} were deleted and their bytes were not kept"
    return None


@dataclass
class Preview:
    changes: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # the call would fail: why
    not_undoable: str | None = None
    egress: dict[str, Any] | None = None
    known: bool = True  # False for an external tool: botpsy cannot look inside

    def lines(self) -> list[str]:
        if not self.known:
            return ["an external tool: botpsy cannot show what it will change, nor undo it"]
        if self.error:
            return [f"would fail: {self.error}"]
        out = [describe(c) for c in self.changes] or ["changes nothing stored here"]
        if self.egress:
            out.append(f"sends to {_short(self.egress['to'])}: {_short(self.egress['sent'])}")
        out.append(
            f"cannot be undone: {self.not_undoable}" if self.not_undoable else "can be undone (botpsy undo)"
        )
        return out


def preview(workspace: Any, name: str, arguments: dict[str, Any]) -> Preview:
    tool = workspace.toolbox[name]
    suite = workspace._suite_of.get(name)
    if suite is None:
        return Preview(known=False, not_undoable="an external tool")
    try:
        bound = tool.bind(arguments)
        with workspace.store(suite).transaction(write=False) as state:
            before = state.model_copy(deep=True)
            tool.fn(state, **bound)
            found = ch.diff(before, state)
    except (ToolError, StoreError) as e:
        return Preview(error=str(e))
    except Exception as e:  # a tool's odd-input failure: the real call will report it too
        return Preview(error=f"{type(e).__name__}: {e}")
    return Preview(found, None, not_undoable(tool, suite, found), egress_of(tool, arguments))


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _fields(record: Any) -> str:
    if not isinstance(record, dict):
        return _short(record)
    return ", ".join(f"{k}={_short(v)}" for k, v in record.items() if v not in (None, "", [], {}))[:200]


def describe(change: dict[str, Any]) -> str:
    """One line per changed record: added (+), removed (-) or changed (~, field by field)."""
    name, before, after = change["record"], change["before"], change["after"]
    if before is None:
        return f"+ {name}: {_fields(after)}"
    if after is None:
        return f"- {name}: {_fields(before)}"
    if isinstance(before, dict) and isinstance(after, dict):
        parts = []
        for k in list(before) + [k for k in after if k not in before]:
            b, a = before.get(k), after.get(k)
            if b == a:
                continue
            if isinstance(b, str) and isinstance(a, str) and max(len(a), len(b)) > SHOWN:
                parts.append(f"{k} replaced ({len(b)} → {len(a)} characters)")
            else:
                parts.append(f"{k} {_short(b)} → {_short(a)}")
        return f"~ {name}: " + "; ".join(parts)
    return f"~ {name}: {_short(before)} → {_short(after)}"
