"""Copy guidance: a tool call's text value that has begun to copy the user's words goes on copying them.

Why: a small model reads a request right and still garbles the words it copies into a call. The
embedded 135M model wrote "LOS LAH" for "Los Angeles" and "Naml" for "Nashville" on BFCL; such
value errors were the largest class of its failures there (12 of 30 in simple_python). The
request holds the right spelling, one token away. Measured (`reports/copy-guide/`): on 150 BFCL
items it corrected the value in the 6 it steered and changed no verdict (those items fail on other
values); on 190 world tasks it steered nothing. Most of the model's wrong values are not garbled
copies, and some garbles are not steered at margin 8 ("Naml" for "Nashville" stays).

What it does, token by token, while the model writes a text value inside a tool call (a string in
the hermes JSON; in the qwen35 format a one-line value, or a string inside an array or object
parameter's JSON):
* the value so far (`open_value`) is looked up in the user's words, ignoring case;
* if it is found, and the model's top token neither ends the value nor continues one of the places
  it was found, the token that continues the user's words there is chosen instead, provided the
  model gives it a logit within `margin` of its top one.

Enum arguments (a top-level argument whose schema lists its allowed text values): when the user's
words name exactly one of the allowed values (a whole word, case aside; a value named only inside
a longer named one does not count: "like new" names "Like New", not "New"), and the model's best
allowed token leaves that value, the token that goes on writing it is chosen instead, within the
same margin. The grammar lets the model pick any allowed value; the embedded model picked "svi"
for "the Ethernet interface" and "active" for "which orders are still pending" by a logit or two.
With none or several named, or a value already departed from, the model chooses; when enum
guidance does not choose, the text-value rule above still applies. Measured
(`reports/enum-values/`): BFCL live_simple 54 → 57 of 258 (3 wins, 0 losses); irrelevance, the
worlds' 190 tasks and 150 other BFCL items unchanged.

Place formats: where the model ends a place value that the user wrote with its qualifiers
("Chennai" of "I'm in Chennai, Tamil Nadu"), and the parameter's description shows a comma-joined
format ("The city and state, e.g. San Francisco, CA"; "in the format 'Street Address, City,
State'"), the value goes on to the qualifiers' end ("Chennai, Tamil Nadu") and stops there. The
embedded model ends such values at the city with confidence (the comma 10–15 logits below its
end), then writes a second call for the state, so this rule overrides its end whatever the
margin, but only toward the user's own words, only as many commas as the format shows, only when
the comma is among its best tokens, and never across a list of peers ("New York, Los Angeles and
Chicago").

Optional arguments the user named (qwen35 calls): where the model would close a call leaving
out an optional enum argument whose allowed values the user's words name exactly one of
("fastest route" and `route_type` one of fastest, scenic), that argument is written with that
value before the call closes; so is an optional boolean flag whose name's words the request says,
unnegated ("details of its litigants" and `include_litigants`: `true`; not "Don't return full
text" for `full_text`). The model leaves out optional arguments it was asked for; BFCL
scores such a call wrong. So is an optional text argument whose description quotes its choices
("'real' for real roots, 'all' for both real and complex", "e.g., 'IPR', 'Patent'") where the
user's words name exactly one of them ("Find all the roots", "patent lawsuits"), written as the
description quotes it; not a choice that names the tool or one of its parameters ("Bot" among a
filter's choices in a call about a bot's `botId`: the request's "my bot" is the call's subject),
nor a value the call already holds. Measured (`reports/places-and-named/`, quoted choices): 8
wins, 0 losses over the 1,488 BFCL items (simple_python 175 → 181 of 400); no world's tool
quotes a choice.

List peers (qwen35 calls): a list of text items whose last item the user's words go on to list
a peer of ("Microsoft" of "Microsoft and Google for 2 weeks"; "John" of "John, Alice and Bob") is
not closed there: a comma, and the peer's first token where the model would open the next item
with another (or the same again); the rest is the model's, copied as above. The model closed such
lists after one item, then often wrote a second call for the second. A comma alone lists nothing
unless an "and" or "or" follows before the sentence ends ("Write to a@b.org, subject Lunch, text:
…" is not a list of recipients); nor does a phrase of another shape (a lowercase word after a
capitalized name) or one naming the tool or a parameter. Measured (`reports/places-and-named/`,
list peers): 3 wins, 0 losses over the 1,488 BFCL items; no world task touched. Not done: a
required list is still closed empty where the model finds no items, for the grounding guard to
ask (filling it: 5 wins, 4 losses where an unfitting call was held only for its empty list).

Separated numbers (qwen35 top-level values): a number the user wrote with thousands separators is
written whole ("$500,000" → 500000; the model stops at the comma and writes 500). Percentages
(qwen35 number values): where the description asks for a decimal fraction ("Enter as a decimal.
E.g, 5% is 0.05"), or the parameter's name makes it a rate ("interest_rate", "annual_yield",
"rate_of_return") and its description is silent on the scale, a percentage the user wrote is
written as one ("5%" → 0.05, not 5.0).

Measured (`reports/places-and-named/`) over the 1,488 items of BFCL's live_simple, simple_python,
multiple, parallel and irrelevance and the worlds' 190 tasks: place formats, enum values named and
separated numbers together 22 wins, 1 loss (live_simple 57 → 71 of 258); flags, added after, 7
wins, 0 losses; a sentence after the qualifiers ("Riga, Latvia, Can you …") 1 win; percentages 2 wins, 0
losses; the worlds untouched.

Word ends: a text value the model ends inside one of the user's words goes on to the word's end
("Christian" of "Christianity", "Buddhi" of "Buddhism": the model ends after one of the word's
tokens with confidence). Only where every place the value occurs, as written, continues the same
word; not a plural ending, not a value the parameter's description names ("asc"), not in scripts
written without spaces. Whole numbers: a number of three digits or more that the model ends short
of the one number the user wrote that it begins is written whole ("100000" of "1,000,000": it
loses count of zeros); so is a number argument the user gave with a scale word ("50 million" →
50000000, not 50; `_scaled`). Measured (`reports/word-ends/`) on the BFCL items each can act on:
word ends 4 wins, 0 losses in 27 items; whole numbers 1 win, 0 losses in 10; scale words 1 win in
2; none acts on any of the worlds' 190 tasks.

Units: a text value the model ends at a number the user wrote goes on to the word that follows
the number there ("2" → "2 weeks" for `duration`, "3" → "3pm", "19th" → "19th century"): only
where every place the number stands goes on with the same lowercase word, not a connective ("2
and 3"), not a name ("2021 La Liga"), and only for text parameters without allowed values.
Measured (`reports/places-and-named/`, units): 3 wins, 0 losses over the 1,488 BFCL items; no world
task touched.

Tool names: the model, trained to open its reasoning with the tool it picks ("NAME fits; its
parameters come from the request."), picks among similar tools by a logit or two
(`country_info.population` for "What is the capital of Brazil?"). While the reasoning is naming
a tool, each token's logit gains `TOOL_PRIOR` times the request's retrieval score for the best tool
that token can still be naming (`prior`, BM25 over the tools' names and descriptions, the best tool
1.0: `agent.retrieval.tool_prior`); a top token that is not part of a tool's name (a decline,
reasoning in words) is never replaced. The turn's first call is then to the tool the reasoning
named: the model has named one tool and called another. Measured (`reports/word-ends/`): BFCL
multiple 9 wins, 0 losses in its 200 items (23 touched); the worlds' reasoning is in words, and
the rule acts on none of their 190 tasks.

Loops: greedy decoding that falls into a cycle inside a value writes the same block until the
token cap, and the call never closes (ACEBench's nested objects: 8 of 88 items ran to the cap,
"… (total solar eclipse in Athens, Greece, 2022-01-05T0.0000000000000001)  # 3.0000000000000001 …"
or "3999.9999999999999996233333…"). A value that ends in one block written over and over
(`looping`) is ended there, whatever the model prefers, and a list parameter whose items cycle
is closed after an item (`_open_list`); the call then closes and is judged, or held, like any
other. No text value of the training mix's gold calls ever reads as a loop.

String ends: inside a JSON string of a list or object argument, where the model's top token
would close the string's object or list (`{"end": "2024-02-15T00:00 }`), write the call's markup
(`"2023-06-01}</parameter>`) or break the line with the string still open, the closing quote is
chosen instead (`_steer_string_close`). The grammar reads each of those as more of the string, and
the model, past the end it meant, wrote on to the token cap: 4 of the 5 ACEBench slice rows that
reached it. Not where the user's words hold that brace or `<`.

Otherwise the model decides where a value starts, where it ends (a closing quote or
`</parameter>` is not overridden but by the rules above) and what it composes beyond the user's
words (a confident departure is above the margin). Only the user's own words are sources: a tool
result, which may carry planted text, is never one; the tool prior reads the request and the
tools' own schemas. The grammar, applied after, still holds every call to its schema (`engine.grammar`).

Why not a library: llama.cpp's grammars are hard constraints, and "a substring of the request,
else anything" is not a rule one can write without forbidding every value the model composes;
copy mechanisms in the literature live inside the model. This is a small logits rule over the
text generated so far, kept engine-agnostic (plain numpy, a tokenizer and a piece function).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import numpy as np

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
PARAM_OPEN, PARAM_CLOSE = "<parameter=", "</parameter>"
THINK_OPEN, THINK_CLOSE = "<think>\n", "</think>"
TOOL_PRIOR = 4.0  # logits the request's best-matching tool gains over one it does not match at all
MIN_CHARS = 2  # a value shorter than this says too little about where it copies from
LOOKAHEAD = 32  # characters of the user's words tokenized to find the continuing token
MARGIN = 8.0  # logits below the model's top token a continuation may lie and still be chosen
TOP_K = 16  # the model's best tokens also checked as continuations (a tokenization may differ)
LOOP_BLOCK = 8  # a value that ends in a block of at least this many characters …
LOOP_TIMES = 3  # … written this many times in a row is looping, and is ended
LOOP_MAX_BLOCK = 256  # longer cycles are not looked for (the check runs at every token of a value)
LOOP_RUN = 64  # a block shorter or plainer than that loops once it has run this many characters


# A comma-joined place format in a parameter's description: an example after "e.g.", "such as",
# "format" and the like, or a quoted one ("'City, State'", "San Francisco, CA", "Street Address,
# City, State"); and the words that make a parameter a place.
_NAME = r"[A-Z0-9][\w.'&()/-]*(?: [A-Z(][\w.'&()/-]*)*"
_FORMAT = re.compile(
    rf"(?:e\.g\.?|such as|format(?: of)?|for example|like|i\.e\.?)[:,]?\s*['\"`]?({_NAME}(?:, ?{_NAME})+)"
    rf"|['\"`]({_NAME}(?:, ?{_NAME})+)['\"`]"
)
_CITY_AND = re.compile(r"\bcity(?:,| and| or|/) ?(?:the )?(?:state|country|province)\b", re.I)
_PLACE = re.compile(
    r"\b(?:city|cities|location|address|place|destination|origin|venue|region|state|country|"
    r"district|province|town|area|where)\b",
    re.I,
)
# One qualifying name after a value: a comma, then capitalized words or a number ("Tamil Nadu",
# "CA", "D.C", "94704"); a word's dot is part of it only inside it ("D.C"; "Mexico." ends there).
_WORD = r"[A-Z0-9\u00c0-\u00de](?:[^\W_]|['-](?=[^\W_])|\.(?=[^\W_]))*"
_QUALIFIER = re.compile(rf", ?{_WORD}(?: {_WORD})*")


# The words of a flag's name that say nothing of what it turns on ("include_images": "images"),
# and the words that turn a request's mention of it off ("without images").
_FLAG_FILLER = {
    "include",
    "includes",
    "is",
    "enable",
    "enabled",
    "with",
    "get",
    "show",
    "use",
    "should",
    "return",
    "want",
    "flag",
    "whether",
    "has",
    "have",
    "only",
    "do",
    "add",
    "allow",
}
_NEGATION = {"not", "no", "don't", "dont", "never", "without", "less", "exclude", "excluding", "nor"}

# A whole number or an ordinal a text value may be ("2", "19th"), and the words after a number
# that are not its unit.
_UNIT_NUMBER = re.compile(r"\d+(?:st|nd|rd|th)?")
_UNIT_STOP = set(
    "a an the and or of in on at to from for with by if is are was were be as per than then that "
    "this these those which who when where but so not no nor into over under between after before "
    "since until about via its it their my your our his her".split()
)

# Between the peers a request lists: a comma, "and", "or", "&" (", and" too); and where a peer ends.
_LIST_SEPARATOR = re.compile(r"\s*,\s*(?:(?:and|or|&)\s+)?(?=[^\W_])|\s+(?:and|or|&)\s+(?=[^\W_])", re.I)
_PEER_END = re.compile(r"\s*(?:[,;:!?()\n]|\.(?=\s|$))|\s+(?:and|or|&|for|in|from|to|with|of|on|at)\s", re.I)
_SENTENCE_END = re.compile(r"[;:!?\n]|\.(?=\s|$)")  # a dot inside a word ("a@b.org") ends nothing


def _string_items(array: str) -> list[str] | None:
    """The items of a JSON array of strings written so far (`["a", "b"`), or None."""
    try:
        items = json.loads(array + "]")
    except ValueError:
        return None
    return items if isinstance(items, list) and all(isinstance(i, str) for i in items) else None


# A choice a parameter's description quotes ("'real' for real roots", "e.g. \"IPR\""): quotes
# that stand apart from words, so an apostrophe ("the user's") opens none; never markup or an
# escape (a client's tool description is not trusted to hold only choices).
_QUOTED = re.compile(r"(?<![^\W_])(['\"])([^'\"\n<>\\]{2,40})\1(?![^\W_])")

# A percentage in the user's words ("5%", "2.5 %"); a description that asks for a fraction
# ("as a decimal", "E.g. 5% is 0.05") and one whose scale is percents ("as a percentage", "0 to 100").
_PERCENT = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s?%")
_FRACTION = re.compile(
    r"\bdecimal\b|\bfraction\b|\d\s?%\s*(?:is|=|would be(?: represented as)?)\s*0\.\d", re.I
)
_PERCENT_SCALE = re.compile(r"\bpercent(?:age)?s?\b|\b100\b", re.I)
# Words of a parameter's name that make it a rate, which the field writes as a fraction (0.05 for
# 5%: numpy-financial, spreadsheets' RATE, a confidence level of 0.95).
_RATE_WORDS = frozenset(
    "rate rates yield return returns probability prob efficiency confidence ratio fraction proportion".split()
)

# A number written with thousands separators: its first group, then the rest ("500,000",
# "1,234.5"); not a list of numbers ("1,2,3", "[200,300,400]").
_GROUPED = re.compile(r"(?<![\d.,\[(])(\d{1,3})(?:,\d{3})+(?:\.\d+)?(?![\d\])]|,\d)")


# A whole number written without separators, not a part of a decimal or of a list ("1,2,3").
_PLAIN = re.compile(r"(?<![\d.,])\d+(?!\d|[.,]\d)")

# Scale words a number may be written with ("213 million"); not abbreviations ("2m" is a length).
_SCALES = {"thousand": 3, "million": 6, "billion": 9, "trillion": 12}
_SCALE_WORDS = "|".join(_SCALES)

_WORD_REST = re.compile(r"[^\W_]+")


def _whole_word(word: str, text: str) -> bool:
    """Whether `word` occurs in `text` as a whole word (no letter or digit either side)."""
    return re.search(_word_pattern(word), text) is not None


def _word_pattern(word: str) -> str:
    """A regular expression for `word` as a whole word: no letter or digit either side."""
    return rf"(?<![^\W_]){re.escape(word)}(?![^\W_])"


def _name_words(name: str) -> list[str]:
    """The lowercased words of a tool's or parameter's name ("rateOfReturn", "annual_yield")."""
    return re.sub(r"([a-z])([A-Z])", r"\1 \2", name).replace("_", " ").lower().split()


def _outside_longer(named: list[str], texts: list[str]) -> list[str]:
    """The values of `named` that the texts name somewhere other than inside a longer one of them:
    "like new" names "Like New", not also "New"; "a comedy-drama" names "Comedy-drama", not
    "Comedy" and "Drama". Whole words, case aside, as `_whole_word` reads them."""

    def spans(value: str) -> list[tuple[int, int, int]]:
        pattern = _word_pattern(value.lower())
        return [(i, m.start(), m.end()) for i, low in enumerate(texts) for m in re.finditer(pattern, low)]

    found = {v: spans(v) for v in named}

    def inside(span: tuple[int, int, int], value: str) -> bool:
        i, a, b = span
        return any(
            j == i and c <= a and b <= d and d - c > b - a
            for o in named
            if o != value
            for j, c, d in found[o]
        )

    return [v for v in named if any(not inside(sp, v) for sp in found[v])]


def _spaced_letter(ch: str) -> bool:
    """A letter or digit of a script that separates words with spaces (Latin, Greek, Cyrillic):
    in Chinese, Japanese or Thai a value may well end inside a run of letters."""
    return ch.isalnum() and ord(ch) < 0x0590


def _qualifiers(rest: str) -> list[str]:
    """The comma-joined names that open `rest` (what the user's words go on with after a value) and
    qualify it, each with its comma (", Latvia"; ", Tamil Nadu"; ", Berkeley", ", CA"); none when
    they read as a list of peers: a further name joined by "and", "or" or "&" after the last one
    ("New York, Los Angeles and Chicago"), unless that one is a code or a number ("Boston, MA and
    Chicago", "Berkeley, CA 94704 and"). A later one-word name that a lowercase word follows starts a
    sentence, not a qualifier ("Riga, Latvia, Can you tell me": ", Latvia")."""
    out, i = [], 0
    while m := _QUALIFIER.match(rest, i):
        if out and " " not in m.group(0).lstrip(", ") and re.match(r" [a-z]", rest[m.end() :]):
            break
        out.append(m.group(0))
        i = m.end()
    if out and re.match(r",?\s+(?:and|or|&)\s+[A-Z\u00c0-\u00de]", rest[i:]):
        last = out[-1].lstrip(", ")
        if not re.fullmatch(r"(?:[A-Z]{2,3}|(?:[A-Z]\.)+[A-Z]|\d+)(?: (?:[A-Z]{2,3}|\d+))*", last):
            return []
    return out


def _hermes_value(call: str) -> tuple[str, str | None] | None:
    """(the open string inside the call's arguments object (JSON), the argument's name when it is
    a top-level argument's whole value), or None: not inside one.

    A string is a value when it follows `:` in an object or sits in an array; the call's own
    `"name"` (depth 1) is not an argument and is never guided."""
    stack: list[str] = []
    expect_key = in_str = escaped = is_key = False
    buf: list[str] = []
    key = None  # the last key closed: the name of the member whose value follows
    clean = True  # no escape sequence in the value (its text would differ from the user's)
    for ch in call:
        if in_str:
            if escaped:
                escaped, clean = False, False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
                if is_key:
                    key = "".join(buf)
            else:
                buf.append(ch)
            continue
        if ch == '"':
            in_str, buf, clean = True, [], True
            is_key = bool(stack) and stack[-1] == "{" and expect_key
        elif ch in "{[":
            stack.append(ch)
            expect_key = ch == "{"
        elif ch in "}]":
            if stack:
                stack.pop()
            expect_key = False
        elif ch == ":":
            expect_key = False
        elif ch == ",":
            expect_key = bool(stack) and stack[-1] == "{"
    if not in_str or is_key or escaped or not clean or len(stack) < 2:
        return None
    return "".join(buf), key if stack == ["{", "{"] else None


def open_value(text: str, fmt: str) -> str | None:
    """The text value the model is writing inside a tool call at the end of `text`, or None."""
    found = _open(text, fmt)
    return found[0] if found else None


def open_argument(text: str, fmt: str) -> tuple[str, str] | None:
    """(function, parameter) when the value open at the end of `text` is a top-level argument's
    whole value (not a string inside an array or object), else None."""
    found = _open(text, fmt)
    return found[2] if found else None


_FUNCTION = re.compile(r"\s*<function=([^>\n]+)>")  # a qwen35 call's head: its function's name


def _call_start(text: str) -> int | None:
    """Where the tool call open at the end of `text` begins (after its `<tool_call>`), or None."""
    start = text.rfind(CALL_OPEN)
    if start < 0 or text.rfind(CALL_CLOSE) > start:
        return None
    return start + len(CALL_OPEN)


def _open_call(text: str) -> str | None:
    """The tool call open at the end of `text` (after its `<tool_call>`), or None."""
    start = _call_start(text)
    return None if start is None else text[start:]


def _qwen35_param(call: str) -> tuple[int, int, str] | None:
    """(where the open `<parameter=` starts, where its name ends, its value so far) in a qwen35
    call, or None: no parameter open, or its name not written yet."""
    p = call.rfind(PARAM_OPEN)
    if p < 0 or call.rfind(PARAM_CLOSE) > p:
        return None
    head_end = call.find(">\n", p)
    if head_end < 0:
        return None  # still writing the parameter's name
    return p, head_end, call[head_end + 2 :]


def _open_list(param: tuple[int, int, str] | None) -> str | None:
    """The JSON array the open qwen35 parameter (`_qwen35_param`) holds so far, at a point between
    its items (after an item's closing brace or bracket), or None."""
    if param is None or param[2][:1] != "[" or param[2].rstrip()[-1:] not in ("}", "]"):
        return None
    if _hermes_value("{" + param[2]) is not None:
        return None  # the brace is inside a string
    return param[2].rstrip()


def _open_at(
    call: str | None, param: tuple[int, int, str] | None, fmt: str
) -> tuple[str, bool, tuple[str, str] | None] | None:
    """`_open` from the open call (`_open_call`) and, in qwen35, its open parameter
    (`_qwen35_param`), parsed once per token by `CopyGuide.steer`."""
    if call is None:
        return None
    if fmt != "qwen35":
        found = _hermes_value(call)
        if found is None:
            return None
        name = re.match(r'\s*\{\s*"name"\s*:\s*"([^"\\]+)"', call)
        return found[0], True, (name.group(1), found[1]) if name and found[1] is not None else None
    if param is None:
        return None
    p, head_end, value = param
    if value[:1] in ("[", "{"):
        # an array or object parameter is JSON: the strings inside it are values as in hermes (the
        # brace stands in for the arguments object around them)
        inner = _hermes_value("{" + value)
        return None if inner is None else (inner[0], True, None)
    if "\n" in value:
        return None  # more than one line: not a copied phrase
    name = _FUNCTION.match(call)
    return value, False, (name.group(1), call[p + len(PARAM_OPEN) : head_end]) if name else None


def _open(text: str, fmt: str) -> tuple[str, bool, tuple[str, str] | None] | None:
    """(the open value, whether it is a JSON string, (function, parameter) when it is a top-level
    argument's whole value) at the end of `text`, or None."""
    call = _open_call(text)
    return _open_at(call, _qwen35_param(call) if call is not None and fmt == "qwen35" else None, fmt)


def looping(value: str) -> bool:
    """Whether `value` ends in one block written over and over: a block of `LOOP_BLOCK` or more
    characters, three of them distinct, written `LOOP_TIMES` times in a row ("… (eclipse in Athens,
    2022-01-05T0.0000000000000001)  # 3.0000000000000001 …"), or a shorter or plainer block run to
    `LOOP_RUN` characters ("3999.99999999999999962333333…"). A run of forty zeros (a number, an
    address) is not a loop."""
    for size in range(1, min(len(value), LOOP_MAX_BLOCK) + 1):
        block = value[-size:]
        varied = size >= LOOP_BLOCK and len(set(block)) >= 3
        times = LOOP_TIMES if varied else max(LOOP_TIMES, -(-LOOP_RUN // size))
        if size * times <= len(value) and value.endswith(block * times):
            return True
    return False


def _ends_value(piece: str, json_string: bool) -> bool:
    if json_string:
        return '"' in piece or "\\" in piece
    return piece.startswith("\n") or "<" in piece


class CopyGuide:
    """Steers one generation's text values toward the user's words (module doc).

    `sources`: the user's messages; `tokenize(text)` gives plain-text ids (no markup, no BOS);
    `piece(id)` one token's text; `fmt` the chat format's name ("hermes" or "qwen35"); `params`
    each tool's parameters schema (for the allowed values of enum arguments); `prior` how well the
    request matches each tool, 0 to 1 (`agent.retrieval.tool_prior`), for the tool the reasoning
    names."""

    def __init__(
        self,
        sources: Sequence[str],
        tokenize: Callable[[str], list[int]],
        piece: Callable[[int], str],
        fmt: str,
        margin: float | None = None,
        params: Mapping[str, Any] | None = None,
        prior: Mapping[str, float] | None = None,
    ):
        self.sources = [s for s in sources if s]
        self.prior = dict(prior or {})  # tool name -> how well the request matches it, 0 to 1
        self._lower = [s.lower() for s in self.sources]
        self.params = dict(params or {})  # tool name -> its parameters' JSON schema
        self._named: dict[tuple[str, str], tuple[list[str], str | None]] = {}
        self._tokenize, self._piece_of, self.fmt = tokenize, piece, fmt
        self.margin = MARGIN if margin is None else margin
        self._pieces: dict[int, str] = {}
        self._first: dict[str, int | None] = {}
        self._commas: dict[tuple[str, str], int] = {}  # argument -> commas its format shows
        self._inserted: dict[int, tuple[int, str]] = {}  # call's offset -> (where, text) written
        self._extended: dict[int, str] = {}  # value's offset -> the qualified place it is completed to
        self._numbers: dict[int, str] = {}  # value's offset -> the number it is completed to
        self.steered = 0  # tokens chosen by the guide in this generation

    def _piece(self, tok: int) -> str:
        if tok not in self._pieces:
            self._pieces[tok] = self._piece_of(tok)
        return self._pieces[tok]

    def _continuations(self, value: str, exact: bool = False) -> list[str]:
        """What follows each place `value` occurs in the user's words, case aside (`exact`: as
        written), cut before characters a value would have to escape."""
        low, out = value.lower(), []
        for src, src_low in zip(self.sources, self._lower, strict=True):
            at = src_low.find(low)
            while at >= 0:
                rest = src[at + len(value) : at + len(value) + LOOKAHEAD]
                for stop in ('"', "\\", "\n"):
                    rest = rest.split(stop, 1)[0]
                if rest and (not exact or src.startswith(value, at)):
                    out.append(rest)
                at = src_low.find(low, at + 1)
        return out

    def _first_token(self, text: str) -> int | None:
        if text not in self._first:
            ids = self._tokenize(text)
            self._first[text] = ids[0] if ids else None
        return self._first[text]

    def steer(self, text: str, logits: np.ndarray) -> int | None:
        """The token to choose instead of the model's top one at the end of `text`, or None."""
        if not self.sources:
            return None
        if (choice := self._steer_tool_name(text, logits)) is not None:
            return choice
        # the call and parameter open at the end of the text, read once for the rules below
        call_at = _call_start(text)
        call = None if call_at is None else text[call_at:]
        if (choice := self._steer_named_parameter(call_at, call, logits)) is not None:
            return choice
        param = _qwen35_param(call) if call is not None and self.fmt == "qwen35" else None
        if (choice := self._steer_list_peer(call, param, logits)) is not None:
            return choice
        items = _open_list(param)
        if items is not None and looping(items):
            return self._first_token("]")  # a list whose items cycle ends after the last one
        found = _open_at(call, param, self.fmt)
        if found is None:
            return None
        value, json_string, argument = found
        if looping(value):
            # greedy decoding caught in a cycle writes the same block until the token cap, and the
            # call never closes: end the value where the cycle shows
            return self._first_token('"' if json_string else "\n")
        if json_string and (choice := self._steer_string_close(logits)) is not None:
            return choice
        start = len(text) - len(value)  # the value's offset: keys what a rule is completing
        if argument is not None:
            members, named = self._enum(argument)
            if (
                members
                and (choice := self._steer_enum(value, members, named, json_string, logits)) is not None
            ):
                return choice
            if not json_string and (
                (choice := self._steer_percent(start, value, argument, logits)) is not None
                or (choice := self._steer_number(start, value, argument, logits)) is not None
            ):
                return choice
            if (choice := self._steer_unit(value, argument, json_string, logits)) is not None:
                return choice
        if len(value.strip()) < MIN_CHARS or not any(c.isalpha() for c in value):
            return None
        rests = self._continuations(value)
        if not rests:
            return None  # not copying the user's words (or copied to their end)
        lowered = [r.lower() for r in rests]

        def continues(piece: str) -> bool:
            return bool(piece) and any(r.startswith(piece.lower()) for r in lowered)

        top = int(np.argmax(logits))
        top_piece = self._piece(top)
        if not top_piece:
            return None
        if self._extended.get(start) == value and not _ends_value(top_piece, json_string):
            # a value completed to its qualifiers ends there, as the model would have ended it
            return self._end(logits, json_string)
        if _ends_value(top_piece, json_string):
            # the model ends the value: its decision, unless the tool's schema asks for a
            # "City, State" value the user wrote in full (`_steer_format`), or the value stops
            # inside one of the user's words (`_steer_word_end`)
            choice = self._steer_format(start, value, argument, rests, json_string, logits)
            if choice is None:
                choice = self._steer_word_end(value, argument, json_string, logits)
            return choice
        if continues(top_piece):
            return None  # already continuing the user's words
        # The token that starts each continuation, and the model's best tokens (a tokenization of
        # the user's words may differ from the one the model would write here).
        candidates = {self._first_token(r) for r in rests} | self._best(logits)
        valid = [
            t
            for t in candidates
            if t is not None and continues(p := self._piece(t)) and not _ends_value(p, json_string)
        ]
        if not valid:
            return None
        floor = float(logits[top]) - self.margin
        # None: the model departs from the user's words with confidence
        return self._take([t for t in valid if float(logits[t]) >= floor], logits)

    def _steer_string_close(self, logits: np.ndarray) -> int | None:
        """Inside a JSON string value, `"` where the model's top token would close the string's
        object or list, write the call's markup (`</parameter>`, `<parameter=…>`) or break the line
        without closing the string first (`{"end": "2024-02-15T00:00 }`, `"2023-06-01}</parameter>`).
        The grammar reads each of those as more of the string, and the model, past the end it
        meant, writes on to the token cap (4 of the 5 ACEBench slice rows at the cap). Not where
        the user's words hold that brace or `<` (a value may copy one); a line break, which a JSON
        string never holds as it stands, always."""
        top = self._piece(int(np.argmax(logits)))
        if '"' in top or "\\" in top:
            return None  # the model closes the string itself, or escapes
        lead = top.lstrip(" ")
        mark = "<" if "<" in top else lead[:1] if lead[:1] in ("}", "]", "\n") else None
        if mark is None or (mark != "\n" and any(mark in src for src in self.sources)):
            return None
        choice = self._first_token('"')
        if choice is not None:
            self.steered += 1
        return choice

    def _steer_tool_name(self, text: str, logits: np.ndarray) -> int | None:
        """Where the model opens its reasoning with a tool's name (the form it was trained on:
        "NAME fits; its parameters come from the request."), the token that goes on naming a tool
        by the model's logit plus `TOOL_PRIOR` times the request's match with the best tool that
        token can still be naming (`prior`). The model's near choices between tools are settled by
        the request's words; a confident choice stands, and so does reasoning in words or a
        decline ("No listed tool fits"): only a top token that is itself part of a tool's name is
        ever replaced, and only by another such token."""
        at = text.rfind(THINK_OPEN)
        if at < 0:
            return None
        said = text[at + len(THINK_OPEN) :]
        if THINK_CLOSE in said:
            return self._steer_call_name(said, logits)
        if not self.prior:
            return None
        names = [n for n in self.prior if n.startswith(said)]
        if not names or said in self.prior:
            return None  # not naming a tool, or named one whole

        def score(tok: int) -> float | None:
            piece = self._piece(tok)
            fits = [self.prior[n] for n in names if piece and n.startswith(said + piece)]
            return float(logits[tok]) + TOOL_PRIOR * max(fits) if fits else None

        candidates = self._best(logits) | {self._first_token(n[len(said) :]) for n in names}
        scored = {t: v for t in candidates if t is not None and (v := score(t)) is not None}
        top = int(np.argmax(logits))
        if top not in scored:
            return None
        best = max(scored, key=lambda t: scored[t])
        if best == top:
            return None
        self.steered += 1
        return best

    def _steer_call_name(self, turn: str, logits: np.ndarray) -> int | None:
        """Within the turn's first qwen35 call, the function the reasoning (`turn`, from after its
        opening) began by naming ("weather.humidity_forecast fits; …"): the embedded model has
        named one tool and called another ("get_team_score"). Other calls, and reasoning that does
        not begin with a listed tool's name, leave the model alone."""
        think, _, after = turn.partition(THINK_CLOSE)
        opened = re.search(r"<function=([^>\n]*)$", after)
        if self.fmt != "qwen35" or opened is None or after.count("<function=") != 1:
            return None
        named = max(
            (n for n in self.params if re.match(rf"{re.escape(n)}(?![\w.-])", think)), key=len, default=None
        )
        said = opened.group(1)
        if named is None or not named.startswith(said):
            return None  # no tool named, or the call already departed from it
        rest = named[len(said) :] + ">"
        top = self._piece(int(np.argmax(logits)))
        if top and rest.startswith(top):
            return None  # the model writes it itself
        return self._write(rest, logits)

    def _steer_named_parameter(self, start: int | None, call: str | None, logits: np.ndarray) -> int | None:
        """Where the model would close a qwen35 call leaving out an optional argument the user
        named (`_named_value`: "What are the comedy movies?" and `genre` one of Drama, Comedy, …;
        a flag the request says), the tokens that write that argument with that value
        (`_inserted`, keyed by the call's offset in the generated text, holds where in the call the
        written text starts and what it is). `start` and `call`: where the open call begins and its
        text (`steer`). The model's own parameters and values are left alone; the grammar, applied
        after, still holds the call to its schema."""
        if self.fmt != "qwen35" or not self.params or start is None or call is None:
            return None
        if start in self._inserted:
            at, target = self._inserted[start]
            rest = target[len(call) - at :] if target.startswith(call[at:]) else ""
        else:
            head = _FUNCTION.match(call)
            if head is None or call[head.end() : head.end() + 1] != "\n":
                return None
            fn, at = head.group(1), head.end() + 1
            done = call.rfind(PARAM_CLOSE + "\n", at)
            at = at if done < 0 else done + len(PARAM_CLOSE) + 1
            tail = call[at:]
            if not "<parameter=".startswith(tail):
                return None  # inside a parameter, or closing the call already
            top = self._piece(int(np.argmax(logits)))
            if not (tail + top).startswith("</"):
                return None  # the model goes on writing parameters (or may): its choice
            written = set(re.findall(r"<parameter=([^>\n]+)>", call))
            required = self._required(fn)
            if not required <= written:
                return None  # the grammar holds the call open for a required one anyway
            held = {
                v.strip().lower() for v in re.findall(r"<parameter=[^>\n]+>\n(.*?)\n</parameter>", call, re.S)
            }
            pending = [
                (name, named)
                for name in self._properties(fn)
                if name not in written and name not in required
                for named in [self._named_value(fn, name, held)]
                if named is not None
            ]
            if not pending:
                return None
            name, named = pending[0]
            target = f"<parameter={name}>\n{named}\n{PARAM_CLOSE}\n"
            rest = target[len(tail) :]
        if not rest:
            return None
        choice = self._write(rest, logits)
        if choice is not None and start not in self._inserted:
            self._inserted[start] = (at, target)
        return choice

    def _steer_list_peer(
        self, call: str | None, param: tuple[int, int, str] | None, logits: np.ndarray
    ) -> int | None:
        """In a qwen35 list of text items, where the last item is a phrase the user's words go on
        to list peers of ("Microsoft and Google", "John, Alice and Bob"): `"` where the model would
        end the item and the list at once (`"]`), `,` where it would not go on to another item
        (`]`; a line break, which the grammar refuses and then closes the list), and the peer's
        first token where it opens the next item with another (`_peer`). `call` and `param`: the
        open call and its open qwen35 parameter (`steer`). None elsewhere."""
        if call is None or param is None or param[2][:1] != "[":
            return None
        head = _FUNCTION.match(call)
        if head is None:
            return None
        fn, value = head.group(1), param[2].rstrip()
        inside = _hermes_value("{" + value)
        top = self._piece(int(np.argmax(logits)))
        if inside is not None and inside[0] and top.startswith('"') and top[1:].lstrip().startswith("]"):
            # `"]` ends the item and the list at once: end only the item
            if self._peer(fn, _string_items(value + '"')) is None:
                return None
            choice = self._first_token('"')
        elif inside is None and value.endswith('"'):
            if top.strip()[:1] == "," or self._peer(fn, _string_items(value)) is None:
                return None  # the model goes on, or nothing the user listed follows
            choice = self._first_token(",")
        elif inside is not None and inside[0] == "" and value[:-1].rstrip().endswith(","):
            peer = self._peer(fn, _string_items(value[:-1].rstrip()[:-1]))
            if peer is None or not top or peer.startswith(top) or top.startswith(peer):
                return None  # nothing listed follows, or the model writes the peer itself
            choice = self._first_token(peer)
        else:
            return None
        if choice is not None:
            self.steered += 1
        return choice

    def _peer(self, fn: str, items: list[str] | None) -> str | None:
        """The phrase the user's words list after the last of `items` ("Google" after "Microsoft"
        in "Microsoft and Google for 2 weeks"), up to the next comma, stop or conjunction; None
        when they list none there, or only one already in `items`, or one of another shape (a
        capitalized name's peer is capitalized: not "and tell me" after "Paris"), or commas that no
        "and" or "or" ends ("to a@b.org, subject Lunch, text: …"), or one that names the tool `fn`
        or one of its parameters ("subject")."""
        if not items or not items[-1].strip():
            return None
        last, have = items[-1], {i.strip().lower() for i in items}
        for src in self.sources:
            for m in re.finditer(_word_pattern(last), src, re.I):
                sep = _LIST_SEPARATOR.match(src, m.end())
                if sep is None:
                    continue
                rest = src[sep.end() :]
                peer = _PEER_END.split(rest, 1)[0].strip()
                if not peer or peer.lower() in have or (last[:1].isupper() and not peer[:1].isupper()):
                    continue
                if '"' in peer or "\\" in peer:
                    continue  # a JSON string would need it escaped: not copied as it stands
                sentence = _SENTENCE_END.split(rest, maxsplit=1)[0]
                if not re.search(r"\b(?:and|or)\b|&", sep.group(0) + sentence, flags=re.I):
                    continue  # commas, but no "and" or "or" ends them: not a list
                if _whole_word(peer.split()[0].lower(), self._names(fn)):
                    continue  # "subject …" after a recipient names a parameter, not a peer
                return peer
        return None

    def _named_value(self, fn: str, name: str, held: set[str] | None = None) -> str | None:
        """What an optional argument the user named is written as: the allowed value they named
        (`_enum`), the choice its description quotes that they named (`_named_choice`; `held`: the
        call's values so far, lowercased), or `true` for a boolean flag whose name's words the
        request says, unnegated ("include_litigants" and "details of litigants"; not "Don't return
        full text" for `full_text`); None when the user named nothing for it."""
        named = self._enum((fn, name))[1]
        if named is not None:
            return named
        kind = self._param((fn, name)).get("type")
        if kind == "string":
            return self._named_choice(fn, name, held or set())
        if kind != "boolean":
            return None
        words = [w for w in _name_words(name) if w not in _FLAG_FILLER]
        if not words or max(map(len, words)) < 4:
            return None
        for low in self._lower:
            found = [
                re.search(rf"(?<![^\W_]){re.escape(w[:-1] if w.endswith('s') else w)}", low) for w in words
            ]
            if all(found):
                before = re.findall(r"[\w']+", low[: min(m.start() for m in found if m)])[-3:]
                if not _NEGATION & set(before):
                    return "true"
        return None

    def _named_choice(self, fn: str, name: str, held: set[str]) -> str | None:
        """The one choice a text argument's description quotes that the user's words name (a whole
        word, case aside), as the description writes it; None for none or several. A choice that
        names the tool or one of its parameters ("Bot" beside `botId`) is the call's subject, not a
        choice the user made; one the call already holds is not written twice."""
        if self._enum((fn, name))[0]:
            return None  # an enum: `_enum` has judged it
        description = self._param((fn, name)).get("description")
        if not isinstance(description, str):
            return None
        names = self._names(fn)
        named = {}
        for _, choice in _QUOTED.findall(description):
            low = choice.strip().lower()
            if len(low) < MIN_CHARS or low in held or _whole_word(low, names):
                continue
            if any(_whole_word(low, src) for src in self._lower):
                named.setdefault(low, choice.strip())
        return next(iter(named.values())) if len(named) == 1 else None

    def _names(self, fn: str) -> str:
        """The words of the tool's name and of its parameters' names, lowercased ("bot id")."""
        names = " ".join([fn, *self._properties(fn)])
        return re.sub(r"([a-z])([A-Z])", r"\1 \2", names).replace("_", " ").replace(".", " ").lower()

    def _steer_percent(
        self, start: int, value: str, argument: tuple[str, str], logits: np.ndarray
    ) -> int | None:
        """Where the model starts a number argument whose description asks for a decimal fraction
        ("The annual interest rate. Enter as a decimal. E.g, 5% is 0.05") with the first digit of
        a percentage the user wrote ("5%"), the token that writes it as the fraction instead
        ("0"), then the rest of it ("0.05", `_steer_number`'s completion). Not when the
        description speaks of percents itself, nor when two of the user's percentages start
        alike. The embedded model writes 5.0 for "5%" whatever the description asks."""
        if value or start in self._numbers or not self._asks_fraction(argument):
            return None
        top = self._piece(int(np.argmax(logits)))
        if not top.isdigit():
            return None
        pcts = {m.group(1) for src in self.sources for m in _PERCENT.finditer(src)}
        starting = [p for p in pcts if p.startswith(top)]
        if len(starting) != 1:
            return None
        target = format(Decimal(starting[0]) / 100, "f")
        choice = self._write(target, logits)
        if choice is not None:
            self._numbers[start] = target
        return choice

    def _asks_fraction(self, argument: tuple[str, str]) -> bool:
        """A number argument whose description asks for a decimal fraction, or whose name makes it
        a rate ("annual_interest_rate", "rateOfReturn", "confidence_level") while its description
        is silent on the scale (no percent, no "%", no 100). Where a user's percentage fills a
        number parameter so described, BFCL's answers write a fraction for 31 of 32 parameters (the
        other is an alert's `threshold`, no rate by its name)."""
        schema = self._param(argument)
        if schema.get("type") not in ("number", "float"):
            return False
        desc = schema.get("description", "")
        if not isinstance(desc, str) or _PERCENT_SCALE.search(desc):
            return False
        if _FRACTION.search(desc):
            return True
        return "%" not in desc and not _RATE_WORDS.isdisjoint(_name_words(argument[1]))

    def _steer_number(
        self, start: int, value: str, argument: tuple[str, str], logits: np.ndarray
    ) -> int | None:
        """Where the model has written the first digit group of a number the user wrote with
        thousands separators ("500" of "$500,000") and would not go on with its digits, the token
        that does ("000"), then the end of the value once it holds the whole number ("500000":
        a call's number has no separators). The embedded model stops such numbers at the comma,
        a thousand times too small. Not when the user's words also hold the group as a number of
        its own. Likewise where it would end a number of three digits or more that only begins
        one the user wrote (`_whole_number`: "500" of "$5000", "100000" of "1,000,000"; it loses
        count of zeros), or a number the user wrote with a scale word (`_scaled`: "50" of "50
        million"). Top-level qwen35 values only (the argument's text, not JSON)."""
        top = self._piece(int(np.argmax(logits)))
        target = self._numbers.get(start)
        if target is None:
            target = self._grouped(value)
            if target is None and not top[:1].isdigit():
                target = self._whole_number(value) or self._scaled(value, argument)
            if target is None:
                return None
        rest = target[len(value) :] if target.startswith(value) else None
        if rest is None:
            return None  # the model wrote another number: its choice
        if not rest:
            if _ends_value(top, False):
                return None
            return self._end(logits, False)
        if top and rest.startswith(top):
            return None  # the model writes the digits itself
        choice = self._write(rest, logits)
        if choice is not None:
            self._numbers[start] = target
        return choice

    def _grouped(self, value: str) -> str | None:
        """The number the user wrote with separators whose first group `value` is, written whole,
        or None: none or several, or the group is also a number of its own in the user's words."""
        digits = value.lstrip("-")
        if not re.fullmatch(r"\d{1,3}", digits):
            return None
        found = {
            m.group(0).replace(",", "")
            for src in self.sources
            for m in _GROUPED.finditer(src)
            if m.group(1) == digits
        }
        alone = any(re.search(rf"(?<![\d.,]){digits}(?![\d]|,\d)", src) for src in self.sources)
        return value[: len(value) - len(digits)] + found.pop() if len(found) == 1 and not alone else None

    def _whole_number(self, value: str) -> str | None:
        """The one whole number the user wrote (separators dropped) whose digits `value`, three
        digits or more, begins and does not end; None where there is none or several, or where
        the user also wrote `value` itself."""
        digits = value.lstrip("-")
        if not re.fullmatch(r"\d{3,}", digits):
            return None
        numbers = {m.group(0) for src in self.sources for m in _PLAIN.finditer(src)} | {
            m.group(0).replace(",", "")
            for src in self.sources
            for m in _GROUPED.finditer(src)
            if "." not in m.group(0)
        }
        longer = {n for n in numbers if n.startswith(digits) and len(n) > len(digits)}
        if digits in numbers or len(longer) != 1:
            return None
        return value[: len(value) - len(digits)] + longer.pop()

    def _scaled(self, value: str, argument: tuple[str, str]) -> str | None:
        """The number the user wrote with a scale word ("213 million") whose digits `value` is,
        written whole ("213000000"), for a number argument; None where the user wrote `value`
        otherwise too, or where the argument counts in that scale ("in millions")."""
        schema = self._param(argument)
        digits = value.lstrip("-")
        if schema.get("type") not in ("integer", "number") or not digits.isdigit():
            return None
        words, plain = set(), False
        for src in self.sources:
            for m in re.finditer(rf"(?<![\d.,]){digits}(?!\d|[.,]\d)(\s+({_SCALE_WORDS})\b)?", src, re.I):
                if m.group(2):
                    words.add(m.group(2).lower())
                else:
                    plain = True
        if plain or len(words) != 1:
            return None
        word = words.pop()
        about = (argument[1] + " " + str(schema.get("description", ""))).lower()
        return None if word in about else value + "0" * _SCALES[word]

    def _steer_format(
        self,
        start: int,
        value: str,
        argument: tuple[str, str] | None,
        rests: list[str],
        json_string: bool,
        logits: np.ndarray,
    ) -> int | None:
        """Where the model would end a place value that the user wrote with its qualifiers ("Riga"
        of "Riga, Latvia", "Chennai" of "Chennai, Tamil Nadu"), the token that goes on copying
        them, when the argument's description shows a comma-joined format with that many commas
        ("The city and state, e.g. San Francisco, CA"). The model's end is overridden, whatever its
        margin, only toward the user's own words; the first comma must be among the model's best
        tokens. Once chosen, the value is completed to the qualifiers' end (`_extended`, keyed by
        the value's offset `start` in the generated text)."""
        target = self._extended.get(start)
        if target is None:
            budget = 0 if argument is None else self._format_commas(argument)
            chains = [c for r in rests if 0 < len(c := _qualifiers(r)) <= budget]
            if not chains:
                return None
            near = [
                t
                for t in self._best(logits)
                if (p := self._piece(t)) and any(c.startswith(p) for c in map("".join, chains))
            ]
            if not near:
                return None  # a comma here is not among the model's choices at all
            rest = "".join(max(chains, key=len))
            target = value + rest
        rest = target[len(value) :] if target.startswith(value) else ""
        if not rest:
            return None  # complete, or the model wrote something else ("MA" of "Massachusetts"): its decision
        choice = self._write(rest, logits, json_string)
        if choice is not None:
            self._extended[start] = target
        return choice

    def _steer_word_end(
        self,
        value: str,
        argument: tuple[str, str] | None,
        json_string: bool,
        logits: np.ndarray,
    ) -> int | None:
        """Where the model would end a text value inside one of the user's words ("Christian" of
        "Christianity", "Buddhi" of "Buddhism": the model ends after one of the word's tokens, 4 to
        36 logits sure), the token that goes on to the word's end, whatever the margin. Only where
        every place the value occurs in the user's words, as written ("CA" is not a cut copy of
        "California"), continues the same word, in a script that separates words with spaces; not
        a plural ending ("panda" of "pandas" is the model's choice), not a value the parameter's
        description names itself ("asc" of "ascending" where the description allows 'asc'), and
        only for text parameters without allowed values."""
        if not (_spaced_letter(value[-1]) and self._is_text(argument)):
            return None
        rests = self._continuations(value, exact=True)
        ends = {m.group(0) if (m := _WORD_REST.match(r)) else "" for r in rests}
        if len(ends) != 1 or not (rest := ends.pop()) or not _spaced_letter(rest[0]):
            return None
        if rest.lower() in ("s", "es"):
            return None
        if argument is not None:
            desc = str(self._param(argument).get("description", "")).lower()
            if _whole_word(value.lower(), desc):
                return None
        return self._write(rest, logits, json_string)

    def _steer_unit(
        self, value: str, argument: tuple[str, str], json_string: bool, logits: np.ndarray
    ) -> int | None:
        """Where the model would end a text argument that is a number the user wrote ("2" of "the
        last 2 weeks", "24" of "in 24 hour format", "3" of "3pm", "19th" of "the 19th century"),
        the word that follows it there, whatever the margin. Only where every place the number
        stands in the user's words, as written, goes on with the same lowercase word (a unit, not
        "and", "in" or a name: "2021 La Liga", "200 US dollars"), and only for text parameters
        without allowed values: a number parameter takes the number alone."""
        if not (_UNIT_NUMBER.fullmatch(value) and self._is_text(argument)):
            return None
        if not _ends_value(self._piece(int(np.argmax(logits))), json_string):
            return None
        after = {
            (m.group(1), m.group(2) or "")
            for src in self.sources
            for m in re.finditer(rf"(?<![\w.,]){re.escape(value)}(?!\d|[.,]\d)(\s?)([^\W\d_]+)?", src)
        }
        if len(after) != 1:
            return None
        space, word = after.pop()
        if not word or not word[0].islower() or word in _UNIT_STOP or not _spaced_letter(word[0]):
            return None
        return self._write(space + word, logits, json_string)

    def _is_text(self, argument: tuple[str, str] | None) -> bool:
        """Whether the value open is text: a string inside JSON (`argument` None), or a top-level
        argument whose schema says string and lists no allowed values."""
        if argument is None:
            return True
        schema = self._param(argument)
        return schema.get("type") == "string" and not schema.get("enum")

    def _write(self, rest: str, logits: np.ndarray, json_string: bool | None = None) -> int | None:
        """The longest token that writes the start of `rest` (its first token as tokenized, or one
        of the model's best), or None; with `json_string`, not one that would end the value. Each
        rule that has settled a text to write (a place's qualifiers, a number, an argument, a
        word's end) writes it through this."""
        valid = [
            t
            for t in {self._first_token(rest)} | self._best(logits)
            if t is not None
            and (p := self._piece(t))
            and rest.startswith(p)
            and (json_string is None or not _ends_value(p, json_string))
        ]
        return self._take(valid, logits)

    def _param(self, argument: tuple[str, str]) -> dict[str, Any]:
        """The argument's schema; {} where it is not a JSON object."""
        schema = self._properties(argument[0]).get(argument[1])
        return schema if isinstance(schema, dict) else {}

    def _properties(self, fn: str) -> dict[str, Any]:
        """The tool's parameters by name; {} where its schema is not an object schema (a client's
        tools are not trusted to be well-formed)."""
        schema = self.params.get(fn)
        props = schema.get("properties") if isinstance(schema, dict) else None
        return props if isinstance(props, dict) else {}

    def _required(self, fn: str) -> set[str]:
        schema = self.params.get(fn)
        req = schema.get("required") if isinstance(schema, dict) else None
        return {r for r in req if isinstance(r, str)} if isinstance(req, list) else set()

    def _end(self, logits: np.ndarray, json_string: bool) -> int | None:
        """The best of the model's TOP_K tokens that ends the value, or None."""
        ends = [t for t in self._best(logits) if _ends_value(self._piece(t), json_string)]
        return max(ends, key=lambda t: float(logits[t])) if ends else None

    @staticmethod
    def _best(logits: np.ndarray) -> set[int]:
        """The model's TOP_K best tokens."""
        k = min(TOP_K, logits.shape[0] - 1)
        return {int(t) for t in np.argpartition(logits, -k)[-k:]}

    def _format_commas(self, argument: tuple[str, str]) -> int:
        """How many commas the argument's description shows in a place value's format: the most
        in one comma-joined example ("e.g. San Francisco, CA", "in the format 'Street Address,
        City, State'"), 1 for a bare "city and state"; 0 for a parameter that is not about a
        place, or whose examples are alternatives ("e.g. Drama, Comedy, etc")."""
        if argument not in self._commas:
            name = argument[1]
            desc = self._param(argument).get("description", "")
            desc = desc if isinstance(desc, str) else ""
            n = 0
            if _PLACE.search(name.replace("_", " ") + " " + desc):
                for m in _FORMAT.finditer(desc):
                    if not re.match(r",?\s*etc\b", desc[m.end() :]):
                        n = max(n, (m.group(1) or m.group(2)).count(","))
                if not n and _CITY_AND.search(desc):
                    n = 1
            self._commas[argument] = min(n, 3)
        return self._commas[argument]

    def _take(self, near: list[int], logits: np.ndarray) -> int | None:
        """The longest piece among `near` (the most of the user's words per step: a one-letter
        piece such as " A" for " Angeles" leaves the model mid-word, where it garbles again), or
        None when there is none."""
        if not near:
            return None
        best = max(near, key=lambda t: (len(self._piece(t)), float(logits[t])))
        self.steered += 1
        return best

    def _enum(self, argument: tuple[str, str]) -> tuple[list[str], str | None]:
        """(the allowed text values of the argument, [] when it is not a text enum; the one of them
        the user's words name, or None: none or several are named)."""
        if argument not in self._named:
            enum = self._param(argument).get("enum")
            members = [m for m in enum if isinstance(m, str)] if isinstance(enum, list) else []
            if len(members) != len(enum or []):
                members = []  # numbers among the values: the grammar pins them, nothing to copy
            named = [
                m
                for m in members
                if len(m) >= MIN_CHARS and any(_whole_word(m.lower(), low) for low in self._lower)
            ]
            named = _outside_longer(named, self._lower)
            self._named[argument] = (members, named[0] if len(named) == 1 else None)
        return self._named[argument]

    def _steer_enum(
        self, value: str, members: list[str], named: str | None, json_string: bool, logits: np.ndarray
    ) -> int | None:
        """Within an enum argument whose allowed values the user's words name exactly one of, the
        token that goes on writing that one when the model's best allowed token leaves it, provided
        its logit is within `margin` of that token's."""
        if named is None or not named.startswith(value) or value == named:
            return None  # nothing named, the model already departed from it, or it is complete
        end = '"' if json_string else "\n"
        rests = [m[len(value) :] + end for m in members if m.startswith(value)]
        target = named[len(value) :] + end

        def allowed(piece: str) -> bool:
            return bool(piece) and any(r.startswith(piece) for r in rests)

        candidates = self._best(logits) | {t for r in rests if (t := self._first_token(r[:-1])) is not None}
        valid = [t for t in candidates if allowed(self._piece(t))]
        if not valid:
            return None
        best = max(valid, key=lambda t: float(logits[t]))
        if target.startswith(self._piece(best)):
            return None  # the model's choice already writes the named value
        floor = float(logits[best]) - self.margin
        return self._take(
            [t for t in valid if target.startswith(self._piece(t)) and float(logits[t]) >= floor], logits
        )
