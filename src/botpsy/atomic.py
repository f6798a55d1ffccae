"""Replacing a file in one step: the mechanism under both the stores and the report writer.

The new content goes into a temporary file beside the target, is flushed and synced, and is then
`os.replace`d over the name, so a reader (or a crash) sees the old file or the new one, never half
of either. If writing raises, Ctrl-C included, the temporary file is removed and the target is as
it was.

* The target's path is resolved first, so a symlink is written through, not replaced by a regular
  file (a calendar linked into a synced folder stays linked).
* The new file keeps the old one's permission bits and, where allowed, its owner: `mkstemp`
  creates files 0600, so a plain rename turned a shared 0644 calendar private. A file that did not
  exist gets 0666 less the umask, as `open` would give it.
* Failures are `ReplaceError`, an OSError that says which step failed: "write to" when the old
  file cannot be read or no temporary file can be made in its folder (nothing was started), "save"
  when writing or renaming failed. The stores turn it into their one-line StoreError.

The standard library has the steps but not the whole (`tempfile` gives 0600 files and no rename
over a target); the packages that do it (`atomicwrites`) are archived or do not keep mode and owner.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any


class ReplaceError(OSError):
    """An OSError from `write_atomic`, with the step that failed and the path it failed on."""

    def __init__(self, action: str, where: Path, error: OSError):
        super().__init__(error.errno, error.strerror or str(error), str(where))
        self.action = action  # "write to" (nothing started) or "save" (the write itself failed)
        self.where = where


def umask() -> int:
    """The process umask, read without changing it where Linux allows."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere it can only be read by setting it
    os.umask(mask)
    return mask


def write_atomic(path: Path | str, write: Callable[[IO[bytes]], Any], *, parents: bool = False) -> Path:
    """`write(f)` into a temporary file beside `path`, then move it over `path` in one step.

    `parents` creates missing folders on the way. Returns the path as given.
    """
    given = Path(path)
    target = Path(os.path.realpath(given))
    try:
        if parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        st = target.stat()
        mode, owner = stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid)
    except FileNotFoundError:
        mode, owner = 0o666 & ~umask(), None
    except OSError as e:
        raise ReplaceError("write to", target, e) from e
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as e:
        raise ReplaceError("write to", target.parent, e) from e
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            if owner is not None and owner != (os.geteuid(), os.getegid()):
                try:
                    os.fchown(f.fileno(), *owner)
                except OSError:
                    pass  # only root may give a file away; the bits are what matter
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise ReplaceError("save", target, e) from e
    except BaseException:  # KeyboardInterrupt and the writer's own errors: no temporary file is left
        Path(tmp).unlink(missing_ok=True)
        raise
    return given
