"""What every real store shares: one error type, atomic file writes, locks, backups, the clock.

A store exposes `transaction(write)`, a context manager yielding the suite's state. A read
transaction never writes (and takes no file lock, so a read-only workspace can still be read); a
write transaction holds the store's lock across load → tool → save, and saves only when the
state's content changed and the block ended without an exception, so a refused tool call leaves
the store exactly as it was.
"""

from __future__ import annotations

import errno
import filecmp
import glob
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock, Timeout
from pydantic import BaseModel

from botpsy.stores import StoreError

__all__ = ["StoreError", "Store", "atomic_write", "copy_aside", "file_lock", "set_clock", "os_error"]


class Store(Protocol):
    def transaction(self, write: bool = False) -> Any: ...


def os_error(action: str, path: Path | str, e: OSError) -> StoreError:
    """A one-line StoreError for an OSError, with the fix for the common causes."""
    hint = {
        errno.EROFS: "the workspace is on a read-only file system",
        errno.EACCES: "the workspace is not writable by this user",
        errno.EPERM: "the workspace is not writable by this user",
        errno.ENOSPC: "the disk is full; free some space",
        errno.EDQUOT: "the disk quota is exhausted; free some space",
    }.get(e.errno or 0, e.strerror or str(e))
    return StoreError(f"cannot {action} {path}: {hint}; nothing was changed")


def _umask() -> int:
    try:  # Linux says it without changing it; os.umask can only be read by setting it
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` via a temporary file in the same folder, fsync, then rename over it.

    The new file keeps the old one's permission bits and, where allowed, its owner (a temporary
    file is born 0600, so a plain rename turned a shared 0644 calendar private); a new file gets
    0666 minus the umask, as any editor would give it. A symlink is written through, not replaced
    by a regular file, so a calendar linked into a synced folder stays linked.
    """
    path = Path(os.path.realpath(path))
    try:
        st = path.stat()
        mode, owner = stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid)
    except FileNotFoundError:
        mode, owner = 0o666 & ~_umask(), None
    except OSError as e:
        raise os_error("write to", path, e) from None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as e:
        raise os_error("write to", path.parent, e) from None
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            if owner is not None and owner != (os.geteuid(), os.getegid()):
                try:
                    os.fchown(f.fileno(), *owner)
                except OSError:
                    pass  # only root may give a file away; the bits are what matter
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise os_error("save", path, e) from None


def copy_aside(path: Path) -> str:
    """Copy a store that cannot be parsed to `NAME.corrupt-TIMESTAMP`; describe where it went."""
    path = Path(path)
    backup = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        if path.is_dir():
            return "it is a folder and was left in place"
        # Every failing call lands here: keep one copy per distinct broken content, not one per call.
        size = path.stat().st_size
        for earlier in sorted(path.parent.glob(f"{glob.escape(path.name)}.corrupt-*"), reverse=True):
            if earlier.stat().st_size == size and filecmp.cmp(earlier, path, shallow=False):
                return f"a copy is at {earlier}"
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
