"""The terminal side of the command line: the two consoles, text that is never markup, usage errors.

`cli.py`, `cli_agent.py` and `cli_eval.py` print through these, so they live apart from all
(issue 15: `cli_eval` imported them back from `cli`, a cycle). Tests swap `console` / `out` for a buffer.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

console = Console(stderr=True, highlight=False)
out = Console(highlight=False, soft_wrap=True)


class UsageError(Exception):
    """Bad input from the user: the message says what was expected."""


def styled(*parts: str | tuple[str, str] | Text) -> Text:
    """Text from plain strings and (string, style) pairs. Nothing in it is read as rich markup or
    an emoji code: an event titled `Standup [/]` or an argument like `rent[conceal]` prints as it is."""
    return Text.assemble(*parts)


def say(con: Console, *parts: str | tuple[str, str] | Text, end: str = "\n") -> None:
    """Print text that holds data from the user, the model or a tool (see `styled`)."""
    con.print(styled(*parts), end=end)


def text_log(con: Console, style: str = ""):
    """A `log` callback for long work (recipe, bench): its lines hold paths, model names and
    errors, so they print as text, never as markup."""

    def log(line: str) -> None:
        con.print(Text(str(line), style=style))

    return log
