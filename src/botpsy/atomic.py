"""Replacing a file in one step: the mechanism under the stores and the report writer.

The new content goes into a temporary file beside the target, is flushed and synced, and is then
renamed over the name, so a reader (or a crash) sees the old file or the new one, never half of
either. If writing raises, Ctrl-C included, the temporary file is removed and the target is as it
was.

* Every step after the folder is opened is relative to that folder's descriptor (`dir_fd`): the
  temporary file is made, renamed and, on failure, removed in the folder that was checked, even if
  the folder is renamed or swapped for a link meanwhile (removing it by path once deleted a file
  of that name wherever the path then led, and left the temporary file behind).
* `write_at` is the primitive for callers that hold a folder descriptor (the files sandbox opens
  every folder with O_NOFOLLOW); `write_atomic` resolves a path first, so a symlink is written
  through, not replaced by a regular file (a calendar linked into a synced folder stays linked).
* Only regular files are replaced. A FIFO, socket, device node or folder under the name is a
  `ReplaceError` and nothing is written: renaming over it would silently destroy it.
* A file's permission is respected: one without any write bit (chmod a-w), or one this user may
  not write, is refused with a clear error — a rename only needs the folder to be writable, so
  replacing used to ignore the file's own mode. The same holds for a folder without write bits
  (root ignores permissions; the bits still say what the user wants).
* The new file keeps the old one's permission bits and, where allowed, its owner: `mkstemp`
  creates files 0600, so a plain rename turned a shared 0644 calendar private. A file that did not
  exist gets 0666 less the umask, as `open` would give it.
* A new file never replaces anything: it is put in place with `renameat2(RENAME_NOREPLACE)` (or a
  check then rename where the file system lacks it), so a name that appeared meanwhile is an error.
* Failures are `ReplaceError`, an OSError that says which step failed: "write to" when nothing was
  started (unreadable, read-only or not a regular file, no temporary file can be made), "save"
  when writing or renaming failed. `hint` says what to do, where the errno alone would mislead.
  The stores turn it into their one-line StoreError.

The standard library has the steps but not the whole (`tempfile` gives 0600 files and no rename
over a target); the packages that do it (`atomicwrites`) are archived or do not keep mode and owner.
"""

from __future__ import annotations

import ctypes
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
NOFOLLOW_DIR = DIR_FLAGS | os.O_NOFOLLOW


class ReplaceError(OSError):
    """An OSError from `write_atomic`/`write_at`, with the step that failed and the path it failed on."""

    def __init__(self, action: str, where: Path, error: OSError, hint: str | None = None):
        super().__init__(error.errno, error.strerror or str(error), str(where))
        self.action = action  # "write to" (nothing started) or "save" (the write itself failed)
        self.where = where
        self.hint = hint  # what to do, when the errno's usual fix is wrong (a read-only file)


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


def kind_of(mode: int) -> str:
    """What a non-regular file is, in words."""
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def read_only_reason(
    st: os.stat_result, name: str, dir_fd: int | None = None, what: str = "it"
) -> str | None:
    """Why the file or folder behind `st` must not be written, or None when it may be.

    No write bit at all means the user marked it read-only: refused even for root, whom the kernel
    would let through. Otherwise the kernel's own answer for this user (`access`, effective ids).
    """
    mode = stat.S_IMODE(st.st_mode)
    if not mode & 0o222:
        return f"{what} is read-only (mode {mode:04o})"
    try:
        allowed = os.access(
            name, os.W_OK, dir_fd=dir_fd, effective_ids=os.access in os.supports_effective_ids
        )
    except (OSError, NotImplementedError):
        allowed = True  # cannot ask: let the write itself fail if it must
    if not allowed:
        return f"this user may not write {what} (mode {mode:04o}, owner uid {st.st_uid})"
    return None


def _refuse(where: Path, reason: str, what: str = "file") -> ReplaceError:
    fix = {
        "file": "make it writable (chmod u+w) if botpsy may change it",
        "folder": "make the folder writable (chmod u+w) if botpsy may change it",
    }[what]
    return ReplaceError(
        "write to", where, PermissionError(errno.EACCES, f"{reason}"), hint=f"{reason}; {fix}"
    )


def _not_regular(where: Path, mode: int) -> ReplaceError:
    what = kind_of(mode)
    return ReplaceError(
        "write to",
        where,
        IsADirectoryError(errno.EISDIR, what) if stat.S_ISDIR(mode) else OSError(errno.EEXIST, what),
        hint=f"it is {what}, not a regular file, and is never replaced",
    )


