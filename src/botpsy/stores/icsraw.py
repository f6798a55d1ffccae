"""The calendar file as bytes: decoded robustly for reading, spliced for writing.

Why bytes: `icalendar` decodes a whole file as UTF-8 and, on any invalid byte, decodes all of it
again with U+FFFD replacement. A single Latin-1 "é", or a UTF-8 character split in two by a
writer that folds lines at 75 bytes, turned every non-ASCII character in the file into U+FFFD,
and the next write saved that — in events no tool touched (issue 36).

Reading (`read`): physical lines are unfolded at the byte level first (a continuation line's
leading space or tab removed, its bytes appended), so a split character is whole again; then
each logical line is decoded as UTF-8, or as Latin-1 when it is not UTF-8 (every byte is a
Latin-1 character, so nothing is replaced). The decoded text is what `icalendar` parses.

Writing (`splice`): the file is the old bytes with only the changed VEVENTs re-serialised. Each
VEVENT's byte span is found by its BEGIN/END lines; the i-th span is the i-th VEVENT `icalendar`
found (document order). An untouched event, and everything outside VEVENTs (VTIMEZONE, VTODO,
X- properties, the file's own folding and line endings), keep their exact bytes; a removed
event's span is dropped; new events go before the last END:VCALENDAR. `reencodes` tells the
caller when a changed event held Latin-1 text, which the new bytes will hold as UTF-8: the store
keeps a copy of the old file first. When spans and components do not line up (a file `icalendar`
read differently), `splice` returns None and the caller re-serialises the whole file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

BOM = b"\xef\xbb\xbf"


@dataclass
class Source:
    raw: bytes
    text: str  # unfolded, decoded, CRLF-joined: what icalendar parses
    spans: list[tuple[int, int]] = field(default_factory=list)  # each VEVENT's bytes, in order
    latin1: list[bool] = field(default_factory=list)  # per span: a line in it was not UTF-8
    any_latin1: bool = False
    end_calendar: int | None = None  # where the last END:VCALENDAR line starts
    newline: bytes = b"\r\n"
    aligned: bool = True  # BEGIN/END:VEVENT lines pair up


def _logical_lines(raw: bytes) -> list[tuple[int, int, bytes]]:
    """(start, end, content) of each unfolded line; end includes the line break."""
    lines: list[list] = []
    pos = 0
    for phys in raw.splitlines(keepends=True):
        end = pos + len(phys)
        body = phys.rstrip(b"\r\n")
        if body[:1] in (b" ", b"\t") and lines:
            lines[-1][1] = end
            lines[-1][2] += body[1:]
        else:
            lines.append([pos, end, bytearray(body)])
        pos = end
    return [(s, e, bytes(c)) for s, e, c in lines]


def read(raw: bytes) -> Source:
    lines = _logical_lines(raw)
    src = Source(raw=raw, text="")
    crlf = raw.count(b"\r\n")
    src.newline = b"\r\n" if crlf or raw.count(b"\n") == 0 else b"\n"
    decoded = []
    start = None
    latin1_here = False
    for i, (s, e, content) in enumerate(lines):
        if i == 0 and content.startswith(BOM):
            content = content[len(BOM) :]
        try:
            text = content.decode("utf-8")
            latin1 = False
        except UnicodeDecodeError:
            text, latin1 = content.decode("latin-1"), True
            src.any_latin1 = True
        decoded.append(text)
        name = content.strip().upper()
        if name == b"BEGIN:VEVENT":
            if start is not None:
                src.aligned = False
            start, latin1_here = s, latin1
        elif start is not None:
            latin1_here = latin1_here or latin1
            if name == b"END:VEVENT":
                src.spans.append((start, e))
                src.latin1.append(latin1_here)
                start = None
        elif name == b"END:VEVENT":
            src.aligned = False
        if name == b"END:VCALENDAR":
            src.end_calendar = s
    if start is not None:
        src.aligned = False
    src.text = "\r\n".join(decoded) + "\r\n"
    return src


def splice(src: Source, originals: list, snapshots: list[bytes], current: list) -> tuple[bytes, bool] | None:
    """The new file bytes and whether a changed event held Latin-1 text; None to re-serialise.

    `originals` are the VEVENT components as loaded (in file order), `snapshots` their
    `to_ical()` then, `current` the calendar's VEVENTs now.
    """
    if not src.aligned or len(src.spans) != len(originals) or src.end_calendar is None:
        return None
    if src.spans and src.end_calendar < src.spans[-1][1]:
        return None
    now = {id(c) for c in current}
    known = {id(c) for c in originals}
    out = bytearray()
    pos = 0
    reencodes = False
    for (s, e), comp, snap, latin1 in zip(src.spans, originals, snapshots, src.latin1, strict=True):
        out += src.raw[pos:s]
        if id(comp) in now:
            new = comp.to_ical()
            if new == snap:
                out += src.raw[s:e]
            else:
                out += _ending(new, src.newline)
                reencodes = reencodes or latin1
        pos = e
    out += src.raw[pos : src.end_calendar]
    for comp in current:
        if id(comp) not in known:
            out += _ending(comp.to_ical(), src.newline)
    out += src.raw[src.end_calendar :]
    return bytes(out), reencodes


def _ending(data: bytes, newline: bytes) -> bytes:
    return data if newline == b"\r\n" else data.replace(b"\r\n", newline)
