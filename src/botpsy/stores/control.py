"""The user's control over tool calls: grants enforced, every decision journaled, changes kept for undo.

`Workspace.execute` — the one path every tool call takes, from the CLI agent and the MCP server
alike — hands each call to its workspace's `Control`:

1. `admit` applies the grants (`botpsy.stores.grants`): a denied call, or an asked one nobody
   approved, is journaled and refused with a ToolError the model reads; nothing bypasses this.
2. `Run` follows the call: the state before the tool ran (a deep copy, inside the store's write
   transaction), the records it changed (`botpsy.stores.changes.diff`), whether it can be undone,
   and, for the calendar file, its exact bytes before (kept content-addressed under
   WORKSPACE/undo/, 0600), so an undo that nothing raced restores the file byte for byte.
3. `finish` appends the journal record (`botpsy.stores.journal`): request, call, labels, grant,
   decision, result, changes, undo data, and what an egress call sent where.

Who approves an `ask`: `approver` is None for a program that confirmed before calling (the agent
loop asks its `confirm` first, and the CLI's confirm records the approval with `approve_next`);
the MCP server sets an approver that refuses unless started with `--client-confirms`, and the
CLI one that prompts (`--yes` approves). `botpsy serve` runs no tools: its client runs them.

Decisions the agent makes before a call reaches the workspace (declined by the user, held by a
guard) are journaled by the CLI from the agent's events (`journal_event`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from botpsy.atomic import write_atomic
from botpsy.stores import changes as ch
from botpsy.stores.common import StoreError
from botpsy.stores.grants import Grant, Grants, denied_message, needs_approval_message
from botpsy.stores.journal import Journal
from botpsy.stores.preview import Preview, egress_of, not_undoable, preview
from botpsy.tools.base import Tool, ToolError
from botpsy.tools.registry import SUITES

RESULT_CHARS = 2000
KEPT_FILES = 20  # earlier calendar files kept for byte-exact undo


def call_key(name: str, arguments: dict[str, Any]) -> str | None:
    try:
        return name + json.dumps(arguments, sort_keys=True, default=str)
    except (ValueError, TypeError, RecursionError):
        return None  # arguments JSON cannot hold match no approval: asked again, never waved through


class Run:
    """One call on its way through a write transaction."""

    def __init__(
        self, control: Control, tool: Tool, suite: str | None, arguments: dict, grant: Grant, decision: str
    ):
        self.control, self.tool, self.suite, self.arguments = control, tool, suite, arguments
        self.grant, self.decision = grant, decision
        self.before: BaseModel | None = None
        self.changes: list[dict[str, Any]] = []
        self.file_before: str | None = None  # sha256 of the calendar file's bytes before
        self.file_bytes: bytes | None = None
        self.after: dict[str, Any] = {}

    def started(self, state: BaseModel) -> None:
        """Inside the transaction, before the tool runs (the store's lock is held)."""
        if not self.tool.labels.mutates:
            return
        self.before = state.model_copy(deep=True)
        path = self.control.file_of(self.suite)
        if path is not None and path.exists():
            self.file_bytes = path.read_bytes()  # kept on disk only once the call has changed it

    def ran(self, state: BaseModel) -> None:
        """Inside the transaction, after the tool ran: what it changed."""
        if self.before is None:
            return
        self.changes = ch.diff(self.before, state)
        self.after = ch.records(state)


class Control:
    def __init__(self, workspace: Any):
        self.ws = workspace
        self.grants = Grants(workspace.root)
        self.journal = Journal(workspace.root)
        self.channel = "api"  # cli | mcp | api: who called
        self.request = ""  # the user's request being served, set by the CLI
        self.approver: Callable[[Tool, dict[str, Any]], bool] | None = None
        self.dry_run = False
        self._approved: str | None = None

    # ---- grants -----------------------------------------------------------------------------
    def approve_next(self, name: str, arguments: dict[str, Any]) -> None:
        """The human approved exactly this call (the CLI's confirmation): do not ask again."""
        self._approved = call_key(name, arguments)

    def admit(self, tool: Tool, suite: str | None, arguments: dict[str, Any]) -> Run:
        grant = self.grants.decide(tool, suite)
        key = call_key(tool.name, arguments)
        approved, self._approved = key is not None and self._approved == key, None
        if grant.choice == "deny":
            self.log(tool, suite, arguments, grant, "denied", error=denied_message(tool, grant))
            raise ToolError(denied_message(tool, grant))
        decision = "allowed"
        if grant.choice == "ask":
            if approved or self.approver is None:
                decision = "approved"
            elif self.approver(tool, arguments):
                decision = "approved"
            else:
                self.log(tool, suite, arguments, grant, "refused", error=needs_approval_message(tool, grant))
                raise ToolError(needs_approval_message(tool, grant))
        return Run(self, tool, suite, arguments, grant, decision)

    # ---- undo data --------------------------------------------------------------------------
    def file_of(self, suite: str | None) -> Path | None:
        return self.ws.calendar_path if suite and SUITES[suite].store == "ics" else None

    @property
    def undo_dir(self) -> Path:
        return self.ws.root / "undo"

    def keep_bytes(self, data: bytes, suffix: str) -> str:
        """Keep a file's earlier bytes for a byte-exact undo. Only the newest KEPT_FILES copies stay
        (a whole calendar per change would grow without end); an older action is still undone,
        record by record, just not byte for byte."""
        sha = hashlib.sha256(data).hexdigest()
        path = self.undo_dir / f"{sha}{suffix}"
        if path.exists():
            os.utime(path)  # used again: newest
            return sha
        self.undo_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_atomic(path, lambda f: f.write(data))
        os.chmod(path, 0o600)
        kept = sorted(self.undo_dir.iterdir(), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in kept[KEPT_FILES:]:
            old.unlink(missing_ok=True)
        return sha

    def preview(self, name: str, arguments: dict[str, Any]) -> Preview:
        """What the call would change, computed on an unsaved copy (`botpsy.stores.preview`)."""
        return preview(self.ws, name, arguments)

    # ---- the journal ------------------------------------------------------------------------
    def log(
        self, tool: Tool, suite: str | None, arguments: dict, grant: Grant | None, decision: str, **more
    ) -> int | None:
        rec = {
            "kind": "call",
            "channel": self.channel,
            "request": self.request,
            "tool": tool.name,
            "suite": suite,
            "arguments": arguments,
            "labels": tool.labels.as_dict(),
            "grant": grant.choice if grant else None,
            "grant_source": grant.source if grant else None,
            "decision": decision,
            "outcome": "error" if "error" in more else more.pop("outcome", "ok"),
        }
        if (
            (egress := egress_of(tool, arguments))
            and decision in ("allowed", "approved")
            and "error" not in more
        ):
            rec["egress"] = egress
        rec.update(more)
        # A read changes nothing: in a workspace not made yet, or a read-only one, it goes
        # unrecorded rather than creating folders or failing. Anything else that cannot be
        # recorded never blocks the call; the user sees it with the store errors.
        quiet = not tool.labels.needs_confirmation and decision == "allowed"
        if quiet and not self.ws.root.is_dir():
            return None
        try:
            return self.journal.append(rec)
        except StoreError as e:
            if not quiet:
                self.ws.store_errors.append(f"the journal could not be written: {e}")
            return None

    def _file_after(self, run: Run) -> str | None:
        """The calendar file's sha256 as this call left it. Taken under the store's lock once the
        save is done, and only if the file still holds what the call saved: a writer that slipped
        in between must not have its change counted as this call's (an undo would undo it too)."""
        path = self.file_of(run.suite)
        if not (run.file_bytes is not None and run.changes and path is not None and not self.dry_run):
            return None
        try:
            with self.ws.store(run.suite).transaction(write=True) as state:
                if ch.records(state) == run.after:
                    after = hashlib.sha256(path.read_bytes()).hexdigest()
                    run.file_before = self.keep_bytes(run.file_bytes, path.suffix)
                    return after
        except (StoreError, OSError):
            pass
        return None

    def finish(self, run: Run, result: Any = None, error: str | None = None) -> Any:
        """Journal the call; return the result the caller sees (a dry run's says nothing changed)."""
        more: dict[str, Any] = {}
        if error is not None:
            more["error"] = error
        else:
            try:
                more["result"] = json.dumps(result, ensure_ascii=False, default=str)[:RESULT_CHARS]
            except (ValueError, TypeError, RecursionError) as e:
                more["result"] = f"<not recordable: {type(e).__name__}>"
        if run.changes and error is None:
            more["changes"] = run.changes
            why = not_undoable(run.tool, run.suite, run.changes)
            more["undo"] = {"possible": why is None, "why_not": why}
            if file_after := self._file_after(run):
                more["file"] = {"before": run.file_before, "after": file_after}
        dry = self.dry_run and run.tool.labels.mutates and error is None
        if dry:
            more["outcome"] = "previewed"
            more.pop("undo", None)
        self.log(run.tool, run.suite, run.arguments, run.grant, run.decision, **more)
        if dry:  # the model reads that nothing happened; the user saw the preview
            return {"dry_run": "previewed only: nothing was changed", "result": result}
        return result

    def journal_event(self, kind: str, data: dict[str, Any]) -> None:
        """Agent decisions that never reach the workspace: declined or held calls."""
        rec = {"kind": "decision", "channel": self.channel, "request": self.request, "event": kind, **data}
        rec["decision"] = {
            "confirm": "declined",
            "grounding_guard": "held",
            "limits_guard": "held",
            "data_driven": "held",
        }.get(kind, kind)
        rec["outcome"] = "not run"
        try:
            self.journal.append(rec)
        except StoreError as e:
            self.ws.store_errors.append(f"the journal could not be written: {e}")
