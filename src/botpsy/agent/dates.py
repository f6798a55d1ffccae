"""Dates and times by code: the request's relative dates and 12-hour times, resolved before the model.

A 135M-parameter model reads "next Friday at 2pm" and has to produce `2026-12-04T14:00`: that is
calendar arithmetic and a 12→24-hour conversion, which it gets wrong often (the calendar-only
model turned "2pm" into 18:00 and "Friday" into a Saturday), while code gets it right every time.
So the agent appends one line to each user turn that lists what the request's date and time
phrases mean, and the model only has to copy:

    Add lunch with Anna next Friday at 1:30pm
    (resolved: next Friday = Friday 2026-12-04; 1:30pm = 13:30 = 2026-12-04T13:30)

Training conversations get the same line from the same function (`data/mix.py` through
`annotate`), so what the model learned to copy is what the runtime shows it.

Conventions (one reading each, documented so they can be argued with):
* a bare or "this"/"on" weekday is its next occurrence on or after today; "next <weekday>" is
  its first occurrence after today; "<weekday> next week" is that weekday in the following
  Monday-to-Sunday week;
* a month and day without a year is this year's, unless that lies more than 60 days back, then
  next year's (a request about "January 5" in December means the coming one);
* a time is combined with the date only when the request names exactly one date; a reply that
  names only a time ("At 4 pm.") or only a date, answering the agent's question, combines with
  the one date or time the turn before it named;
* a duration in hours becomes minutes ("2 hours = 120 minutes"), the unit the tools take;
* when the conversation so far names a date and no clock time, the line says "no time given";
  a time and no date, "no date given": what a request to schedule lacks is stated, not guessed.

No library: `dateparser` and `parsedatetime` parse whole strings or guess per token, neither
reports the spans of several phrases in one sentence with our week conventions, and the runtime
must stay small. The grammar here is a few regular expressions over English request phrasing.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from botpsy.protocol.messages import Message
from botpsy.tools.calendar import WEEKDAYS

MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for m in names
}
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(?P<year>20\d\d))?"
_WD = r"(?P<wd>" + "|".join(WEEKDAYS) + r")"
# Explicit calendar dates, optionally led by a weekday ("Thursday, December 3"): the weekday is
# part of the phrase, not a second date.
_EXPLICIT = [
    re.compile(rf"\b(?:{_WD},?\s+)?{_MONTH}\s+{_DAY}\b{_YEAR}", re.I),
    re.compile(rf"\b(?:{_WD},?\s+)?(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}\b{_YEAR}", re.I),
]
_ISO = re.compile(r"\b(?P<iso>20\d\d-[01]\d-[0-3]\d)\b")
_RELATIVE = re.compile(r"\b(?P<rel>the day after tomorrow|today|tonight|tomorrow|yesterday)\b", re.I)
_IN_DAYS = re.compile(
    r"\bin (?P<n>\d{1,2}|a|one|two|three|four|five|six|seven) (?P<unit>days?|weeks?)\b", re.I
)
_WEEKDAY = re.compile(rf"\b(?P<lead>next|this|coming|on)?\s*{_WD}(?P<nextweek>\s+next week)?\b", re.I)
_TIME12 = re.compile(
    r"\b(?P<h>1[0-2]|0?[1-9])(?::(?P<m>[0-5]\d))?\s*(?P<ap>a\.?m\.?|p\.?m\.?)(?![a-z])", re.I
)
_TIME24 = re.compile(r"(?<![\d:])(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?![\d:])(?!\s*[ap]\.?m)", re.I)
_NOON = re.compile(r"\b(?P<word>noon|midday|midnight)\b", re.I)
_WORD_NUMBERS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7}
_HOURS = re.compile(
    r"\b(?:(?P<half>half an hour)|(?P<n>\d{1,2}(?:\.\d+)?|an?|one|two|three|four|five|six)"
    r"(?P<andhalf> and a half)?[\s-]+(?:hours?|hrs?)(?P<andhalf2> and a half)?)\b",
    re.I,
)


def _month_day(today: date, month: int, day: int, year: str | None) -> date | None:
    try:
        d = date(int(year) if year else today.year, month, day)
    except ValueError:
        return None  # "February 30": not a date; the model sees the words as they are
    if not year and (today - d).days > 60:
        d = d.replace(year=d.year + 1)
    return d


def _weekday(today: date, name: str, lead: str, next_week: bool) -> date:
    target = WEEKDAYS.index(name.lower())
    if next_week:
        monday = today - timedelta(days=today.weekday()) + timedelta(days=7)
        return monday + timedelta(days=target)
    ahead = (target - today.weekday()) % 7
    if lead.lower() == "next" and ahead == 0:
        ahead = 7
    return today + timedelta(days=ahead)


def _overlaps(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return any(span[0] < b and a < span[1] for a, b in taken)


def find_dates(text: str, today: date) -> list[tuple[str, date]]:
    """(phrase, date) for every date phrase of `text`, in order of appearance."""
    found: list[tuple[int, int, str, date]] = []
    taken: list[tuple[int, int]] = []

    def add(m: re.Match, d: date | None) -> None:
        if d is not None and not _overlaps(m.span(), taken):
            taken.append(m.span())
            found.append((m.start(), m.end(), m.group(0).strip(), d))

    for rx in _EXPLICIT:
        for m in rx.finditer(text):
            add(m, _month_day(today, MONTHS[m["month"].lower()], int(m["day"]), m["year"]))
    for m in _ISO.finditer(text):
        try:
            add(m, date.fromisoformat(m["iso"]))  # already exact; kept so a time can combine with it
        except ValueError:
            taken.append(m.span())
    for m in _RELATIVE.finditer(text):
        rel = m["rel"].lower()
        offset = {"today": 0, "tonight": 0, "tomorrow": 1, "yesterday": -1}.get(rel, 2)
        add(m, today + timedelta(days=offset))
    for m in _IN_DAYS.finditer(text):
        n = int(m["n"]) if m["n"].isdigit() else _WORD_NUMBERS[m["n"].lower()]
        add(m, today + timedelta(days=n * (7 if m["unit"].lower().startswith("week") else 1)))
    for m in _WEEKDAY.finditer(text):
        add(m, _weekday(today, m["wd"], m["lead"] or "", bool(m["nextweek"])))
    found.sort()
    return [(phrase, d) for _, _, phrase, d in found]


def find_times(text: str) -> list[tuple[str, str]]:
    """(phrase, "HH:MM") for every clock time of `text`, in order of appearance."""
    found: list[tuple[int, str, str]] = []
    for m in _TIME12.finditer(text):
        h, minute = int(m["h"]) % 12, int(m["m"] or 0)
        if m["ap"].lower().startswith("p"):
            h += 12
        found.append((m.start(), m.group(0), f"{h:02d}:{minute:02d}"))
    for m in _TIME24.finditer(text):
        found.append((m.start(), m.group(0), f"{int(m['h']):02d}:{m['m']}"))
    for m in _NOON.finditer(text):
        found.append((m.start(), m.group(0), "00:00" if m["word"].lower() == "midnight" else "12:00"))
    found.sort()
    return [(phrase, hhmm) for _, phrase, hhmm in found]


def find_durations(text: str) -> list[tuple[str, int]]:
    """(phrase, minutes) for every duration given in hours ("2 hours", "an hour and a half")."""
    found = []
    for m in _HOURS.finditer(text):
        if m["half"]:
            minutes = 30
        else:
            n = m["n"].lower()
            hours = float(n) if n[0].isdigit() else _WORD_NUMBERS.get(n, 1)  # "an"
            minutes = round(60 * (hours + (0.5 if m["andhalf"] or m["andhalf2"] else 0)))
        if minutes > 0:
            found.append((m.group(0), minutes))
    return found


def _one_date(dates: list[tuple[str, date]]) -> date | None:
    return dates[0][1] if len({d for _, d in dates}) == 1 else None


def resolve(text: str, today: date, earlier: str = "") -> list[str]:
    """The resolutions of `text`'s date, time and duration phrases, one string each ("2pm = 14:00"),
    then what the conversation so far (`earlier` user turns, then `text`) lacks of a date and time."""
    dates = find_dates(text, today)
    before = find_dates(earlier, today) if earlier else []
    times = find_times(text)
    times_before = find_times(earlier) if earlier else []
    out = []
    for phrase, d in dates:
        if phrase.lower() == d.isoformat():
            continue
        out.append(f"{phrase} = {d.strftime('%A')} {d.isoformat()}")
    single = _one_date(dates) if dates else _one_date(before)
    for phrase, hhmm in times:
        combined = f" = {single.isoformat()}T{hhmm}" if single else ""
        if phrase == hhmm and not combined:
            continue
        out.append(f"{phrase} = {hhmm}{combined}" if phrase != hhmm else f"{phrase}{combined}")
    if not times and dates and single and earlier:
        # a reply naming the date of a time asked for before: they combine
        said = {hhmm: phrase for phrase, hhmm in times_before}
        if len(said) == 1:
            hhmm, phrase = next(iter(said.items()))
            out.append(f"{phrase} = {hhmm} = {single.isoformat()}T{hhmm}")
    for phrase, minutes in find_durations(text):
        out.append(f"{phrase} = {minutes} minutes")
    any_date = bool(dates or before or _ISO.search(text) or _ISO.search(earlier))
    any_time = bool(times or times_before)
    if any_date and not any_time:
        out.append("no time given")
    elif any_time and not any_date:
        out.append("no date given")
    return out


def answered_turn(previous_user: str, last_reply: str) -> str:
    """The user turn a new one answers: the previous (raw) user turn when the assistant's last
    reply was a question ("What time?"), else none, so the new turn is read on its own."""
    return previous_user if last_reply.rstrip().endswith("?") else ""


# Two days far apart (years, weekdays, seasons): a resolution the same on both needs no clock.
_CLOCKLESS = (date(2001, 1, 1), date(2030, 7, 15))


def stated_date(text: str) -> date | None:
    """The first date `text` states in full, year included ("The current time is August 20, 2021,
    Friday", "Today is 2020-08-11"), the same whatever the clock; None without one. An evaluation
    item's "now" read this way is the clock an agent deployed that day would have had."""
    other = dict(find_dates(text, _CLOCKLESS[1]))
    return next((d for phrase, d in find_dates(text, _CLOCKLESS[0]) if other.get(phrase) == d), None)


def annotate(text: str, today: date | None, earlier: str = "") -> str:
    """`text` with a "(resolved: …)" line when it holds date, time or duration phrases (or the
    conversation so far lacks a date or a time); unchanged otherwise. `earlier`: the raw user
    turn this one answers (`answered_turn`), or "".

    Without a clock (`today` None: an evaluation set's requests, written on other days), the line
    is given only where no clock could change it: dates that state their year ("March 1st 2023 =
    Wednesday 2023-03-01"), clock times, durations. A request with "tomorrow", a weekday or a
    month and day without a year stays as it is."""
    if today is None:
        parts = resolve(text, _CLOCKLESS[0], earlier)
        if parts != resolve(text, _CLOCKLESS[1], earlier):
            return text
    else:
        parts = resolve(text, today, earlier)
    if not parts:
        return text
    return f"{text.rstrip()}\n(resolved: {'; '.join(parts)})"


def annotate_messages(messages: list[Message], today: date | None, previous_user: str = "") -> list[Message]:
    """User turns with the runtime's resolved line, each read with the turn it answers: what the
    agent shows the model, for conversations built without it (training data, RL prompts).
    `today` None: no line at all (data for a model trained without it, `sft.resolve_dates`)."""
    if today is None:
        return list(messages)
    out, reply = [], ""
    for m in messages:
        if m.role == "user":
            earlier = answered_turn(previous_user, reply)
            out.append(Message("user", annotate(m.content, today, earlier)))
            previous_user = m.content
        else:
            if m.role == "assistant":
                reply = m.content
            out.append(m)
    return out
