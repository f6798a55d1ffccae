"""Tool retrieval: with many tools installed, only the top-k relevant ones enter the prompt.

Every tool schema costs prompt tokens on every conversation (about 60-120 each; all 14 suites
are ~100 tools), and on a CPU prefill is most of the time to first token. A small model also
picks the wrong tool more often from a long list. So when more tools are installed than
`AgentConfig.tool_top_k`, the agent ranks them against the user's first request and shows the
top k.

Scorer: Okapi BM25 (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and
Beyond", 2009; k1 = 1.2, b = 0.75, Lucene's non-negative IDF) over one document per tool: its
name (counted twice: names are the most specific words), its suite, its description and its
parameters' names and descriptions. Words are case-folded, snake_case split, stop words dropped
and suffixes stripped by a few rules (`stem`) so that "emails" / "email" and "booked" / "book"
meet; a short table (`SYNONYMS`) maps everyday request words to the tools' vocabulary
("appointment" → event, "mail" → email, a month name → date, calendar), the gap a lexical scorer cannot close by itself.

Why no library: the corpus is a hundred short documents scored once per conversation, which
plain Python does in well under a millisecond; the project has no retrieval dependency (no
rank-bm25, no scikit-learn in the runtime) and an embedding model would mean torch or a second
model file on the device, for tool texts that are nearly keyword lists anyway.

Ties keep the installed order (a stable sort), and a request that matches nothing (or is empty)
gets the first k tools in installed order. The selected tools are returned in installed order,
so suites stay grouped in the prompt.

Prefix caching: the tools live in the system block, the first block of the token history. The
agent therefore ranks once for the system block, at the first user message, and keeps that block
for the later turns, which then still extend the cached prefix; re-rendering it per turn would
force a full re-prefill on every turn. A later request that needs tools outside the set gets
them appended to its own user turn instead (`more_tools`: the few best-ranked ones not yet
shown, `ChatFormat.more_tools`), so the history stays append-only and the suite a later request
needs is still shown. Retrieval only narrows what the prompt shows: every installed tool stays
callable, under the same confirmation policy.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from botpsy.tools.base import Tool

BM25_K1 = 1.2  # term-frequency saturation (Robertson & Zaragoza 2009, the usual 1.2)
BM25_B = 0.75  # document-length normalisation
NAME_WEIGHT = 2  # how many times a tool's name words count in its document

STOP_WORDS = frozenset(
    """a an and are as at be by can could do does for from get give go have how i if in into is it
    its me my of on or our please should so some than that the their them then there this to up us
    want we what when where which who will with would you your""".split()
)

# Request words → words the tool texts use. Keys and values are stemmed before use.
SYNONYMS: dict[str, str] = {
    "mail": "email",
    "inbox": "email",
    "appointment": "event calendar",
    "meeting": "event calendar",
    "schedule": "event calendar",
    "agenda": "event calendar",
    "busy": "event calendar free",
    "add": "create",
    "new": "create",
    "remove": "delete",
    "erase": "delete",
    "remind": "reminder",
    "text": "message",
    "sms": "message",
    "chat": "message",
    "buy": "order cart product",
    "purchase": "order cart product",
    "car": "vehicle",
    "drive": "navigate vehicle",
    "flight": "flight travel",
    "trip": "travel booking",
    "pay": "payment bill",
    "money": "transfer account",
    "google": "web search",
    "look": "find search",
    "move": "update change",
    "reschedule": "update change event calendar",
    "postpone": "update change event calendar",
}
# Dates in a request ("on December 3", "tomorrow") point at the calendar, not at a tool's words.
TIME_WORDS = """today tomorrow tonight yesterday monday tuesday wednesday thursday friday saturday sunday
january february march april may june july august september october november december""".split()
SYNONYMS.update({w: "date calendar" for w in TIME_WORDS})


def stem(word: str) -> str:
    """A few suffix rules, enough to make plural, past and -ing forms meet; not a real stemmer."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    elif len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
    elif len(word) > 4 and word.endswith("ed"):
        word = word[:-2]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def words(text: str) -> list[str]:
    """Case-folded, snake_case-split, stemmed words of a text, without stop words and numbers
    (numbers in a request are values — a date, an amount — not words a tool is described by)."""
    raw = re.findall(r"[a-z0-9]+", text.casefold().replace("_", " "))
    return [stem(w) for w in raw if w not in STOP_WORDS and not w[0].isdigit()]


