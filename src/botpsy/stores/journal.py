"""The journal: every tool decision botpsy made with the user's data, one JSON line each.

    WORKSPACE/journal.jsonl   (0600, append-only)

One record per decision: the request, the proposed call and its labels, the grant, what was
decided (`allowed`, `approved`, `declined`, `held` by a guard, `denied` by a grant, `refused`
for want of an approval, `previewed` in a dry run), the result, the records the call changed (the
undo data, `botpsy.stores.changes`) and, for an egress call, what left the device and to where.
An undo is a record of its own (`kind: "undo"`, `of: ID`), so the file is never rewritten.

Durability, for crashes and concurrent writers (the CLI and an MCP server on one workspace):
* every append opens the file with O_APPEND, takes an exclusive `flock` on it (so ids are
  sequential and lines never interleave), writes one whole line with one `write`, and `fsync`s
  before returning: a record `append` returned is on disk;
* a writer killed mid-line leaves a torn last line without its newline: the next append first
  ends it with a newline, and readers skip such lines and report how many they skipped — never
  fatal, and never glued to the next record.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from botpsy.atomic import read_only_reason
from botpsy.stores.common import StoreError, os_error

TAIL = 1 << 16  # enough of the file's end to find the last record's id


@dataclass
class Entries:
    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: int = 0  # torn or unreadable lines

    def by_id(self) -> dict[int, dict[str, Any]]:
        return {r["id"]: r for r in self.records if isinstance(r.get("id"), int)}

    def undone(self) -> dict[int, int]:
        """Action id -> the id of the undo record that took it back."""
        return {
            r["of"]: r["id"] for r in self.records if r.get("kind") == "undo" and r.get("outcome") == "ok"
        }


def _last_id(fd: int, path: Path) -> int:
    size = os.fstat(fd).st_size
    start = max(0, size - TAIL)
    data = os.pread(fd, size - start, start)
    for line in reversed(data.split(b"\n")):
        try:
            rid = json.loads(line).get("id")
        except (ValueError, AttributeError):
            continue
        if isinstance(rid, int):
            return rid
    if start > 0:  # a record bigger than the tail: scan the whole file once
        return max((r["id"] for r in read(path).records if isinstance(r.get("id"), int)), default=0)
    return 0


def _line(rec: dict[str, Any]) -> bytes:
    """One JSON line; a value JSON cannot hold (a 5,000-digit integer, a cycle) is named, not fatal."""
    try:
        text = json.dumps(rec, default=str)  # ASCII: a lone surrogate cannot make a line unreadable
    except (ValueError, TypeError, RecursionError):
        safe = {}
        for k, v in rec.items():
            try:
                json.dumps(v, default=str)
                safe[k] = v
            except (ValueError, TypeError, RecursionError) as e:
                safe[k] = f"<not recordable: {type(e).__name__}>"
        text = json.dumps(safe, default=str)
    return text.encode("ascii") + b"\n"


class Journal:
    def __init__(self, root: Path | str):
        self.path = Path(root) / "journal.jsonl"

    def append(self, record: dict[str, Any]) -> int:
        """Write one record and return its id once it is on disk; a StoreError if it cannot be."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # A folder or journal without write bits is the user's "read-only", even for root.
            for where, what in ((self.path.parent, "folder"), (self.path, "file")):
                if where.exists() and (why := read_only_reason(where.stat(), str(where), what=f"the {what}")):
                    raise StoreError(f"cannot write the journal {self.path}: {why}")
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as e:
            raise os_error("write the journal", self.path, e) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            torn = size > 0 and os.pread(fd, 1, size - 1) != b"\n"
            rid = _last_id(fd, self.path) + 1
            rec = {"id": rid, "time": datetime.now().astimezone().isoformat(timespec="seconds"), **record}
            line = _line(rec)
            os.write(fd, (b"\n" if torn else b"") + line)
            os.fsync(fd)
            return rid
        except OSError as e:
            raise os_error("write the journal", self.path, e) from None
        finally:
            os.close(fd)  # closing releases the lock

    def read(self) -> Entries:
        return read(self.path)


def read(path: Path) -> Entries:
    out = Entries()
    try:
        with open(path, "rb") as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    rec = json.loads(line)
                except ValueError:
                    out.skipped += 1
                    continue
                if isinstance(rec, dict):
                    out.records.append(rec)
                else:
                    out.skipped += 1
    except FileNotFoundError:
        pass
    except OSError as e:
        raise StoreError(f"cannot read the journal {path}: {e.strerror or e}") from None
    return out


def matches(
    rec: dict[str, Any],
    suite: str | None = None,
    outcome: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> bool:
    """The `botpsy log` filters; dates compare as ISO text (YYYY-MM-DD or a full timestamp)."""
    if suite and rec.get("suite") != suite:
        return False
    if outcome and outcome not in (rec.get("decision"), rec.get("outcome")):
        return False
    day = str(rec.get("time", ""))
    if since and day[: len(since)] < since:
        return False
    if until and day[: len(until)] > until:
        return False
    return True


def iter_actions(entries: Entries) -> Iterator[dict[str, Any]]:
    """Records of calls that changed something, newest first (what `botpsy undo` looks at)."""
    for rec in reversed(entries.records):
        if rec.get("kind", "call") == "call" and rec.get("changes"):
            yield rec
