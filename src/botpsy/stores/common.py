"""What every real store shares: one error type, atomic file writes, locks, backups, the clock.

A store exposes `transaction(write)`, a context manager yielding the suite's state. A read
transaction never writes the user's data (and takes no file lock, so a read-only workspace can
still be read; the one cache it may update, the Maildir index, is never made in a read-only
workspace); a write transaction holds the store's lock across load → tool → save, and saves only
when the state's content changed and the block ended without an exception, so a refused tool call
leaves the store exactly as it was. A file or folder without write bits is never written, even by
root (`botpsy.atomic`).
"""

from __future__ import annotations

import errno
import filecmp
import glob
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock, Timeout
from pydantic import BaseModel

from botpsy.atomic import ReplaceError, write_atomic
from botpsy.stores import StoreError

__all__ = ["StoreError", "Store", "atomic_write", "copy_aside", "file_lock", "set_clock", "os_error"]


class Store(Protocol):
    def transaction(self, write: bool = False) -> Any: ...


def os_error(action: str, path: Path | str, e: OSError) -> StoreError:
    """A one-line StoreError for an OSError, with the fix for the common causes (or the error's own
    `hint`, which `botpsy.atomic` sets where the errno alone would mislead: a read-only file)."""
    hint = getattr(e, "hint", None) or {
        errno.EROFS: "the workspace is on a read-only file system",
        errno.EACCES: "the workspace is not writable by this user",
        errno.EPERM: "the workspace is not writable by this user",
        errno.ENOSPC: "the disk is full; free some space",
        errno.EDQUOT: "the disk quota is exhausted; free some space",
    }.get(e.errno or 0, e.strerror or str(e))
    return StoreError(f"cannot {action} {path}: {hint}; nothing was changed")


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path`'s content with `data` in one step (`botpsy.atomic.write_atomic`: symlinks
    written through, mode and owner kept); a failure is a one-line StoreError."""
    try:
        write_atomic(path, lambda f: f.write(data))
    except ReplaceError as e:
        raise os_error(e.action, e.where, e) from None


def copy_aside(path: Path, tag: str = "corrupt") -> str:
    """Copy a store to `NAME.TAG-TIMESTAMP` (one that cannot be parsed: `corrupt`; one a write is
    about to re-encode: `before-reencode`); describe where it went."""
    path = Path(path)
    backup = path.with_name(f"{path.name}.{tag}-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        if path.is_dir():
            return "it is a folder and was left in place"
        # Every failing call lands here: keep one copy per distinct broken content, not one per call.
        size = path.stat().st_size
        for earlier in sorted(path.parent.glob(f"{glob.escape(path.name)}.{tag}-*"), reverse=True):
            if earlier.stat().st_size == size and filecmp.cmp(earlier, path, shallow=False):
                return f"a copy is at {earlier}"
        n = 1
        while backup.exists():  # two copies in one second: never replace the earlier one
            n += 1
            backup = backup.with_name(f"{path.name}.{tag}-{time.strftime('%Y%m%d-%H%M%S')}-{n}")
        shutil.copy2(path, backup)
        return f"a copy is at {backup}"
    except OSError:
        return "no backup could be written"


@contextmanager
def file_lock(lock_path: Path, what: Path, timeout: float = 10.0) -> Iterator[None]:
    lock = FileLock(str(lock_path), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise StoreError(f"{what} is locked by another botpsy process; try again in a moment") from None
    except OSError as e:
        raise os_error("lock", what, e) from None
    try:
        yield
    finally:
        lock.release()


CLOCK_FIELDS = {"now": "%Y-%m-%dT%H:%M", "today": "%Y-%m-%d"}


def set_clock(state: BaseModel, now: datetime | None = None) -> BaseModel:
    """Stamp the device clock on a loaded state (`now`, `today` fields); stores never save these."""
    now = now or datetime.now()
    for name, fmt in CLOCK_FIELDS.items():
        if name in type(state).model_fields:
            setattr(state, name, now.strftime(fmt))
    return state
