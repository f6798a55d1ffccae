"""Files suite: list, read, search, write, move and delete files inside one sandboxed folder.

Every path the model gives is relative to the sandbox root and is checked here before anything
else: absolute paths, drive letters, `..` components, NUL bytes and backslashes are refused, and
so is any path that goes through a symbolic link (the store records links as entries; a link
whose target leaves the root is flagged `escapes`). The store checks again at write time with the
real file system, so a link created between load and save still cannot lead a write outside.

The state holds text files up to `MAX_TEXT` bytes with their content; larger or binary files are
listed with their size and can be moved or deleted but not read.
"""

from __future__ import annotations

import posixpath
import re
from typing import Literal

from pydantic import BaseModel, Field

from botpsy.tools.base import ToolError, suite, tool
from botpsy.tools.common import clip, query_arg

MAX_TEXT = 256 * 1024


class Entry(BaseModel):
    kind: Literal["file", "dir", "link"]
    content: str | None = None  # text files only
    size: int = 0
    target: str = ""  # links: where they point (as written in the link)
    escapes: bool = False  # links: the target resolves outside the sandbox
    source: str | None = None  # store bookkeeping: the on-disk path this entry was loaded from


class FilesState(BaseModel):
    entries: dict[str, Entry] = Field(default_factory=dict)  # relative posix path -> entry

    def canonical(self) -> dict:
        return {p: e.model_dump(exclude={"source"}) for p, e in sorted(self.entries.items())}

    def children(self, folder: str) -> list[str]:
        prefix = "" if folder == "" else folder + "/"
        return sorted(
            p for p in self.entries if p.startswith(prefix) and "/" not in p[len(prefix) :] and p != folder
        )

    def resolve(self, path: str, field: str = "path", allow_link: bool = False) -> str:
        """Validate a model-supplied path; return its normalised relative form ('' is the root).

        `allow_link` lets the last component be a link itself (deleting or renaming the link
        never touches its target); going *through* a link is always refused.
        """
        raw = str(path)
        if "\x00" in raw:
            raise ToolError(f"{field}: NUL bytes are not allowed in paths")
        text = raw.strip()
        if "\\" in text:
            raise ToolError(f"{field}: use '/' between folders, got {raw!r}")
        if text.startswith(("/", "~")) or re.match(r"^[A-Za-z]:", text):
            raise ToolError(f"{field}: {raw!r} is an absolute path; paths are relative to your files folder")
        parts = [p for p in text.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise ToolError(f"{field}: {raw!r} leaves your files folder ('..' is not allowed)")
        rel = "/".join(parts)
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            entry = self.entries.get(prefix)
            if entry is not None and entry.kind == "link" and not (allow_link and i == len(parts)):
                where = "outside your files folder" if entry.escapes else "elsewhere"
                raise ToolError(f"{field}: {prefix!r} is a link leading {where}; links are not followed")
            if entry is not None and entry.kind == "file" and i < len(parts):
                raise ToolError(f"{field}: {prefix!r} is a file, not a folder")
        return rel

    def require_folder(self, rel: str, field: str) -> None:
        if rel and (rel not in self.entries or self.entries[rel].kind != "dir"):
            raise ToolError(f"{field}: no folder {rel!r}; create it with make_folder")


def _describe(state: FilesState, path: str) -> dict:
    e = state.entries[path]
    d: dict = {"path": path, "type": e.kind}
    if e.kind == "file":
        d["size"] = e.size
    if e.kind == "link":
        d["target"] = e.target
    return d


@tool()
def list_files(state: FilesState, folder: str = ".") -> dict:
    """List a folder.

    Args:
        folder: folder path (default: the top folder)
    """
    rel = state.resolve(folder, "folder")
    state.require_folder(rel, "folder")
    return {"folder": rel or ".", "entries": [_describe(state, p) for p in state.children(rel)]}


@tool()
def read_file(state: FilesState, path: str) -> dict:
    """Read a text file.

    Args:
        path: file path
    """
    rel = state.resolve(path)
    e = state.entries.get(rel)
    if e is None:
        raise ToolError(f"path: no file {rel!r}; use list_files or search_files")
    if e.kind == "dir":
        raise ToolError(f"path: {rel!r} is a folder; use list_files")
    if e.content is None:
        raise ToolError(
            f"path: {rel!r} is binary or larger than {MAX_TEXT} bytes ({e.size} bytes); cannot show it"
        )
    return {"path": rel, "text": e.content}


@tool()
def search_files(state: FilesState, query: str) -> dict:
    """Find files whose name or text contains words.

    Args:
        query: words to look for
    """
    words = query_arg(query).casefold().split()
    hits = []
    for p, e in sorted(state.entries.items()):
        if e.kind != "file":
            continue
        hay = (p + " " + (e.content or "")).casefold()
        if all(w in hay for w in words):
            line = next((ln for ln in (e.content or "").splitlines() if words[0] in ln.casefold()), "")
            hits.append({"path": p, **({"line": clip(line.strip(), 100)} if line else {})})
    return {"files": hits[:20]}


@tool(mutates=True)
def write_file(state: FilesState, path: str, text: str, overwrite: bool = False) -> dict:
    """Write a text file.

    Args:
        path: file path
        text: content
        overwrite: replace an existing file
    """
    rel = state.resolve(path)
    if not rel:
        raise ToolError("path: give a file name")
    parent = posixpath.dirname(rel)
    state.require_folder(parent, "path")
    size = len(text.encode("utf-8"))
    if size > MAX_TEXT:
        raise ToolError(f"text: at most {MAX_TEXT} bytes, got {size}")
    old = state.entries.get(rel)
    if old is not None:
        if old.kind != "file":
            raise ToolError(f"path: {rel!r} is a {old.kind}, not a file")
        if not overwrite:
            raise ToolError(f"path: {rel!r} exists; set overwrite to true to replace it")
        old.content, old.size = text, size
        return {"written": rel, "size": size, "replaced": True}
    state.entries[rel] = Entry(kind="file", content=text, size=size)
    return {"written": rel, "size": size}


@tool(mutates=True)
def make_folder(state: FilesState, path: str) -> dict:
    """Create a folder (and missing parents).

    Args:
        path: folder path
    """
    rel = state.resolve(path)
    if not rel:
        raise ToolError("path: give a folder name")
    if rel in state.entries:
        raise ToolError(f"path: {rel!r} already exists")
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        state.entries.setdefault("/".join(parts[:i]), Entry(kind="dir"))
    return {"created": rel}


@tool(mutates=True)
def move_file(state: FilesState, path: str, new_path: str) -> dict:
    """Move or rename a file or folder.

    Args:
        path: current path
        new_path: new path
    """
    src, dst = state.resolve(path, allow_link=True), state.resolve(new_path, "new_path")
    if not src or src not in state.entries:
        raise ToolError(f"path: no file or folder {src!r}")
    if not dst:
        raise ToolError("new_path: give a name")
    if dst in state.entries:
        raise ToolError(f"new_path: {dst!r} already exists")
    if dst.startswith(src + "/"):
        raise ToolError("new_path: cannot move a folder into itself")
    state.require_folder(posixpath.dirname(dst), "new_path")
    moved = {p: e for p, e in state.entries.items() if p == src or p.startswith(src + "/")}
    for p in moved:
        del state.entries[p]
    for p, e in moved.items():
        state.entries[dst + p[len(src) :]] = e
    return {"moved": src, "to": dst}


@tool(mutates=True, sensitive=True)
def delete_file(state: FilesState, path: str) -> dict:
    """Delete a file or an empty folder.

    Args:
        path: file or folder path
    """
    rel = state.resolve(path, allow_link=True)
    if not rel or rel not in state.entries:
        raise ToolError(f"path: no file or folder {rel!r}")
    if state.entries[rel].kind == "dir" and state.children(rel):
        raise ToolError(f"path: folder {rel!r} is not empty")
    del state.entries[rel]
    return {"deleted": rel}


TOOLS = suite("files", [list_files, read_file, search_files, write_file, make_folder, move_file, delete_file])
