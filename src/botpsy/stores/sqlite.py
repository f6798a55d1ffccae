"""SQLite store: each suite's state as ordinary tables in the workspace database.

Mapping (derived from the pydantic model, so it cannot drift from the tools):
* a `list[Record]` field becomes table `SUITE_FIELD` with one column per record field (TEXT,
  INTEGER, REAL; lists, dicts and nested models as JSON text); the record's `id` (or `url`,
  `product_id`) is the primary key; rows load in insertion (rowid) order;
* every other field lives as JSON in `SUITE_settings(key, value)`;
* fields named in `fts` become an FTS5 virtual table instead (the web corpus), so the same
  database also serves full-text queries from outside botpsy;
* clock fields (`now`, `today`) are set from the device clock at load and never stored.

Transactions are SQLite's own: `BEGIN IMMEDIATE` for a write takes the database's write lock
before reading, so two processes doing load → tool → save are serialised, and the save is one
SQLite transaction (journal, fsync), so a crash or a full disk keeps the old or the new state.
Saves are diffs by primary key: UPDATE changed rows (keeping their rowid, so order survives),
INSERT new ones, DELETE removed ones.

A file that is not a SQLite database, or rows that do not fit the model, are reported as a
`StoreError`; the file is copied aside and never written.
"""

from __future__ import annotations

import json
import sqlite3
import types
import typing
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from botpsy.stores.common import CLOCK_FIELDS, StoreError, copy_aside, os_error, set_clock

KEYS = ("id", "url", "product_id")


