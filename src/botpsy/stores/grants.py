"""Grants: the user's standing choice per tool or per suite — allow, ask or deny.

    WORKSPACE/grants.json   {"version": 1, "rules": {"calendar": "allow", "send_email": "deny"}}

A call's grant is the rule for its tool, else the rule for its suite, else the default read from
its labels: a read is allowed; a mutating, egress or sensitive call is asked. The file is small,
private (0600) and replaced atomically, so a crash leaves the old rules or the new ones.

Grants are enforced by `Workspace.execute`, the one path every tool call takes (the CLI agent and
the MCP server alike), never only in a prompt:
* `deny` always refuses, whoever calls and however often (a model that retries gets the same
  error); nothing — `--yes`, an MCP client, an approval — overrides it;
* `allow` runs without asking;
* `ask` runs only once a human approved this call: the CLI agent's confirmation (where `--yes`
  approves, as before), or an MCP server started with `--client-confirms` (the human's own app,
  which confirms tool calls with its user). Otherwise it is refused with how to allow it.

A grants file that cannot be read or holds an unknown choice is an error on every call that needs
it (a StoreError saying how to fix it): guessing would either lose a deny or block everything.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from botpsy.atomic import ReplaceError, write_atomic
from botpsy.stores.common import StoreError, os_error
from botpsy.tools.base import Tool

CHOICES = ("allow", "ask", "deny")
VERSION = 1


@dataclass(frozen=True)
class Grant:
    choice: str  # allow | ask | deny
    source: str  # where it came from: "tool rule", "suite rule" or "default"

    def why(self, tool: Tool) -> str:
        if self.source == "default":
            kinds = [k for k, v in tool.labels.as_dict().items() if v]
            return f"default for {'/'.join(kinds) or 'read'} tools"
        return self.source


def default_choice(tool: Tool) -> str:
    return "ask" if tool.labels.needs_confirmation else "allow"


class Grants:
    """The rules in WORKSPACE/grants.json; read afresh on every decision, so an edit made by
    `botpsy grants set` while an MCP server runs takes effect on its next call."""

    def __init__(self, root: Path | str):
        self.path = Path(root) / "grants.json"

    def rules(self) -> dict[str, str]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return {}
        except OSError as e:
            raise os_error("read your grants in", self.path, e) from None
        try:
            data = json.loads(text)
            rules = data["rules"]
            if not isinstance(rules, dict):
                raise TypeError("rules is not an object")
        except (ValueError, KeyError, TypeError) as e:
            raise StoreError(
                f"cannot read your grants in {self.path}: {e}; expected "
                '{"version": 1, "rules": {"TOOL_OR_SUITE": "allow|ask|deny"}}; '
                "fix the file or run `botpsy grants reset`"
            ) from None
        bad = {k: v for k, v in rules.items() if v not in CHOICES}
        if bad:
            name, value = next(iter(bad.items()))
            raise StoreError(
                f"your grants in {self.path} give {name!r} the choice {value!r}; expected one of "
                f"{', '.join(CHOICES)}; fix it with `botpsy grants set {name} ask`"
            )
        return {str(k): str(v) for k, v in rules.items()}

    def decide(self, tool: Tool, suite: str | None) -> Grant:
        rules = self.rules()
        if tool.name in rules:
            return Grant(rules[tool.name], "tool rule")
        if suite and suite in rules:
            return Grant(rules[suite], "suite rule")
        return Grant(default_choice(tool), "default")

    def _save(self, rules: dict[str, str]) -> None:
        data = json.dumps({"version": VERSION, "rules": dict(sorted(rules.items()))}, indent=2) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, lambda f: f.write(data.encode()))
            os.chmod(self.path, 0o600)  # the user's choices about their data are theirs alone
        except ReplaceError as e:
            raise os_error(e.action, e.where, e) from None
        except OSError as e:
            raise os_error("save your grants in", self.path, e) from None

    def set(self, name: str, choice: str, known: set[str]) -> None:
        if choice not in CHOICES:
            raise ValueError(f"unknown choice {choice!r}; expected one of {', '.join(CHOICES)}")
        if name not in known:
            raise ValueError(f"no tool or suite is called {name!r}; `botpsy grants list` shows them")
        rules = self.rules()
        rules[name] = choice
        self._save(rules)

    def unset(self, name: str) -> bool:
        rules = self.rules()
        if name not in rules:
            return False
        del rules[name]
        self._save(rules)
        return True

    def reset(self) -> None:
        """Back to the defaults (the file is kept, empty, so its 0600 mode stays)."""
        self._save({})


def denied_message(tool: Tool, grant: Grant) -> str:
    return (
        f"denied by your grants: {tool.name} is set to deny ({grant.why(tool)}); do not retry it, "
        f"tell the user; they can change it with `botpsy grants set {tool.name} ask`"
    )


def needs_approval_message(tool: Tool, grant: Grant) -> str:
    return (
        f"not approved: your grants ask before {tool.name} ({grant.why(tool)}) and no one here "
        f"approved it; tell the user; they can allow it with `botpsy grants set {tool.name} allow`"
    )
