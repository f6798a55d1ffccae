"""The assistant's workspace: the user's own data, in ordinary formats, under one folder.

    WORKSPACE/
      calendar.ics   the calendar (iCalendar; any calendar program can read it)
      mail/          the mailbox (Maildir: inbox at the root, .Sent, .Archive, .Trash, …)
      botpsy.db      one SQLite database: messages, contacts, notes, device, vehicle, shopping,
                     banking, travel, the web corpus (FTS5), retail and telecom support
      files/         the sandbox the files suite may touch, and nothing outside it

`Workspace.call(name, arguments)` runs one tool call as one transaction on its suite's store:
load (under the store's lock when the tool mutates) → call → save atomically if the state
changed. It returns the JSON text the model sees — the result, or `{"error": …}` for a refused
call or a store that cannot be used — so it is a drop-in environment for the agent loop (same
shape as `World.call`). A store problem is also recorded in `store_errors` for the user.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from botpsy.stores import ics
from botpsy.stores.common import StoreError, os_error
from botpsy.stores.control import Control, Run
from botpsy.stores.folder import FolderStore
from botpsy.stores.maildir import MaildirStore
from botpsy.stores.sqlite import SqliteStore
from botpsy.tools.base import Tool, Toolbox, ToolError, unexpected_failure
from botpsy.tools.calendar import CalendarState
from botpsy.tools.registry import SUITES
from botpsy.worlds import suite_world

DEFAULT_WORKSPACE = Path.home() / ".botpsy" / "workspace"


def default_root() -> Path:
    return Path(os.environ.get("BOTPSY_WORKSPACE", DEFAULT_WORKSPACE)).expanduser()


class IcsStore:
    """The calendar's `botpsy.stores.ics` functions behind the common store interface."""

    def __init__(self, path: Path):
        self.path = Path(path)

    @contextmanager
    def transaction(self, write: bool = False) -> Iterator[CalendarState]:
        if not write:
            yield ics.load(self.path)
            return
        with ics.transaction(self.path) as state:
            yield state

    def replace(self, state: CalendarState) -> None:
        with self.transaction(write=True) as current:
            current.events = [e.model_copy() for e in state.events]


class Workspace:
    """One user's stores, and tool calls executed against them."""

    def __init__(
        self,
        root: Path | str | None = None,
        suites: list[str] | None = None,
        extra_tools: list[Tool] | None = None,
        me: str | None = None,
        clock: Callable[[], datetime] | None = None,
    ):
        self.root = Path(root).expanduser() if root is not None else default_root()
        unknown = sorted(set(suites or []) - set(SUITES))
        if unknown:
            raise ValueError(f"unknown suite(s) {', '.join(unknown)}; known: {', '.join(SUITES)}")
        self.suites = list(suites) if suites else list(SUITES)
        self.me = me or os.environ.get("BOTPSY_EMAIL", "me@localhost")
        self.clock = clock
        self.toolbox = Toolbox([t for s in self.suites for t in SUITES[s].tools] + list(extra_tools or []))
        self._suite_of = {t.name: s for s in self.suites for t in SUITES[s].tools}
        self.store_errors: list[str] = []
        self.control = Control(self)  # grants, journal, undo data: the user's control over calls

    # ---- paths and stores --------------------------------------------------------------------
    @property
    def calendar_path(self) -> Path:
        return self.root / "calendar.ics"

    @property
    def mail_path(self) -> Path:
        return self.root / "mail"

    @property
    def db_path(self) -> Path:
        return self.root / "botpsy.db"

    @property
    def files_path(self) -> Path:
        return self.root / "files"

    def store(self, suite: str) -> Any:
        kind = SUITES[suite].store
        if kind == "ics":
            return IcsStore(self.calendar_path)
        if kind == "maildir":
            return MaildirStore(self.mail_path, me=self.me, clock=self.clock)
        if kind == "folder":
            return FolderStore(self.files_path)
        fts = ("pages",) if suite == "web" else ()
        return SqliteStore(self.db_path, suite, SUITES[suite].state_type, fts=fts, clock=self.clock)

    # ---- calls -------------------------------------------------------------------------------
    def execute(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run one call in its own transaction; raises only ToolError or StoreError.

        Validation (`Tool.bind`, the suites' argument helpers) refuses what it knows to be wrong;
        anything else a tool raises on odd input (an overflowing date, a decimal out of range)
        becomes a ToolError too, and the transaction rolls back, so the store is unchanged and the
        model reads why. An OSError from a store (a read-only disk, a missing folder that cannot be
        made) is a StoreError with the fix.
        """
        if name not in self.toolbox:
            raise ToolError(f"there is no tool {name!r}; available: {', '.join(self.toolbox.names())}")
        # The user's grants decide first (a refusal is journaled and raised); then the call runs
        # and its decision, result and changes are journaled (`botpsy.stores.control`).
        run = self.control.admit(self.toolbox[name], self._suite_of.get(name), arguments)
        try:
            result = self._run(name, arguments, run)
        except (ToolError, StoreError) as e:
            self.control.finish(run, error=str(e))
            raise
        return self.control.finish(run, result)

    def _run(self, name: str, arguments: dict[str, Any], run: Run) -> Any:
        tool = self.toolbox[name]
        suite = self._suite_of.get(name)
        phase = "tool"  # which step raised: only the tool's own failure is blamed on the arguments
        try:
            if suite is None:  # an external (MCP) tool: no local state
                return tool(None, **arguments)
            bound = tool.bind(arguments)  # refuse bad arguments before touching any store
            phase = "read"
            with self.store(suite).transaction(
                write=tool.labels.mutates and not self.control.dry_run
            ) as state:
                run.started(state)
                phase = "tool"
                result = tool.fn(state, **bound)
                run.ran(state)
                phase = "save"
            return result
        except (ToolError, StoreError):
            raise
        except OSError as e:
            if suite is None:
                raise unexpected_failure(name, e) from e
            raise os_error("use", self.root, e) from e
        except Exception as e:
            if phase != "tool":  # the user's data, not the model's call: a retry would not help
                raise StoreError(
                    f"cannot {phase} the {suite} data in {self.root}: {type(e).__name__}: "
                    f"{' '.join(str(e).split())[:200]}; nothing was changed"
                ) from e
            raise unexpected_failure(name, e) from e

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        try:
            result = self.execute(name, arguments)
            return json.dumps(result, ensure_ascii=False, default=str)
        except ToolError as e:
            return json.dumps({"error": str(e)}, ensure_ascii=False)
        except StoreError as e:
            self.store_errors.append(str(e))
            return json.dumps(
                {"error": f"the {self._suite_of.get(name, 'tool')} data could not be used: {e}"},
                ensure_ascii=False,
            )
        except (ValueError, TypeError, RecursionError) as e:  # a result JSON cannot hold
            return json.dumps({"error": str(unexpected_failure(name, e))}, ensure_ascii=False)

    # ---- whole states ------------------------------------------------------------------------
    def read(self, suite: str) -> BaseModel:
        with self.store(suite).transaction(write=False) as state:
            return state

    def write(self, suite: str, state: BaseModel) -> None:
        """Put a whole suite state into its store (seeding, import)."""
        self.store(suite).replace(state)


def seed_workspace(root: Path | str, seed: int = 0, suites: list[str] | None = None) -> Workspace:
    """Fill a workspace with each suite's seeded world state: a demo or test workspace in one call."""
    ws = Workspace(root, suites=suites)
    for suite in ws.suites:
        ws.write(suite, suite_world(suite).seed(random.Random(f"workspace:{suite}:{seed}")))
    return ws