_SYNONYMS = {stem(k): words(v) for k, v in SYNONYMS.items()}


def query_terms(query: str) -> list[str]:
    """The distinct terms of a request, with its synonyms added."""
    terms: list[str] = []
    for w in words(query):
        for t in [w, *_SYNONYMS.get(w, [])]:
            if t not in terms:
                terms.append(t)
    return terms


def tool_document(t: Tool) -> list[str]:
    """The words a tool is found by: name (weighted), suite, description, parameters."""
    props = t.parameters.get("properties") if isinstance(t.parameters, dict) else None
    parts = [t.name] * NAME_WEIGHT + [t.suite, str(t.description)]
    for name, schema in props.items() if isinstance(props, dict) else ():
        parts += [str(name), str(schema.get("description", "")) if isinstance(schema, dict) else ""]
    return words(" ".join(parts))


class BM25:
    """Okapi BM25 over a fixed list of documents (each a list of words)."""

    def __init__(self, documents: Sequence[list[str]], k1: float = BM25_K1, b: float = BM25_B):
        self.k1, self.b = k1, b
        self.tf = [Counter(d) for d in documents]
        self.lengths = [len(d) for d in documents]
        self.avg_length = sum(self.lengths) / len(documents) if documents else 0.0
        df = Counter(w for d in self.tf for w in d)
        n = len(documents)
        self.idf = {w: math.log(1 + (n - k + 0.5) / (k + 0.5)) for w, k in df.items()}

    def scores(self, terms: list[str]) -> list[float]:
        out = []
        for tf, length in zip(self.tf, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / (self.avg_length or 1.0))
            out.append(sum(self.idf[w] * tf[w] * (self.k1 + 1) / (tf[w] + norm) for w in terms if w in tf))
        return out


def rank_tools(query: str, tools: Sequence[Tool]) -> list[tuple[Tool, float]]:
    """Every tool with its BM25 score for the request, best first (ties in installed order)."""
    scores = BM25([tool_document(t) for t in tools]).scores(query_terms(query))
    order = sorted(range(len(tools)), key=lambda i: -scores[i])  # stable: ties keep their order
    return [(tools[i], scores[i]) for i in order]


def tool_prior(query: str, tools: Sequence[Tool]) -> dict[str, float]:
    """Each tool's BM25 score for the request over the best tool's (1.0 for the best), for the
    copy guide's choice between tools the model's reasoning names (`CopyGuide._steer_tool_name`);
    {} when the request matches none."""
    ranked = rank_tools(query, tools)
    best = ranked[0][1] if ranked else 0.0
    return {t.name: score / best for t, score in ranked} if best > 0 else {}


def select_tools(query: str, tools: Sequence[Tool], k: int) -> list[Tool]:
    """The k tools most relevant to the request, in installed order (all of them when k <= 0 or
    k >= their number)."""
    tools = list(tools)
    if k <= 0 or k >= len(tools):
        return tools
    keep = {id(t) for t, _ in rank_tools(query, tools)[:k]}
    return [t for t in tools if id(t) in keep]


MORE_TOOLS_CAP = 4  # tools a later turn may add: enough for one suite's core, a bounded prefill


def more_tools(
    query: str, tools: Sequence[Tool], shown: set[str], k: int, cap: int = MORE_TOOLS_CAP
) -> list[Tool]:
    """For a later request: its top-k tools that match it at all and are not shown yet (at most `cap`)."""
    ranked = [t for t, score in rank_tools(query, tools)[:k] if score > 0 and t.name not in shown][:cap]
    keep = {id(t) for t in ranked}
    return [t for t in tools if id(t) in keep]
