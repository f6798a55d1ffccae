"""Fill the workspace's local web corpus (the FTS5 table `web_pages`) from a folder of documents.

    from botpsy.stores.corpus import import_folder
    import_folder(Workspace("~/.botpsy/workspace"), "~/Downloads/saved-pages")

Text (`.txt`, `.md`) and HTML (`.html`, `.htm`) files become pages: the url is the file's
`file://` URI, the title is the HTML `<title>` or the first non-empty line, the body is the text
with tags, scripts and styles removed. Re-importing a file replaces its page. Nothing is fetched
from the network: the corpus is whatever the user saved.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from botpsy.stores.workspace import Workspace
from botpsy.tools.web import Page

SUFFIXES = {".txt", ".md", ".html", ".htm"}
MAX_BYTES = 2 * 1024 * 1024


def page_from_file(path: Path) -> Page | None:
    """A page for one document, or None for empty, binary or oversized files."""
    if path.suffix.lower() not in SUFFIXES or path.stat().st_size > MAX_BYTES:
        return None
    raw = path.read_bytes()
    if b"\x00" in raw:
        return None
    text = raw.decode("utf-8", errors="replace")
    title = ""
    if path.suffix.lower() in (".html", ".htm"):
        m = re.search(r"(?is)<title[^>]*>(.*?)</title>", text)
        title = html.unescape(" ".join(m.group(1).split())) if m else ""
        text = re.sub(r"(?is)<(script|style|head)\b.*?</\1>", " ", text)
        text = html.unescape(re.sub(r"<[^>]+>", " ", text))
    body = " ".join(text.split())
    if not body:
        return None
    if not title:
        first = next((ln.strip().lstrip("#").strip() for ln in text.splitlines() if ln.strip()), path.stem)
        title = first[:120]
    return Page(url=path.resolve().as_uri(), title=title, body=body)


def import_folder(workspace: Workspace, folder: Path | str) -> int:
    """Add every document under `folder` to the corpus; returns how many pages were written."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise ValueError(f"{root} is not a folder")
    pages = [
        p
        for f in sorted(root.rglob("*"))
        if f.is_file() and not f.is_symlink()
        for p in [page_from_file(f)]
        if p
    ]
    with workspace.store("web").transaction(write=True) as state:
        fresh = {p.url for p in pages}
        state.pages = [p for p in state.pages if p.url not in fresh] + pages
    return len(pages)
