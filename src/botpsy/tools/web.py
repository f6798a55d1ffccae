"""Web search suite over a local document corpus, ranked by SQLite FTS5 (bm25); nothing leaves the device.

The state is the list of pages. Searching builds (once per distinct corpus, cached) an in-memory
FTS5 index of them, so a world and the workspace rank identically, and the tools still never
touch disk. The user's query is reduced to plain word tokens before it reaches FTS5: its query
language (quotes, NEAR, column filters, `-`) is not for the model to drive, and a stray quote
must not become a syntax error. Page text is written by strangers: it is data, not instructions.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections import OrderedDict

from pydantic import BaseModel, Field

from botpsy.tools.base import ToolError, suite, tool
from botpsy.tools.common import int_range

MAX_PAGE_CHARS = 4000
_INDEX_CACHE: OrderedDict[str, sqlite3.Connection] = OrderedDict()


class Page(BaseModel):
    url: str
    title: str
    body: str


class WebState(BaseModel):
    pages: list[Page] = Field(default_factory=list)

    def canonical(self) -> list[dict]:
        return sorted((p.model_dump() for p in self.pages), key=lambda p: p["url"])

    def index(self) -> sqlite3.Connection:
        key = hashlib.sha256(
            "\x00".join(f"{p.url}\x01{p.title}\x01{p.body}" for p in self.pages).encode()
        ).hexdigest()
        if key in _INDEX_CACHE:
            _INDEX_CACHE.move_to_end(key)
            return _INDEX_CACHE[key]
        db = sqlite3.connect(":memory:", check_same_thread=False)
        db.execute(
            "CREATE VIRTUAL TABLE pages USING fts5(url UNINDEXED, title, body, tokenize='porter unicode61')"
        )
        db.executemany(
            "INSERT INTO pages(url, title, body) VALUES (?, ?, ?)",
            [(p.url, p.title, p.body) for p in self.pages],
        )
        _INDEX_CACHE[key] = db
        while len(_INDEX_CACHE) > 8:
            _INDEX_CACHE.popitem(last=False)[1].close()
        return db


def fts_query(text: str) -> str:
    """Plain words, each quoted, OR-ed: recall first, bm25 orders by how many and how rare."""
    words = re.findall(r"\w+", text.casefold())
    return " OR ".join(f'"{w}"' for w in words[:12])


@tool()
def search_web(state: WebState, query: str, limit: int = 5) -> dict:
    """Search the web; returns titles, urls and snippets.

    Args:
        query: search words
        limit: how many results (default 5)
    """
    int_range(limit, "limit", 1, 10)
    match = fts_query(query)
    if not match:
        raise ToolError("query: give at least one word to search for")
    rows = (
        state.index()
        .execute(
            "SELECT url, title, snippet(pages, 2, '', '', '…', 24) FROM pages WHERE pages MATCH ? "
            "ORDER BY bm25(pages, 0.0, 4.0, 1.0), rowid LIMIT ?",
            (match, limit),
        )
        .fetchall()
    )
    return {"results": [{"url": u, "title": t, "snippet": s} for u, t, s in rows]}


@tool()
def open_page(state: WebState, url: str) -> dict:
    """Read a page found by search_web.

    Args:
        url: the page's url
    """
    wanted = url.strip().rstrip("/")
    for p in state.pages:
        if p.url.rstrip("/") == wanted:
            body = p.body if len(p.body) <= MAX_PAGE_CHARS else p.body[:MAX_PAGE_CHARS] + "…"
            return {"url": p.url, "title": p.title, "text": body}
    raise ToolError(f"url: {url!r} is not in the local corpus; open a url returned by search_web")


TOOLS = suite("web", [search_web, open_page])
