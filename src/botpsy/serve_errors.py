"""The one error a `botpsy serve` client can cause, shared by the modules that check its request.

A `BadRequest` becomes an HTTP 400 whose message names the field, what was expected and what
came; `kind_of` names a JSON value's type for those messages.
"""

from __future__ import annotations

from typing import Any


class BadRequest(Exception):
    """A request the client must fix; the message names the field and what it should be."""


def kind_of(value: Any) -> str:
    """The JSON name of a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"