def _kind(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return _kind(args[0]) if len(args) == 1 else "json"
    if origin is typing.Literal:
        value = typing.get_args(hint)[0]
        return "int" if isinstance(value, int) and not isinstance(value, bool) else "text"
    return {str: "text", int: "int", float: "real", bool: "bool"}.get(hint, "json")


_SQL = {"text": "TEXT", "int": "INTEGER", "real": "REAL", "bool": "INTEGER", "json": "TEXT"}


class _Table:
    def __init__(self, name: str, record: type[BaseModel], fts: bool):
        self.name, self.record, self.fts = name, record, fts
        hints = typing.get_type_hints(record)
        self.columns = {f: _kind(hints[f]) for f in record.model_fields}
        self.key = next((k for k in KEYS if k in self.columns), None)

    def ddl(self) -> str:
        if self.fts:
            cols = ", ".join(c if c != self.key else f"{c} UNINDEXED" for c in self.columns)
            return f"CREATE VIRTUAL TABLE IF NOT EXISTS {self.name} USING fts5({cols})"
        cols = ", ".join(
            f"{c} {_SQL[k]}" + (" PRIMARY KEY" if c == self.key else "") for c, k in self.columns.items()
        )
        return f"CREATE TABLE IF NOT EXISTS {self.name} ({cols})"

    def to_row(self, record: dict) -> list[Any]:
        out = []
        for c, k in self.columns.items():
            v = record.get(c)
            if k == "json":
                v = json.dumps(v, ensure_ascii=False, sort_keys=True)
            elif k == "bool" and v is not None:
                v = int(v)
            out.append(v)
        return out

    def from_row(self, row: tuple) -> dict:
        rec = {}
        for (c, k), v in zip(self.columns.items(), row, strict=True):
            if k == "json":
                v = json.loads(v) if v is not None else None
            elif k == "bool" and v is not None:
                v = bool(v)
            if v is not None:
                rec[c] = v
        return rec


class SqliteStore:
    def __init__(
        self,
        path: Path | str,
        suite: str,
        state_type: type[BaseModel],
        fts: tuple[str, ...] = (),
        timeout: float = 10.0,
        clock: typing.Callable[[], datetime] | None = None,
    ):
        self.path, self.suite, self.state_type = Path(path), suite, state_type
        self.timeout, self.clock = timeout, clock
        hints = typing.get_type_hints(state_type)
        self.tables: dict[str, _Table] = {}
        self.settings: list[str] = []
        for name in state_type.model_fields:
            if name in CLOCK_FIELDS:
                continue
            hint = hints[name]
            args = typing.get_args(hint)
            if (
                typing.get_origin(hint) is list
                and args
                and isinstance(args[0], type)
                and issubclass(args[0], BaseModel)
            ):
                self.tables[name] = _Table(f"{suite}_{name}", args[0], name in fts)
            else:
                self.settings.append(name)
        self.settings_table = f"{suite}_settings"

    # ---- plumbing ----------------------------------------------------------------------------------
    def _error(self, e: sqlite3.Error) -> StoreError:
        text = str(e)
        low = text.lower()
        if "locked" in low or "busy" in low:
            return StoreError(
                f"{self.path} is busy (another botpsy process is writing); try again in a moment"
            )
        if "readonly" in low or "read-only" in low or "unable to open" in low:
            return StoreError(
                f"cannot write {self.path}: the workspace is read-only for this user; nothing was changed"
            )
        if "disk is full" in low or "disk i/o" in low:
            return StoreError(
                f"cannot save {self.path}: {text}; free some space, the previous state is intact"
            )
        if isinstance(e, sqlite3.DatabaseError) and ("not a database" in low or "malformed" in low):
            where = copy_aside(self.path)
            return StoreError(
                f"cannot read {self.path}: {text}. The file was left untouched ({where}); "
                "fix or move it, then try again."
            )
        return StoreError(f"database error on {self.path}: {text}")

    def _connect(self, write: bool) -> sqlite3.Connection:
        if write:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        else:
            conn = sqlite3.connect(
                f"{self.path.resolve().as_uri()}?mode=ro",
                uri=True,
                timeout=self.timeout,
                isolation_level=None,
            )
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    def _existing(self, conn: sqlite3.Connection) -> set[str]:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}

    def _create(self, conn: sqlite3.Connection, existing: set[str]) -> None:
        for t in self.tables.values():
            if t.name not in existing:
                conn.execute(t.ddl())
            elif not t.fts:  # a newer model may have added fields: add their columns
                have = {r[1] for r in conn.execute(f"PRAGMA table_info({t.name})")}
                for c, k in t.columns.items():
                    if c not in have:
                        conn.execute(f"ALTER TABLE {t.name} ADD COLUMN {c} {_SQL[k]}")
        if self.settings_table not in existing:
            conn.execute(
                f"CREATE TABLE IF NOT EXISTS {self.settings_table} (key TEXT PRIMARY KEY, value TEXT)"
            )

    def _read(self, conn: sqlite3.Connection) -> dict[str, Any]:
        existing = self._existing(conn)
        data: dict[str, Any] = {}
        for field, t in self.tables.items():
            if t.name not in existing:
                data[field] = []
                continue
            have = {r[1] for r in conn.execute(f"PRAGMA table_info({t.name})")}
            cols = [c for c in t.columns if c in have]
            rows = conn.execute(f"SELECT {', '.join(cols)} FROM {t.name} ORDER BY rowid").fetchall()
            sub = _Table(t.name, t.record, t.fts)
            sub.columns = {c: t.columns[c] for c in cols}
            data[field] = [sub.from_row(r) for r in rows]
        if self.settings_table in existing:
            for key, value in conn.execute(f"SELECT key, value FROM {self.settings_table}"):
                if key in self.settings:
                    data[key] = json.loads(value)
        return data

    def _dump(self, state: BaseModel) -> dict[str, Any]:
        return state.model_dump(mode="json", exclude=set(CLOCK_FIELDS))

    def _save(self, conn: sqlite3.Connection, before: dict[str, Any], after: dict[str, Any]) -> None:
        self._create(conn, self._existing(conn))
        for field, t in self.tables.items():
            old, new = before.get(field, []), after.get(field, [])
            if old == new:
                continue
            cols = list(t.columns)
            if t.key is None or len({r[t.key] for r in new}) != len(new):
                conn.execute(f"DELETE FROM {t.name}")
                conn.executemany(
                    f"INSERT INTO {t.name} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                    [t.to_row(r) for r in new],
                )
                continue
            old_by = {r[t.key]: r for r in old}
            new_keys = {r[t.key] for r in new}
            for key in old_by.keys() - new_keys:
                conn.execute(f"DELETE FROM {t.name} WHERE {t.key} = ?", (key,))
            for r in new:
                prev = old_by.get(r[t.key])
                if prev == r:
                    continue
                if prev is not None and not t.fts:
                    sets = ", ".join(f"{c} = ?" for c in cols)
                    conn.execute(f"UPDATE {t.name} SET {sets} WHERE {t.key} = ?", [*t.to_row(r), r[t.key]])
                else:
                    if prev is not None:
                        conn.execute(f"DELETE FROM {t.name} WHERE {t.key} = ?", (r[t.key],))
                    conn.execute(
                        f"INSERT INTO {t.name} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                        t.to_row(r),
                    )
        for key in self.settings:
            if before.get(key, object()) != after.get(key):
                conn.execute(
                    f"INSERT OR REPLACE INTO {self.settings_table} (key, value) VALUES (?, ?)",
                    (key, json.dumps(after.get(key), ensure_ascii=False, sort_keys=True)),
                )

    def _validate(self, data: dict[str, Any]) -> BaseModel:
        try:
            return self.state_type.model_validate(data)
        except ValidationError as e:
            where = copy_aside(self.path)
            first = e.errors()[0]
            raise StoreError(
                f"cannot read {self.suite} from {self.path}: {'.'.join(map(str, first['loc']))}: {first['msg']}. "
                f"The file was left untouched ({where}); fix or move it, then try again."
            ) from None

    # ---- the interface ---------------------------------------------------------------------------
    @contextmanager
    def transaction(self, write: bool = False) -> Iterator[BaseModel]:
        if not write and not self.path.exists():
            yield set_clock(self.state_type(), self.clock() if self.clock else None)
            return
        try:
            conn = self._connect(write)
        except sqlite3.Error as e:
            raise self._error(e) from None
        except OSError as e:  # the workspace folder cannot be made (read-only file system, no access)
            raise os_error("create", self.path, e) from None
        try:
            try:
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                raw = self._read(conn)
            except sqlite3.Error as e:
                raise self._error(e) from None
            except (ValueError, RecursionError) as e:  # a JSON column or setting that is not JSON
                where = copy_aside(self.path)
                raise StoreError(
                    f"cannot read {self.suite} from {self.path}: a JSON value is malformed ({e}). "
                    f"The file was left untouched ({where}); fix or move it, then try again."
                ) from None
            state = self._validate(raw)
            before = self._dump(state)
            set_clock(state, self.clock() if self.clock else None)
            yield state
            if write:
                after = self._dump(state)
                try:
                    if after != before:
                        self._save(conn, before, after)
                    conn.execute("COMMIT")
                except sqlite3.Error as e:
                    raise self._error(e) from None
        finally:
            if conn.in_transaction:
                conn.rollback()
            conn.close()

    def replace(self, state: BaseModel) -> None:
        """Write a whole state (seeding a workspace, importing); one transaction."""
        with self.transaction(write=True) as current:
            for name in type(state).model_fields:
                if name not in CLOCK_FIELDS:
                    setattr(current, name, getattr(state, name))
