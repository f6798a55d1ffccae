"""Money in an answer, checked against the tool results it reports (issue 36, item 12).

An MCP tool that returned an amount in USD was reported in EUR in 4 of 4 answers: a small model
fills in the currency it saw most in training. Code knows better: the tool result says which
currency goes with which amount. `check_money` finds each amount with a currency in the answer
(``$12.50``, ``12.50 EUR``, ``€12``, ``12 euros``) and in the tool results (the same forms in
text, and a JSON object's numbers paired with its ``currency`` field), then

* **corrects the currency** where the results give this amount in exactly one currency and the
  answer names another — in the answer's own style (symbol, code or word);
* **flags an amount** that no tool result or user message states, even after one step of
  arithmetic on two stated numbers (`grounding.known_numbers`): the answer reports money nothing
  backs. The agent records it; the CLI warns.

Amounts without a currency are not checked: "3 events" is not money.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

from botpsy.agent.grounding import _key, known_numbers
from botpsy.protocol.messages import Message

SYMBOLS = {
    "$": "USD",
    "US$": "USD",
    "€": "EUR",
    "£": "GBP",
    "¥": "JPY",
    "₹": "INR",
    "CA$": "CAD",
    "A$": "AUD",
}
CODES = (
    "USD",
    "EUR",
    "GBP",
    "JPY",
    "CHF",
    "CAD",
    "AUD",
    "INR",
    "CNY",
    "SEK",
    "NOK",
    "DKK",
    "PLN",
    "MXN",
    "BRL",
)
WORDS = {"dollar": "USD", "euro": "EUR", "pound": "GBP", "yen": "JPY", "franc": "CHF", "rupee": "INR"}
_SYMBOL_OF = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "INR": "₹"}
_WORD_OF = {v: k for k, v in WORDS.items()}

_AMOUNT = r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
_NUMERIC = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_SYM = "|".join(re.escape(s) for s in sorted(SYMBOLS, key=len, reverse=True))
_CODE = "|".join(CODES)
_WORD = "|".join(WORDS)
_MONEY = re.compile(
    rf"(?P<sym>{_SYM})\s?{_AMOUNT}"
    rf"|\b(?P<code1>{_CODE})\s?{_AMOUNT.replace('(', '(?P<a2>', 1)}"
    rf"|{_AMOUNT.replace('(', '(?P<a3>', 1)}\s?(?:(?P<code2>{_CODE})\b|(?P<word>(?:{_WORD})s?)\b)",
)


@dataclass(frozen=True)
class Money:
    start: int
    end: int
    amount: float
    currency: str
    style: str  # "symbol", "code" or "word": how the text wrote the currency
    cur_span: tuple[int, int]  # where the currency itself is written


def money_in(text: str) -> list[Money]:
    """Every amount with a currency in `text`."""
    out = []
    for m in _MONEY.finditer(text):
        if m.group("sym"):
            amount, cur, style, span = m.group(2), SYMBOLS[m.group("sym")], "symbol", m.span("sym")
        elif m.group("code1"):
            amount, cur, style, span = m.group("a2"), m.group("code1"), "code", m.span("code1")
        else:
            amount = m.group("a3")
            if m.group("code2"):
                cur, style, span = m.group("code2"), "code", m.span("code2")
            else:
                cur, style, span = WORDS[m.group("word").lower().removesuffix("s")], "word", m.span("word")
        out.append(Money(m.start(), m.end(), float(amount.replace(",", "")), cur, style, span))
    return out


def _json_money(value, currency: str | None = None) -> Iterable[tuple[float, str]]:
    """(amount, currency) for the numbers of JSON objects that name their currency (inherited inward)."""
    if isinstance(value, dict):
        cur = value.get("currency")
        cur = cur.upper() if isinstance(cur, str) and cur.upper() in CODES else currency
        for k, v in value.items():
            if isinstance(v, int | float) and not isinstance(v, bool) and cur and k != "currency":
                yield float(v), cur
            elif isinstance(v, str) and cur and _NUMERIC.fullmatch(v.strip()):  # Decimal as text
                yield float(v.strip().replace(",", "")), cur
            else:
                yield from _json_money(v, cur)
    elif isinstance(value, list):
        for v in value:
            yield from _json_money(v, currency)


def result_money(results: Iterable[str]) -> dict[float, set[str]]:
    """Amount key -> the currencies the tool results give it in."""
    out: dict[float, set[str]] = {}
    for text in results:
        pairs = [(m.amount, m.currency) for m in money_in(text)]
        try:
            pairs += list(_json_money(json.loads(text)))
        except (ValueError, RecursionError):
            pass
        for amount, cur in pairs:
            out.setdefault(_key(amount), set()).add(cur)
    return out


def _written(cur: str, style: str, plural: bool) -> str:
    """`cur` written in the answer's style; a code where the style has no form for it."""
    if style == "symbol":
        return _SYMBOL_OF.get(cur, cur + " ")
    word = _WORD_OF.get(cur)
    if style == "word" and word:
        return word + ("s" if plural and word != "yen" else "")
    return cur


@dataclass
class MoneyCheck:
    answer: str  # the answer with wrong currencies corrected
    corrected: list[str]  # "12.50 EUR -> USD"
    unbacked: list[str]  # amounts as written that nothing in the conversation states


def check_money(answer: str, messages: list[Message], sources: Iterable[str] = ()) -> MoneyCheck:
    """Check the money in `answer` against the conversation's tool results (`sources`: their texts)."""
    results = list(sources)
    said = result_money(results)
    known = known_numbers(messages)
    out, last, corrected, unbacked = [], 0, [], []
    for m in money_in(answer):
        given = said.get(_key(m.amount), set())
        if given and m.currency not in given and len(given) == 1:
            right = next(iter(given))
            s, e = m.cur_span
            text = answer[s:e]
            new = _written(right, m.style, m.amount != 1)
            out.append(answer[last:s] + new)
            last = e
            corrected.append(f"{m.amount:g} {m.currency} -> {right} ({text!r} -> {new.strip()!r})")
        elif not given and _key(m.amount) not in known and results:
            unbacked.append(answer[m.start : m.end])
    out.append(answer[last:])
    return MoneyCheck("".join(out), corrected, unbacked)