# ---- renameat2(RENAME_NOREPLACE): the one rename that cannot clobber a name that appeared ----------
_RENAME_NOREPLACE = 1
try:
    _renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    _renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
except (AttributeError, OSError):  # not glibc ≥ 2.28 (musl, macOS): check, then rename
    _renameat2 = None


def rename_noreplace(src_fd: int, src: str, dst_fd: int, dst: str) -> None:
    """Rename `src` (in folder `src_fd`) to `dst` (in `dst_fd`); FileExistsError if `dst` exists.

    Neither name is followed if it is a link. Where the kernel or file system lacks
    RENAME_NOREPLACE, the fallback checks first: a name that appears in that instant can be replaced,
    but only inside the same folder descriptor, never outside it.
    """
    if _renameat2 is not None:
        if _renameat2(src_fd, os.fsencode(src), dst_fd, os.fsencode(dst), _RENAME_NOREPLACE) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise OSError(code, os.strerror(code), dst)
    try:
        os.stat(dst, dir_fd=dst_fd, follow_symlinks=False)
    except FileNotFoundError:
        os.rename(src, dst, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        return
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dst)


def lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    """`name`'s own status in folder `dir_fd` (a link is not followed), or None if it is not there."""
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def check_folder(dir_fd: int, where: Path) -> None:
    """Refuse to add files to a folder the user marked read-only (see `read_only_reason`)."""
    reason = read_only_reason(os.fstat(dir_fd), ".", dir_fd, what="the folder")
    if reason is not None:
        raise _refuse(where, reason, "folder")


def write_at(
    dir_fd: int,
    name: str,
    write: Callable[[IO[bytes]], Any],
    *,
    where: Path,
    replace: bool = True,
) -> None:
    """`write(f)` into a temporary file in folder `dir_fd`, then rename it to `name` there.

    `name` must be one path component. With `replace`, an existing regular, writable `name` is
    replaced (its mode and owner kept); otherwise an existing `name` of any kind is an error.
    `where` is the path used in messages.
    """
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not a file name: {name!r}")
    try:
        st = lstat_at(dir_fd, name)
        check_folder(dir_fd, where.parent)  # the temporary file and the rename are changes to it
    except ReplaceError:
        raise
    except OSError as e:
        raise ReplaceError("write to", where, e) from e
    if st is not None:
        if not replace:
            raise ReplaceError(
                "write to",
                where,
                FileExistsError(errno.EEXIST, "exists"),
                hint=f"it already exists on disk ({kind_of(st.st_mode)}); nothing was replaced",
            )
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular(where, st.st_mode)
        reason = read_only_reason(st, name, dir_fd)
        if reason is not None:
            raise _refuse(where, reason)
        mode, owner = stat.S_IMODE(st.st_mode), (st.st_uid, st.st_gid)
    else:
        mode, owner = 0o666 & ~umask(), None
    tmp = f".{name[:40]}.{secrets.token_hex(4)}.tmp"  # 40 characters: within NAME_MAX in any encoding
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
    except OSError as e:
        raise ReplaceError("write to", where.parent, e) from e
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
        if st is not None:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        else:
            rename_noreplace(dir_fd, tmp, dir_fd, name)
    except OSError as e:
        _discard(dir_fd, tmp)
        if isinstance(e, FileExistsError):
            raise ReplaceError(
                "save", where, e, hint="it appeared on disk meanwhile; nothing was replaced"
            ) from e
        raise ReplaceError("save", where, e) from e
    except BaseException:  # KeyboardInterrupt and the writer's own errors: no temporary file is left
        _discard(dir_fd, tmp)
        raise


def _discard(dir_fd: int, tmp: str) -> None:
    try:
        os.unlink(tmp, dir_fd=dir_fd)
    except FileNotFoundError:
        pass


def write_atomic(path: Path | str, write: Callable[[IO[bytes]], Any], *, parents: bool = False) -> Path:
    """`write(f)` into a temporary file beside `path`, then move it over `path` in one step.

    `parents` creates missing folders on the way. Returns the path as given.
    """
    given = Path(path)
    target = Path(os.path.realpath(given))
    try:
        if parents:
            target.parent.mkdir(parents=True, exist_ok=True)
        dir_fd = os.open(target.parent, DIR_FLAGS)
    except OSError as e:
        raise ReplaceError("write to", target.parent, e) from e
    try:
        write_at(dir_fd, target.name, write, where=target, replace=True)
    finally:
        os.close(dir_fd)
    return given
