"""A date argument written in the format its parameter's description declares.

Tool authors state a date's format in prose: "Must be in MM-DD-YYYY format", "in the format of
'dd/mm/yyyy'", "The date (month-day-year)". The model writes dates the way its training wrote
them, year first ("2023-06-01"), and the tool (BFCL scores it so) then reads the month as the
year. Here such a value is rewritten into the declared format before the call is checked and
run. Only where the conversion cannot be wrong: the value is a whole year-first date (the one
order that never swaps day and month), the description declares exactly one date-only pattern
(none with hours: no time is invented) and the pattern names the year and month, two digits each
for day and month. Written here because the pieces are the standard library's (`datetime`,
`strftime`); what no library does is read "MM-DD-YYYY" out of a sentence.
"""

from __future__ import annotations

import datetime
import re

# A pattern of year, month and (optionally) day letters joined by one kind of separator, standing
# alone in the sentence: not the "YYYY-MM" of "YYYY-MM-DDTHH:MM", not a word's letters.
_PATTERN = re.compile(
    r"(?<![A-Za-z0-9])((?:[YyMmDd]{2,4}[-/.]){1,2}[YyMmDd]{2,4})(?![A-Za-z0-9]|[-/.:][A-Za-z0-9])"
)
_WORDS = re.compile(r"\b((?:year|month|day)(?:[-/](?:year|month|day)){1,2})\b", re.I)
_TIME = re.compile(r"\bhh\b|hh:mm|\bhour", re.I)
_YEAR_FIRST = re.compile(r"(\d{4})([-/.])(\d{1,2})\2(\d{1,2})")
_CODES = {("Y", 4): "%Y", ("Y", 3): "%Y", ("Y", 2): "%y", ("M", 2): "%m", ("D", 2): "%d"}
_WORD_CODES = {"year": "%Y", "month": "%m", "day": "%d"}


def _strftime(pattern: str) -> str | None:
    """The strftime codes of a pattern ("MM-DD-YYYY" gives "%m-%d-%Y"); None unless it has one
    year, one month and at most one day, joined by one kind of separator."""
    seps = set(re.findall(r"[-/.]", pattern))
    groups = re.split(r"[-/.]", pattern)
    if len(seps) != 1 or any(len(set(g.upper())) != 1 for g in groups):
        return None
    letters = [g[0].upper() for g in groups]
    if sorted(letters) not in (["D", "M", "Y"], ["M", "Y"]):
        return None
    codes = [_CODES.get((g[0].upper(), len(g))) for g in groups]
    return seps.pop().join(codes) if all(codes) else None  # type: ignore[arg-type]


def declared_format(description: str) -> str | None:
    """The one date-only format a parameter's description declares, as strftime codes; or None."""
    if not isinstance(description, str) or _TIME.search(description):
        return None
    found = {_strftime(m.group(1)) for m in _PATTERN.finditer(description)}
    for m in _WORDS.finditer(description):
        words = re.split(r"[-/]", m.group(1).lower())
        if len(set(words)) == len(words) and {"year", "month"} <= set(words):
            found.add(m.group(1)[len(words[0])].join(_WORD_CODES[w] for w in words))
    found.discard(None)
    return found.pop() if len(found) == 1 else None


def in_declared_format(value: str, description: str) -> str:
    """`value` rewritten into the description's declared date format where it is a year-first
    date and the description declares one; otherwise `value` unchanged."""
    m = _YEAR_FIRST.fullmatch(value.strip())
    if not m:
        return value
    fmt = declared_format(description)
    if fmt is None:
        return value
    try:
        day = datetime.date(int(m.group(1)), int(m.group(3)), int(m.group(4)))
    except ValueError:
        return value
    return day.strftime(fmt)
