"""The files suite's real store: one sandbox folder on disk.

Load walks the folder without following links. A symbolic link becomes a `link` entry (flagged
`escapes` when its real target is outside the sandbox), so the tools can refuse to go through it.
Text files up to `MAX_TEXT` bytes are loaded with their content; other files with their size.
FIFOs, sockets and device nodes are not the user's documents: not shown, never opened, never
replaced (a write to such a name is an error, whatever `overwrite` says).

Save applies the difference between the loaded and the new state: create folders, rename moved
entries (a rename, so large or binary files move without being read), write new or changed text
files atomically (`botpsy.atomic.write_at`: temporary file in the same folder, fsync, rename),
then delete what is gone.

Why every step is relative to a folder descriptor: checking a path and then using it races. A
folder swapped for a link between the check and the write sent writes outside the sandbox and
left temporary files behind (17 and 79 of 2,000 writes in issue 36's probe). Now the sandbox root
is opened once with O_NOFOLLOW, each folder on the way is opened relative to its parent with
O_NOFOLLOW | O_DIRECTORY, and the final name is made, renamed or removed relative to that
descriptor (`dir_fd`, `renameat`, `unlinkat`). A link anywhere on the way is an error, and a swap
after the folder was opened changes nothing: the descriptor still names the folder that was
checked, inside the sandbox. A file without write bits is neither overwritten nor deleted.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from botpsy.atomic import (
    NOFOLLOW_DIR,
    ReplaceError,
    check_folder,
    kind_of,
    lstat_at,
    read_only_reason,
    rename_noreplace,
    write_at,
)
from botpsy.stores.common import StoreError, file_lock, os_error
from botpsy.tools.files import MAX_TEXT, Entry, FilesState

MAX_ENTRIES = 20_000
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


@contextmanager
def _closing(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


class FolderStore:
    def __init__(self, root: Path | str, timeout: float = 10.0):
        self.root = Path(root)
        self.timeout = timeout
        self.lock_path = self.root.with_name(self.root.name + ".lock")

    def _inside(self, real: str) -> bool:
        root = os.path.realpath(self.root)
        return real == root or real.startswith(root + os.sep)

    def _open_root(self) -> int | None:
        """The sandbox folder's descriptor, or None if it does not exist; never through a link."""
        try:
            return os.open(self.root, NOFOLLOW_DIR)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                raise StoreError(
                    f"{self.root} is not a folder (or is a link); the files suite needs a real folder"
                ) from None
            raise os_error("read", self.root, e) from None

    # ---- load --------------------------------------------------------------------------------
    def _load(self) -> FilesState:
        state = FilesState()
        root_fd = self._open_root()
        if root_fd is None:
            return state
        stack = [("", root_fd)]
        try:
            while stack:
                rel_dir, fd = stack.pop()
                with _closing(fd):
                    self._load_folder(state, rel_dir, fd, stack)
        finally:
            for _, fd in stack:
                os.close(fd)
        return state

    def _load_folder(self, state: FilesState, rel_dir: str, fd: int, stack: list) -> None:
        try:
            with os.scandir(fd) as it:
                items = sorted(it, key=lambda d: d.name)
        except OSError as e:
            raise os_error("read", self.root / rel_dir, e) from None
        for item in items:
            rel = f"{rel_dir}/{item.name}" if rel_dir else item.name
            if len(state.entries) >= MAX_ENTRIES:
                raise StoreError(
                    f"{self.root} holds more than {MAX_ENTRIES} entries; point the workspace at a "
                    "smaller folder"
                )
            try:
                st = os.stat(item.name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed while we listed it
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(item.name, dir_fd=fd)
                except OSError:
                    continue  # replaced while we looked
                try:
                    escapes = not self._inside(os.path.realpath(self.root / rel))
                except OSError:  # the path changed while it was resolved: assume the worst
                    escapes = True
                state.entries[rel] = Entry(kind="link", target=target, escapes=escapes, source=rel)
            elif stat.S_ISDIR(st.st_mode):
                try:
                    child = os.open(item.name, NOFOLLOW_DIR, dir_fd=fd)
                except OSError:
                    continue  # swapped for something else, or unreadable: not listed
                state.entries[rel] = Entry(kind="dir", source=rel)
                stack.append((rel, child))
            elif stat.S_ISREG(st.st_mode):
                state.entries[rel] = self._file_entry(fd, item.name, st, rel)
            # sockets, fifos, devices: not the user's documents; not shown, never touched

    @staticmethod
    def _file_entry(fd: int, name: str, st: os.stat_result, rel: str) -> Entry:
        content = None
        if st.st_size <= MAX_TEXT:
            try:  # O_NONBLOCK: a FIFO swapped in after the stat cannot hang the load
                with _closing(os.open(name, READ_FLAGS, dir_fd=fd)) as f:
                    if stat.S_ISREG(os.fstat(f).st_mode):
                        data = os.read(f, MAX_TEXT + 1)
                        content = data.decode("utf-8") if b"\x00" not in data else None
            except (UnicodeDecodeError, OSError):
                content = None
        return Entry(kind="file", content=content, size=st.st_size, source=rel)

    # ---- save --------------------------------------------------------------------------------
    def _parent(self, root_fd: int, rel: str) -> tuple[int, str]:
        """(descriptor of `rel`'s folder, its last name): each folder opened without following links.

        The caller closes the descriptor.
        """
        parts = rel.split("/")
        if not rel or any(p in ("", ".", "..") for p in parts):
            raise StoreError(f"refused path {rel!r}")
        fd = os.dup(root_fd)
        try:
            for i, part in enumerate(parts[:-1]):
                try:
                    child = os.open(part, NOFOLLOW_DIR, dir_fd=fd)
                except OSError as e:
                    if e.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                        raise
                    st = lstat_at(fd, part)
                    prefix = "/".join(parts[: i + 1])
                    if st is not None and stat.S_ISLNK(st.st_mode):
                        raise StoreError(
                            f"refused: {rel!r} goes through a link ({prefix}); nothing was written there"
                        ) from None
                    what = kind_of(st.st_mode) if st is not None else "gone"
                    raise StoreError(
                        f"refused: {prefix!r} is no longer a folder ({what}); nothing was written there"
                    ) from None
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd, parts[-1]

    def _save(self, before: FilesState, after: FilesState) -> None:
        try:
            if not os.path.lexists(self.root):
                self.root.mkdir(parents=True)
            root_fd = self._open_root()
            if root_fd is None:
                raise StoreError(f"{self.root} disappeared while saving; nothing more was changed")
            with _closing(root_fd):
                self._apply(root_fd, before, after)
        except ReplaceError as e:
            raise os_error(e.action, e.where, e) from None
        except OSError as e:
            raise os_error("update files in", self.root, e) from None

    def _apply(self, root_fd: int, before: FilesState, after: FilesState) -> None:
        old = before.entries
        sources = {e.source for e in after.entries.values() if e.source is not None}
        depth = lambda p: p.count("/")  # noqa: E731
        new_dirs = (p for p, e in after.entries.items() if e.kind == "dir" and e.source is None)
        for path in sorted(new_dirs, key=depth):
            pfd, name = self._parent(root_fd, path)
            with _closing(pfd):
                st = lstat_at(pfd, name)
                if st is None:
                    check_folder(pfd, self.root / path)
                    os.mkdir(name, dir_fd=pfd)
                elif not stat.S_ISDIR(st.st_mode):
                    raise StoreError(
                        f"cannot make folder {path}: it exists on disk as {kind_of(st.st_mode)}; "
                        "nothing was replaced"
                    )
        moved_dirs: list[tuple[str, str]] = []
        moves = sorted(
            ((e.source, p) for p, e in after.entries.items() if e.source and e.source != p),
            key=lambda m: depth(m[0]),
        )
        for src, dst in moves:
            if any(src.startswith(s + "/") and dst == d + src[len(s) :] for s, d in moved_dirs):
                continue  # carried along by its folder's rename
            self._move(root_fd, src, dst)
            if old.get(src) is not None and old[src].kind == "dir":
                moved_dirs.append((src, dst))
        for path, e in after.entries.items():
            if e.kind != "file" or e.content is None:
                continue
            prev = old.get(e.source) if e.source else None
            if prev is None or prev.content != e.content:
                data = e.content.encode("utf-8")
                pfd, name = self._parent(root_fd, path)
                with _closing(pfd):
                    write_at(
                        pfd,
                        name,
                        lambda f, data=data: f.write(data),
                        where=self.root / path,
                        replace=prev is not None,
                    )
        gone = (p for p in old if p not in sources and p not in after.entries)
        for path in sorted(gone, key=depth, reverse=True):
            self._delete(root_fd, path, old[path].kind)

    def _move(self, root_fd: int, src: str, dst: str) -> None:
        sfd, sname = self._parent(root_fd, src)
        with _closing(sfd):
            dfd, dname = self._parent(root_fd, dst)
            with _closing(dfd):
                check_folder(sfd, self.root / src)
                check_folder(dfd, self.root / dst)
                try:
                    rename_noreplace(sfd, sname, dfd, dname)
                except FileExistsError:
                    raise StoreError(
                        f"cannot move {src} to {dst}: {dst} appeared on disk meanwhile; nothing moved"
                    ) from None

    def _delete(self, root_fd: int, path: str, kind: str) -> None:
        pfd, name = self._parent(root_fd, path)
        with _closing(pfd):
            st = lstat_at(pfd, name)
            if st is None:
                return  # already gone
            now = "link" if stat.S_ISLNK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else "file"
            if now != kind or (kind == "file" and not stat.S_ISREG(st.st_mode)):
                raise StoreError(
                    f"cannot delete {path}: it is now {kind_of(st.st_mode)}, not the {kind} that was "
                    "listed; nothing was deleted"
                )
            check_folder(pfd, self.root / path)
            if kind == "file":
                reason = read_only_reason(st, name, pfd)
                if reason is not None:
                    raise StoreError(
                        f"cannot delete {self.root / path}: {reason}; make it writable (chmod u+w) if "
                        "botpsy may delete it; nothing was deleted"
                    )
            if kind == "dir":
                os.rmdir(name, dir_fd=pfd)
            else:
                os.unlink(name, dir_fd=pfd)

    # ---- the interface -----------------------------------------------------------------------
    @contextmanager
    def transaction(self, write: bool = False) -> Iterator[FilesState]:
        if not write:
            yield self._load()
            return
        if not self.root.parent.exists():
            try:
                self.root.parent.mkdir(parents=True)
            except OSError as e:
                raise os_error("create", self.root.parent, e) from None
        with file_lock(self.lock_path, self.root, self.timeout):
            state = self._load()
            before = state.model_copy(deep=True)
            yield state
            if state.canonical() != before.canonical() or any(
                e.source != p for p, e in state.entries.items()
            ):
                self._save(before, state)

    def replace(self, state: FilesState) -> None:
        """Write a whole tree (seeding a workspace) into the folder, keeping what is not in it."""
        with self.transaction(write=True) as current:
            for path, e in sorted(state.entries.items()):
                known = current.entries.get(path)
                if known is not None and known.kind == e.kind:
                    known.content, known.size = e.content, e.size
                else:
                    current.entries[path] = Entry(kind=e.kind, content=e.content, size=e.size)
