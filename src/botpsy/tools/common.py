"""Validation helpers the suites share, so every tool refuses bad input the same way.

Each helper raises `ToolError` with a message naming the argument, what was expected and what
came; the message goes back to the model as the tool's result.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar

from botpsy.tools.base import ToolError
from botpsy.tools.calendar import parse_date, parse_datetime  # noqa: F401  (re-exported)

T = TypeVar("T")

EMAIL_RE = re.compile(r"^[^@\s,;<>]+@[^@\s,;<>]+\.[A-Za-z]{2,}$")
PHONE_RE = re.compile(r"^\+?[0-9][0-9 ()-]{5,19}$")


def norm(text: str) -> str:
    """Case- and space-insensitive form used for matching and canonical hashing."""
    return " ".join(str(text).split()).casefold()


def text_arg(value: str, field: str, max_len: int = 2000) -> str:
    value = value.strip()
    if not value:
        raise ToolError(f"{field}: must not be empty")
    if len(value) > max_len:
        raise ToolError(f"{field}: at most {max_len} characters, got {len(value)}")
    return value


def email_arg(value: str, field: str) -> str:
    value = value.strip()
    if not EMAIL_RE.match(value):
        raise ToolError(f"{field}: expected an email address like anna@example.com, got {value!r}")
    return value.lower()


def phone_arg(value: str, field: str) -> str:
    """A phone number, normalised to digits with an optional leading '+'."""
    raw = value.strip()
    if not PHONE_RE.match(raw):
        raise ToolError(f"{field}: expected a phone number like +15551234567, got {value!r}")
    digits = re.sub(r"[^0-9]", "", raw)
    return ("+" if raw.startswith("+") else "") + digits


def date_arg(value: str, field: str) -> str:
    return parse_date(value, field).isoformat()


def datetime_arg(value: str, field: str) -> str:
    return parse_datetime(value, field).strftime("%Y-%m-%dT%H:%M")


def clock_arg(value: str, field: str) -> str:
    try:
        return datetime.strptime(value.strip(), "%H:%M").strftime("%H:%M")
    except ValueError:
        raise ToolError(f"{field}: expected a time like 07:30, got {value!r}") from None


def cents_arg(value: float | int | str, field: str, max_cents: int = 10_000_000) -> int:
    """A positive money amount with at most two decimals, as integer cents."""
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        raise ToolError(f"{field}: expected an amount like 42.50, got {value!r}") from None
    if not amount.is_finite() or amount <= 0:
        raise ToolError(f"{field}: expected a positive amount, got {value}")
    # The limit before the decimals, compared exactly (no context arithmetic): quantizing 1e308
    # to cents needs more digits than the decimal context holds and raises InvalidOperation.
    if amount > Decimal(max_cents).scaleb(-2):
        raise ToolError(f"{field}: at most {max_cents / 100:.2f}, got {value}")
    if amount != amount.quantize(Decimal("0.01")):
        raise ToolError(f"{field}: at most two decimals, got {value}")
    return int(amount * 100)


def int_range(value: int, field: str, lo: int, hi: int) -> int:
    if not lo <= value <= hi:
        raise ToolError(f"{field}: expected {lo} to {hi}, got {value}")
    return value


def by_id(items: Iterable[T], item_id: str, what: str, hint: str, key: str = "id") -> T:
    """The item whose `key` equals `item_id`, or a ToolError listing a few known ids."""
    items = list(items)
    wanted = str(item_id).strip()
    for item in items:
        if str(getattr(item, key)) == wanted:
            return item
    known = ", ".join(str(getattr(i, key)) for i in items[:8]) or "none"
    raise ToolError(f"no {what} with id {item_id!r} (known: {known}); {hint}")


def next_id(prefix: str, taken: Iterable[str]) -> str:
    taken = set(taken)
    n = len(taken) + 1
    while f"{prefix}-{n}" in taken:
        n += 1
    return f"{prefix}-{n}"


def matches(query: str, *fields: Any) -> bool:
    """Every word of the query occurs in one of the fields (case-insensitive)."""
    words = norm(query).split()
    hay = norm(" ".join(str(f) for f in fields if f))
    return all(w in hay for w in words)


def query_arg(query: str, field: str = "query") -> str:
    if not norm(query):
        raise ToolError(f"{field}: give at least one word to look for")
    return query


def clip(text: str, n: int = 300) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def today_iso(d: date) -> str:
    return d.isoformat()
