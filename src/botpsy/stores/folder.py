"""The files suite's real store: one sandbox folder on disk.

Load walks the folder without following links. A symbolic link becomes a `link` entry (flagged
`escapes` when its real target is outside the sandbox), so the tools can refuse to go through it.
Text files up to `MAX_TEXT` bytes are loaded with their content; other files with their size.

Save applies the difference between the loaded and the new state: create folders, rename moved
entries (a rename, so large or binary files move without being read), write new or changed text
files atomically (temporary file in the same folder, fsync, `os.replace`), then delete what is
gone. Before every write the *real* path is checked again: no component may be a link and the
parent must resolve inside the sandbox — a link planted between load and save is refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from botpsy.stores.common import StoreError, atomic_write, file_lock, os_error
from botpsy.tools.files import MAX_TEXT, Entry, FilesState

MAX_ENTRIES = 20_000


class FolderStore:
    def __init__(self, root: Path | str, timeout: float = 10.0):
        self.root = Path(root)
        self.timeout = timeout
        self.lock_path = self.root.with_name(self.root.name + ".lock")

    def _real_root(self) -> str:
        return os.path.realpath(self.root)

    def _inside(self, real: str) -> bool:
        root = self._real_root()
        return real == root or real.startswith(root + os.sep)

    # ---- load --------------------------------------------------------------------------------
    def _load(self) -> FilesState:
        state = FilesState()
        if not self.root.exists():
            return state
        if not self.root.is_dir() or self.root.is_symlink():
            raise StoreError(
                f"{self.root} is not a folder (or is a link); the files suite needs a real folder"
            )
        stack = [""]
        while stack:
            rel_dir = stack.pop()
            full_dir = self.root / rel_dir if rel_dir else self.root
            try:
                items = sorted(os.scandir(full_dir), key=lambda d: d.name)
            except OSError as e:
                raise os_error("read", full_dir, e) from None
            for item in items:
                rel = f"{rel_dir}/{item.name}" if rel_dir else item.name
                if len(state.entries) >= MAX_ENTRIES:
                    raise StoreError(
                        f"{self.root} holds more than {MAX_ENTRIES} entries; point the workspace at a "
                        "smaller folder"
                    )
                if item.is_symlink():
                    target = os.readlink(item.path)
                    real = os.path.realpath(item.path)
                    state.entries[rel] = Entry(
                        kind="link", target=target, escapes=not self._inside(real), source=rel
                    )
                elif item.is_dir(follow_symlinks=False):
                    state.entries[rel] = Entry(kind="dir", source=rel)
                    stack.append(rel)
                elif item.is_file(follow_symlinks=False):
                    size = item.stat(follow_symlinks=False).st_size
                    content = None
                    if size <= MAX_TEXT:
                        try:
                            with open(item.path, "rb") as f:
                                data = f.read(MAX_TEXT + 1)
                            content = data.decode("utf-8") if b"\x00" not in data else None
                        except (UnicodeDecodeError, OSError):
                            content = None
                    state.entries[rel] = Entry(kind="file", content=content, size=size, source=rel)
                # sockets, fifos, devices: not the user's documents; not shown, never touched
        return state

    # ---- save --------------------------------------------------------------------------------
    def _checked(self, rel: str, final_may_be_link: bool = False) -> Path:
        """The on-disk path for `rel`, after re-checking the real file system for links."""
        parts = rel.split("/")
        if not rel or any(p in ("", ".", "..") for p in parts):
            raise StoreError(f"refused path {rel!r}")
        current = self.root
        for i, part in enumerate(parts):
            current = current / part
            last = i == len(parts) - 1
            if current.is_symlink() and not (last and final_may_be_link):
                raise StoreError(
                    f"refused: {rel!r} goes through a link ({current}); nothing was written there"
                )
        parent_real = os.path.realpath(current.parent)
        if not self._inside(parent_real):
            raise StoreError(f"refused: {rel!r} leads outside {self.root}; nothing was written there")
        return current

    def _save(self, before: FilesState, after: FilesState) -> None:
        old = before.entries
        sources = {e.source for e in after.entries.values() if e.source is not None}
        depth = lambda p: p.count("/")  # noqa: E731
        try:
            if not self.root.exists():
                self.root.mkdir(parents=True)
            for path in sorted(
                (p for p, e in after.entries.items() if e.kind == "dir" and e.source is None), key=depth
            ):
                target = self._checked(path)
                if not target.is_dir():
                    target.mkdir()
            moved_dirs: list[tuple[str, str]] = []
            moves = sorted(
                ((e.source, p) for p, e in after.entries.items() if e.source and e.source != p),
                key=lambda m: depth(m[0]),
            )
            for src, dst in moves:
                if any(src.startswith(s + "/") and dst == d + src[len(s) :] for s, d in moved_dirs):
                    continue  # carried along by its folder's rename
                frm, to = self._checked(src, final_may_be_link=True), self._checked(dst)
                if to.exists() or to.is_symlink():
                    raise StoreError(
                        f"cannot move {src} to {dst}: {dst} appeared on disk meanwhile; nothing moved"
                    )
                os.rename(frm, to)
                if old.get(src) is not None and old[src].kind == "dir":
                    moved_dirs.append((src, dst))
            for path, e in after.entries.items():
                if e.kind != "file" or e.content is None:
                    continue
                prev = old.get(e.source) if e.source else None
                if prev is None or prev.content != e.content:
                    target = self._checked(path)
                    if target.is_symlink():
                        raise StoreError(f"refused: {path!r} is a link; nothing was written")
                    atomic_write(target, e.content.encode("utf-8"))
            gone = (p for p in old if p not in sources and p not in after.entries)
            for path in sorted(gone, key=depth, reverse=True):
                target = self._checked(path, final_may_be_link=True)
                if old[path].kind == "dir" and not target.is_symlink():
                    target.rmdir()
                else:
                    target.unlink(missing_ok=True)
        except OSError as e:
            raise os_error("update files in", self.root, e) from None

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
