"""Where tool calls land: a world (seeded, in memory) or the user's workspace (real files).

`WorkspaceEnv` runs each call inside a store transaction: load under a file lock, call the tool,
save atomically only if the state changed. Store failures (corrupt file, read-only folder) become
the tool's error result and a one-line message for the user; nothing is overwritten.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from botpsy.stores import ics
from botpsy.tools import calendar
from botpsy.tools.base import Toolbox, ToolError

DEFAULT_WORKSPACE = Path.home() / ".botpsy" / "workspace"


class WorkspaceEnv:
    """The assistant's own data: the calendar is `DIR/calendar.ics`."""

    def __init__(self, root: Path | str = DEFAULT_WORKSPACE):
        self.root = Path(root).expanduser()
        self.toolbox = Toolbox(calendar.TOOLS)
        self.store_errors: list[str] = []

    @property
    def calendar_path(self) -> Path:
        return self.root / "calendar.ics"

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        if name not in self.toolbox:
            return json.dumps({"error": f"there is no tool {name!r}"})
        tool = self.toolbox[name]
        try:
            with ics.transaction(self.calendar_path) as state:
                result = tool(state, **arguments)
        except ToolError as e:
            return json.dumps({"error": str(e)}, ensure_ascii=False)
        except ics.StoreError as e:
            self.store_errors.append(str(e))
            return json.dumps({"error": f"the calendar could not be used: {e}"}, ensure_ascii=False)
        return json.dumps(result, ensure_ascii=False, default=str)
