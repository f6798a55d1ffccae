"""`botpsy undo`: take back one journaled action in the real stores.

The journal record of a mutating call holds the records it changed, before and after
(`botpsy.stores.changes`). Undoing it, in one write transaction on the suite's store:
1. refuse if the call cannot be undone (it sent data off the device; it deleted a binary file or
   attachments whose bytes were not kept), or was undone already;
2. refuse if any of its records is no longer as the call left it (the world moved on: restoring
   would silently lose the newer change), naming them;
3. put each record's `before` back; for the calendar file, when the file is byte for byte what the
   call left, write back its exact earlier bytes (kept under WORKSPACE/undo/) so nothing the
   record model does not hold (other programs' properties, formatting) is lost either;
4. journal the undo (`kind: "undo"`, `of: ID`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from botpsy.atomic import ReplaceError, write_atomic
from botpsy.stores import changes as ch
from botpsy.stores.common import StoreError, os_error
from botpsy.stores.journal import iter_actions
from botpsy.tools.registry import SUITES


class UndoError(Exception):
    """Why an action cannot be taken back; the message is for the user."""


@dataclass
class Undone:
    of: int
    tool: str
    records: list[str]
    exact_bytes: bool
    journal_id: int | None


def pick(workspace: Any, action_id: int | None) -> dict[str, Any]:
    entries = workspace.control.journal.read()
    undone = entries.undone()
    if action_id is None:
        for rec in iter_actions(entries):
            if rec["id"] not in undone and rec.get("outcome") == "ok":
                return rec
        raise UndoError("nothing to undo: the journal holds no change that is not undone yet (`botpsy log`)")
    rec = entries.by_id().get(action_id)
    if rec is None:
        raise UndoError(f"the journal has no entry #{action_id}; `botpsy log` lists them")
    if rec.get("kind", "call") != "call" or not rec.get("changes") or rec.get("outcome") != "ok":
        raise UndoError(
            f"entry #{action_id} ({rec.get('tool') or rec.get('kind')}) changed nothing; nothing to undo"
        )
    if action_id in undone:
        raise UndoError(f"entry #{action_id} was undone already (by #{undone[action_id]})")
    return rec


def can_undo(rec: dict[str, Any]) -> str | None:
    """Why the journaled action cannot be undone, or None."""
    info = rec.get("undo") or {}
    if not info.get("possible"):
        return info.get("why_not") or "the journal kept no undo data for it"
    if rec.get("suite") not in SUITES:
        return f"its suite {rec.get('suite')!r} is not one botpsy knows"
    return None


def undo(workspace: Any, action_id: int | None = None) -> Undone:
    """Restore the records one action changed; UndoError (for the user) when it cannot."""
    rec = pick(workspace, action_id)
    why = can_undo(rec)
    if why:
        hint = (
            "; `botpsy log` lists the earlier actions and `botpsy undo ID` takes back one"
            if action_id is None
            else ""
        )
        raise UndoError(f"#{rec['id']} {rec['tool']} cannot be undone: {why}{hint}")
    suite, changes = rec["suite"], rec["changes"]
    file_info = rec.get("file") or {}
    path = workspace.control.file_of(suite)
    kept = (
        workspace.control.undo_dir / f"{file_info.get('before')}{path.suffix}" if path and file_info else None
    )
    exact = False
    try:
        with workspace.store(suite).transaction(write=True) as state:
            probe = state.model_copy(deep=True)
            ch.undo(probe, changes)  # raises MovedOn before anything is written
            now = path.read_bytes() if kept is not None and path.exists() else None
            if now is not None and kept.exists() and hashlib.sha256(now).hexdigest() == file_info["after"]:
                data = kept.read_bytes()
                write_atomic(path, lambda f: f.write(data))  # the state stays unchanged: no save follows
                exact = True
            else:
                ch.undo(state, changes)
    except ch.MovedOn as e:
        raise UndoError(
            f"#{rec['id']} {rec['tool']} was not undone: {e} changed since (the world moved on); "
            "restoring would lose that newer change"
        ) from None
    except ReplaceError as e:
        raise os_error(e.action, e.where, e) from None
    except OSError as e:
        raise os_error("restore", workspace.root, e) from None
    records = [c["record"] for c in changes]
    control = workspace.control
    jid = control.journal.append(
        {
            "kind": "undo",
            "channel": control.channel,
            "of": rec["id"],
            "tool": rec["tool"],
            "suite": suite,
            "decision": "undone",
            "outcome": "ok",
            "restored": records,
            "exact_bytes": exact,
        }
    )
    return Undone(rec["id"], rec["tool"], records, exact, jid)


__all__ = ["UndoError", "Undone", "undo", "pick", "can_undo", "StoreError"]
