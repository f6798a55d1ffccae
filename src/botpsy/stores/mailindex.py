"""The mailbox index: each message's parsed record, kept so a call parses only new or changed mail.

Parsing every message on every call cost ~7 s per call at 20,000 messages (issue 36). A record
(`mailparse.parse`) is cached under the message's folder and Maildir key, with the file's
signature: size, modification time in ns and inode. Maildir files are written once and renamed
to change flags or folders (which keeps all three), so a matching signature means the same bytes.

Two layers: a per-process memo (a long `chat` or `serve` re-reads nothing) and a SQLite file
beside the Maildir, `NAME.index` (a one-shot `run` starts warm). Neither is trusted blindly:
* a record is used only while the file's current signature equals the cached one, and only if
  it has the record's exact shape; anything else is parsed again from the file;
* an index whose `user_version` is not this parser's `VERSION` is emptied and rebuilt (a newer
  parser must not read an older one's records); one that is not a SQLite database, or is
  damaged, is deleted and rebuilt; rows for files that are gone are dropped;
* the index is a cache: when it cannot be opened or written (a read-only workspace, another
  process holding it) the records are parsed and nothing fails. It is never the only copy of
  anything — deleting it costs one slow call.
JSON text, not pickle: a planted index can at worst show wrong text for a message whose
signature it guessed, never run code.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path

from botpsy.atomic import read_only_reason
from botpsy.stores.mailparse import parse

VERSION = 1  # bump when `mailparse.parse` changes what a record holds or how it reads mail
_MEMO: dict[str, dict[str, tuple[tuple[int, int, int], dict]]] = {}
_LOCK = threading.Lock()
MEMO_MAILBOXES = 4  # mailboxes whose records one process keeps in memory
_SHAPE = {
    "xid": str,
    "msgid": str,
    "sender": str,
    "to": list,
    "cc": list,
    "subject": str,
    "date": list,
    "body": str,
    "attachments": list,
}


@dataclass(frozen=True)
class Item:
    """One message file to look up: its cache key, where it is, its signature and mtime."""

    key: str
    path: str
    sig: tuple[int, int, int]
    mtime: float


def signature(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _valid(text: str) -> dict | None:
    try:
        rec = json.loads(text)
    except (ValueError, TypeError, RecursionError):
        return None
    if not isinstance(rec, dict) or set(rec) != set(_SHAPE):
        return None
    if not all(isinstance(rec[k], t) for k, t in _SHAPE.items()):
        return None
    lists = rec["to"] + rec["cc"] + rec["attachments"]
    if not all(isinstance(x, str) for x in lists) or len(rec["date"]) != 2:
        return None
    if rec["date"][0] not in ("ts", "naive") or not isinstance(rec["date"][1], (int, float, str)):
        return None
    return rec


class MailIndex:
    def __init__(self, path: Path):
        self.path = Path(path)

    def records(self, items: list[Item]) -> dict[str, dict]:
        """Each item's record (items whose file vanished are left out)."""
        with _LOCK:  # `serve` may load from several threads; the second waits, then hits the memo
            return self._records(items)

    def _records(self, items: list[Item]) -> dict[str, dict]:
        memo = _MEMO.pop(str(self.path), {})
        _MEMO[str(self.path)] = memo  # most recent last; a process seldom reads more than one mailbox
        while len(_MEMO) > MEMO_MAILBOXES:
            del _MEMO[next(iter(_MEMO))]
        out: dict[str, dict] = {}
        missing = []
        for it in items:
            hit = memo.get(it.key)
            if hit is not None and hit[0] == it.sig:
                out[it.key] = hit[1]
            else:
                missing.append(it)
        present = {it.key for it in items}
        for gone in [k for k in memo if k not in present]:
            del memo[gone]
        if not missing:
            return out
        con = self._connect()
        rows = self._rows(con) if con is not None else {}
        fresh = []
        for it in missing:
            row = rows.get(it.key)
            rec = _valid(row[1]) if row is not None and row[0] == it.sig else None
            if rec is None:
                try:
                    with open(it.path, "rb") as f:
                        data = f.read()
                except OSError:
                    continue  # moved or removed by another mail program while we looked
                rec = parse(data, it.mtime)
                fresh.append((it, rec))
            memo[it.key] = (it.sig, rec)
            out[it.key] = rec
        if con is not None:
            self._store(con, fresh, stale=[k for k in rows if k not in present])
        return out

    # ---- the SQLite file: best effort --------------------------------------------------------
    def _connect(self) -> sqlite3.Connection | None:
        for attempt in (1, 2):
            mode = self._mode()
            if mode is None:
                return None
            con = None
            try:
                con = sqlite3.connect(f"{self.path.as_uri()}?mode={mode}", uri=True, timeout=2.0)
                if con.execute("PRAGMA user_version").fetchone()[0] != VERSION:
                    with con:
                        con.execute("DROP TABLE IF EXISTS mails")
                        con.execute(
                            "CREATE TABLE mails (key TEXT PRIMARY KEY, size INTEGER, mtime INTEGER, "
                            "ino INTEGER, record TEXT)"
                        )
                        con.execute(f"PRAGMA user_version = {VERSION}")
                return con
            except sqlite3.OperationalError:  # read-only, locked, cannot be made: no index this time
                if con is not None:
                    con.close()
                return None
            except sqlite3.DatabaseError:  # not a database, or damaged: start again
                if con is not None:
                    con.close()
                if attempt == 2 or not self._remove():
                    return None
        return None

    def _mode(self) -> str | None:
        """How to open the index: made only in a folder the user may write ("rwc"), only read
        where the file is read-only ("ro"); None for no index (a read-only workspace stays as it was,
        even for root, whom the kernel would let write)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            try:
                return None if read_only_reason(os.stat(self.path.parent), str(self.path.parent)) else "rwc"
            except OSError:
                return None
        except OSError:
            return None
        return "ro" if read_only_reason(st, str(self.path)) else "rw"

    def _remove(self) -> bool:
        try:
            for suffix in ("", "-journal", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            return True
        except OSError:
            return False

    def _rows(self, con: sqlite3.Connection) -> dict[str, tuple[tuple[int, int, int], str]]:
        try:
            return {
                k: ((s, m, i), r)
                for k, s, m, i, r in con.execute("SELECT key, size, mtime, ino, record FROM mails")
            }
        except sqlite3.Error:
            return {}

    def _store(self, con: sqlite3.Connection, fresh: list, stale: list[str]) -> None:
        try:
            with con:
                con.executemany(
                    "INSERT OR REPLACE INTO mails VALUES (?, ?, ?, ?, ?)",
                    [(it.key, *it.sig, json.dumps(rec, ensure_ascii=False)) for it, rec in fresh],
                )
                con.executemany("DELETE FROM mails WHERE key = ?", [(k,) for k in stale])
        except sqlite3.OperationalError:  # locked or read-only: the records stay in the memo only
            pass
        except sqlite3.DatabaseError:
            con.close()
            self._remove()  # damaged: the next call builds a new one
        except (UnicodeError, ValueError):  # text SQLite cannot hold; parsed again next time
            pass
        finally:
            try:
                con.close()
            except sqlite3.Error:
                pass
