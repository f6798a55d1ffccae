"""The tool-call grammar's language, checked without a model by a small GBNF matcher.

Pins issue 14 item 3: the grammar's JSON values admitted `null` for required arguments and typed
array items (`attendees=[null]`, `{"title": null}`), which the tools then refused or crashed on.
A typed value now never admits null, hermes arguments hold the declared keys in schema order
(required always, optional at most once), and integers are JSON integers of at most 19 digits.

`GbnfMatcher` reads the subset of GBNF `engine.grammar` writes (literals, character classes,
groups, alternation, `? * +` and `{m,n}`) and answers whether a whole string is in the language;
llama.cpp's own parser is exercised on the tiny model in `test_grammar_rollback.py`.
"""

from __future__ import annotations

import json
import re
from functools import cache

import pytest

from botpsy.engine.grammar import _Values, tool_call_gbnf
from botpsy.tools.registry import SUITES

# ---- a tiny GBNF matcher ------------------------------------------------------------------------

_ESC = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "\\": "\\",
    '"': '"',
    "]": "]",
    "[": "[",
    "-": "-",
    "/": "/",
    "^": "^",
}


def _unescape(text: str, i: int) -> tuple[str, int]:
    """One possibly escaped character of a literal or class at text[i]; (char, next index)."""
    if text[i] != "\\":
        return text[i], i + 1
    c = text[i + 1]
    if c == "x":
        return chr(int(text[i + 2 : i + 4], 16)), i + 4
    if c == "u":
        return chr(int(text[i + 2 : i + 6], 16)), i + 6
    return _ESC.get(c, c), i + 2


class GbnfMatcher:
    def __init__(self, gbnf: str):
        self.rules = {}
        for line in gbnf.strip().splitlines():
            name, _, body = line.partition(" ::= ")
            self.rules[name.strip()] = self._parse(body)

    # expressions: ("alt", [seq...]), ("seq", [item...]), ("lit", s), ("cls", neg, ranges),
    # ("ref", name), ("rep", expr, lo, hi)
    def _parse(self, body: str):
        self._s, self._i = body, 0
        expr = self._alt()
        assert self._i == len(self._s), body[self._i :]
        return expr

    def _ws(self):
        while self._i < len(self._s) and self._s[self._i] in " \t":
            self._i += 1

    def _alt(self):
        seqs = [self._seq()]
        while self._i < len(self._s) and self._s[self._i] == "|":
            self._i += 1
            seqs.append(self._seq())
        return ("alt", seqs)

    def _seq(self):
        items = []
        while True:
            self._ws()
            if self._i >= len(self._s) or self._s[self._i] in "|)":
                return ("seq", items)
            items.append(self._quant(self._atom()))

    def _atom(self):
        s, i = self._s, self._i
        if s[i] == '"':
            i += 1
            out = []
            while s[i] != '"':
                c, i = _unescape(s, i)
                out.append(c)
            self._i = i + 1
            return ("lit", "".join(out))
        if s[i] == "[":
            i += 1
            neg = s[i] == "^"
            i += neg
            ranges = []
            while s[i] != "]":
                lo, i = _unescape(s, i)
                hi = lo
                if s[i] == "-" and s[i + 1] != "]":
                    hi, i = _unescape(s, i + 1)
                ranges.append((lo, hi))
            self._i = i + 1
            return ("cls", neg, tuple(ranges))
        if s[i] == "(":
            self._i = i + 1
            expr = self._alt()
            assert self._s[self._i] == ")"
            self._i += 1
            return expr
        m = re.compile(r"[a-zA-Z0-9-]+").match(s, i)
        assert m, s[i:]
        self._i = m.end()
        return ("ref", m.group(0))

    def _quant(self, atom):
        s, i = self._s, self._i
        if i < len(s) and s[i] in "?*+":
            self._i += 1
            return ("rep", atom, 0 if s[i] != "+" else 1, 1 if s[i] == "?" else None)
        m = re.compile(r"\{(\d+)(,(\d*))?\}").match(s, i)
        if m:
            self._i = m.end()
            lo = int(m.group(1))
            hi = lo if m.group(2) is None else (int(m.group(3)) if m.group(3) else None)
            return ("rep", atom, lo, hi)
        return atom

    def matches(self, text: str, rule: str = "root") -> bool:
        @cache
        def ref(name: str, pos: int) -> frozenset:
            return ends(self.rules[name], pos)

        def ends(e, pos: int) -> frozenset:
            kind = e[0]
            if kind == "lit":
                return frozenset([pos + len(e[1])]) if text.startswith(e[1], pos) else frozenset()
            if kind == "cls":
                if pos >= len(text):
                    return frozenset()
                inside = any(lo <= text[pos] <= hi for lo, hi in e[2])
                return frozenset([pos + 1]) if inside != e[1] else frozenset()
            if kind == "ref":
                return ref(e[1], pos)
            if kind == "alt":
                return frozenset().union(*(ends(s, pos) for s in e[1]))
            if kind == "seq":
                cur = frozenset([pos])
                for item in e[1]:
                    cur = frozenset().union(*(ends(item, p) for p in cur)) if cur else cur
                return cur
            _, atom, lo, hi = e  # rep
            out, cur, n = set(), frozenset([pos]), 0
            if lo == 0:
                out |= cur
            while cur and (hi is None or n < hi):
                nxt = frozenset().union(*(ends(atom, p) for p in cur)) - (cur if hi is None else frozenset())
                n += 1
                if n >= lo:
                    out |= nxt
                cur = nxt
            return frozenset(out)

        return len(text) in ends(("ref", rule), 0)


# ---- the grammar's language -------------------------------------------------------------------

EVENT = {
    "type": "function",
    "function": {
        "name": "create_event",
        "parameters": {
            "type": "object",
            "properties": {
                "title": {"type": "string"},
                "start": {"type": "string"},
                "duration_minutes": {"type": "integer"},
                "attendees": {"type": "array", "items": {"type": "string"}},
                "extra": {"type": "object"},
            },
            "required": ["title", "start"],
        },
    },
}
PING = {"type": "function", "function": {"name": "ping", "parameters": {}}}


def hermes(args: str, name: str = "create_event") -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'


def qwen(params: dict[str, str], name: str = "create_event") -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


OK = '"title": "Dentist", "start": "2026-12-03T10:00"'


@pytest.mark.parametrize(
    "text,admitted",
    [
        (hermes("{" + OK + "}"), True),
        (hermes("{" + OK + ', "duration_minutes": 30, "attendees": ["a@b.cc", "c@d.ee"]}'), True),
        (hermes("{" + OK + ', "extra": {"k": null}}'), True),  # untyped members stay free JSON
        (hermes("{}", "ping"), True),
        (hermes('{"title": null, "start": "2026-12-03T10:00"}'), False),
        (hermes("{" + OK + ', "attendees": [null]}'), False),
        (hermes("{" + OK + ', "attendees": ["a@b.cc", null]}'), False),
        (hermes("{" + OK + ', "duration_minutes": null}'), False),
        (hermes("{" + OK + ', "duration_minutes": ' + "9" * 20 + "}"), False),
        (hermes("{" + OK + ', "duration_minutes": 007}'), False),
        (hermes('{"start": "2026-12-03T10:00"}'), False),  # a required argument missing
        (hermes("{" + OK + ', "title": "again"}'), False),  # repeated
        (hermes("{" + OK + ', "colour": "red"}'), False),  # undeclared
        (hermes("{" + OK + ",}"), False),
    ],
)
def test_hermes_grammar_admits_typed_arguments_only(text, admitted):
    g = GbnfMatcher(tool_call_gbnf([EVENT, PING], fmt="hermes", max_calls=1))
    assert g.matches(text) is admitted, text


@pytest.mark.parametrize(
    "params,admitted",
    [
        ({"title": "Dentist", "start": "2026-12-03T10:00", "attendees": '["a@b.cc"]'}, True),
        ({"title": "Dentist", "start": "2026-12-03T10:00", "attendees": "[]"}, True),
        ({"title": "Dentist", "start": "2026-12-03T10:00", "attendees": "[null]"}, False),
        ({"title": "Dentist", "start": "2026-12-03T10:00", "attendees": '["a@b.cc", null]'}, False),
        ({"title": "Dentist", "start": "2026-12-03T10:00", "attendees": "[1]"}, False),
        ({"title": "Dentist", "start": "2026-12-03T10:00", "duration_minutes": "null"}, False),
    ],
)
def test_qwen35_grammar_types_array_items(params, admitted):
    g = GbnfMatcher(tool_call_gbnf([EVENT, PING], max_calls=1))
    assert g.matches(qwen(params)) is admitted, params


# Issue 35: a nested object parameter that declares its keys. Unconstrained, the embedded model wrote
# the schema into the value (`[{"type": "array", "items": …}]`) or left it `{}`, and the grounding
# guard then asked the user for a value they had already given.
RANGE = {
    "type": "object",
    "properties": {"start": {"type": "string"}, "end": {"type": "string"}},
    "required": ["start", "end"],
}
ARTWORK = {
    "type": "function",
    "function": {
        "name": "analyze",
        "parameters": {
            "type": "object",
            "properties": {
                "dates": RANGE,
                "works": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "description": "one artwork",
                        "properties": {
                            "title": {"type": "string", "description": "its title"},
                            "year": {"type": "integer"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                            "size": {
                                "type": "object",
                                "properties": {"w": {"type": "number"}, "h": {"type": "number"}},
                                "required": ["w"],
                            },
                        },
                        "required": ["title"],
                    },
                },
                "meta": {
                    "type": "object",
                    "properties": {"k": {"type": "string"}},
                    "additionalProperties": True,
                },
                "free": {"type": "object"},
            },
            "required": ["dates"],
        },
    },
}
DATES = '{"start": "2024-01-01", "end": "2024-01-05"}'


@pytest.mark.parametrize("fmt", ["qwen35", "hermes"])
@pytest.mark.parametrize(
    "args,admitted",
    [
        ({"dates": DATES}, True),
        ({"dates": '{ "start": "a", "end": "b" }'}, True),
        ({"dates": DATES, "works": '[{"title": "Nighthawks"}]'}, True),
        (
            {
                "dates": DATES,
                "works": '[{"title": "A", "year": 1942, "tags": ["oil"], "size": {"w": 1.5, "h": 2}}]',
            },
            True,
        ),
        ({"dates": DATES, "works": '[{"title": "A", "size": {"w": 1}}, {"title": "B"}]'}, True),
        ({"dates": DATES, "meta": '{"anything": [1, null]}'}, True),  # admits other keys: free JSON
        ({"dates": DATES, "free": '{"x": {"y": 1}}'}, True),  # declares no keys: free JSON
        ({"dates": "{}"}, False),  # required keys left out
        ({"dates": '{"start": "2024-01-01"}'}, False),
        ({"dates": '{"end": "b", "start": "a"}'}, False),  # schema order, as the call's arguments
        ({"dates": '{"start": "a", "end": "b", "note": "x"}'}, False),  # undeclared key
        ({"dates": '{"start": null, "end": "b"}'}, False),
        ({"dates": '{"start": 1, "end": "b"}'}, False),
        (
            {"dates": DATES, "works": '[{"type": "object", "properties": {"title": {"type": "string"}}}]'},
            False,
        ),
        ({"dates": '{"type": "object", "properties": {"start": {"type": "string"}}}'}, False),
        ({"dates": DATES, "works": '[{"title": "A", "size": {"h": 2}}]'}, False),  # nested required key
        ({"dates": DATES, "works": '[{"title": "A", "year": "1942"}]'}, False),
        ({"dates": DATES, "works": "[{}]"}, False),
    ],
)
def test_objects_that_declare_their_keys_are_typed(fmt, args, admitted):
    g = GbnfMatcher(tool_call_gbnf([ARTWORK, PING], fmt=fmt, max_calls=1))
    if fmt == "qwen35":
        text = qwen(args, "analyze")
    else:
        text = hermes("{" + ", ".join(f'"{k}": {v}' for k, v in args.items()) + "}", "analyze")
    assert g.matches(text) is admitted, text


def test_object_rules_are_shared_and_bounded():
    """One rule per distinct object schema (descriptions aside), across tools; a schema nested past
    the depth limit stays free JSON rather than growing the grammar without end."""
    other = {
        "type": "function",
        "function": {
            "name": "book",
            "parameters": {
                "type": "object",
                "properties": {"when": {**RANGE, "description": "the stay"}},
                "required": ["when"],
            },
        },
    }
    gbnf = tool_call_gbnf([ARTWORK, other], max_calls=1)
    rules = dict(line.split(" ::= ", 1) for line in gbnf.strip().splitlines())
    assert rules["fn-analyze-p-dates"].split()[1] == rules["fn-book-p-when"].split()[1]  # one obj- rule
    deep: dict = {"type": "string"}
    for _ in range(20):
        deep = {"type": "object", "properties": {"d": deep}, "required": ["d"]}
    tool = {
        "type": "function",
        "function": {"name": "deep", "parameters": {"type": "object", "properties": {"x": deep}}},
    }
    gbnf = tool_call_gbnf([tool], max_calls=1)
    names = dict(line.split(" ::= ", 1) for line in gbnf.strip().splitlines())
    assert sum(bool(re.fullmatch(r"obj-\d+", name)) for name in names) == _Values.MAX_DEPTH
    nested = '{"d": ' * 9 + '{"anything": 1}' + "}" * 9
    assert GbnfMatcher(gbnf).matches(qwen({"x": nested}, "deep"))


def test_a_property_named_description_is_part_of_the_schema():
    a = {"type": "object", "properties": {"description": {"type": "string"}}, "required": ["description"]}
    b = {"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}
    tool = {
        "type": "function",
        "function": {"name": "t", "parameters": {"type": "object", "properties": {"a": a, "b": b}}},
    }
    g = GbnfMatcher(tool_call_gbnf([tool], max_calls=1))
    assert g.matches(qwen({"a": '{"description": "x"}', "b": '{"title": "y"}'}, "t"))
    assert not g.matches(qwen({"a": '{"title": "y"}'}, "t"))


@pytest.mark.parametrize("fmt", ["qwen35", "hermes"])
def test_every_installed_tools_rendered_call_is_admitted(fmt):
    """What `ChatFormat.calls` renders for each installed tool's required arguments is in the
    language, so the grammar never blocks a call the parser and the tool would accept."""
    from botpsy.protocol.formats import ChatFormat
    from botpsy.protocol.messages import ToolCall

    sample = {"string": "x", "integer": 3, "number": 2.5, "boolean": True, "object": {"a": 1}}
    tools = [t for s in SUITES.values() for t in s.tools]
    g = GbnfMatcher(tool_call_gbnf([t.schema() for t in tools], fmt=fmt, max_calls=1))
    for t in tools:
        props = t.parameters["properties"]
        args = {}
        for k in t.parameters["required"]:
            p = props[k]
            if "enum" in p:
                args[k] = p["enum"][0]
            elif p["type"] == "array":
                args[k] = [sample[p["items"]["type"]]]
            else:
                args[k] = sample[p["type"]]
        text = ChatFormat(fmt).calls([ToolCall(t.name, args)], after_text=False)
        assert g.matches(text), text


def test_no_typed_value_rule_admits_null():
    gbnf = tool_call_gbnf([t.schema() for s in SUITES.values() for t in s.tools], fmt="hermes")
    rules = dict(line.split(" ::= ", 1) for line in gbnf.strip().splitlines())
    # null lives in json-val alone, and only untyped values (json-obj members) use json-val
    assert [name for name, body in rules.items() if '"null"' in body] == ["json-val"]
    users = {name for name, body in rules.items() if re.search(r"\bjson-val\b", body)}
    assert users <= {"json-obj", "json-arr", "json-val"}, users
    assert json.loads('{"a": null}')  # sanity: the matcher's JSON notion is JSON's


# ---- the gate's choice on a refusal (llama.cpp's grammar sampler, a vocabulary-only model) -------


@pytest.fixture(scope="module")
def vocab_llm():
    llama_cpp = pytest.importorskip("llama_cpp")
    from botpsy.models import smollm2_base

    return llama_cpp.Llama(model_path=str(smollm2_base()), vocab_only=True, verbose=False)


GBNF_ONE_STRING = 'root ::= "{\\"d\\": " str "}"\nstr ::= "\\"" [^"\\\\]* "\\""'


def _gate_at(llm, text: str):
    """A gate on a grammar for `{"d": "<string>"}` that has accepted `text`."""
    import llama_cpp

    from botpsy.engine.grammar import GrammarGate

    gate = GrammarGate(llm, llama_cpp.LlamaGrammar.from_string(GBNF_ONE_STRING, verbose=False))
    try:
        for tok in llm.tokenize(text.encode(), add_bos=False, special=False):
            gate.accept(tok)
    except BaseException:
        gate.close()  # the caller never gets it to close
        raise
    return gate


def _choice_after(llm, text: str, logits) -> int:
    """The gate's choice for `logits` once `text` is accepted."""
    import numpy as np

    gate = _gate_at(llm, text)
    try:
        return gate.choose(logits, lambda x: int(np.argmax(x)))
    finally:
        gate.close()


def _one(llm, text: str) -> int:
    ids = llm.tokenize(text.encode(), add_bos=False, special=False)
    assert len(ids) == 1, (text, ids)
    return ids[0]


def test_a_refused_token_redone_as_a_quote_that_goes_on_is_the_bare_quote(vocab_llm):
    """The model wants a bare date where the schema asks for a string: the grammar's best allowed
    token was `"]]`, and the value became "]]" (ACEBench `"startDate": "]]"`)."""
    import numpy as np

    two, quote, junk = _one(vocab_llm, "2"), _one(vocab_llm, '"'), _one(vocab_llm, '"]]')
    empty, close = _one(vocab_llm, '""'), _one(vocab_llm, "}")

    def logits(**at: float):
        out = np.full(vocab_llm.n_vocab(), -20.0, dtype=np.float32)
        for tok, v in at.items():
            out[{"two": two, "quote": quote, "junk": junk, "empty": empty, "close": close}[tok]] = v
        return out

    gate = _gate_at(vocab_llm, '{"d": ')
    try:  # the case's premise: the model's `2` is refused there, `"]]` allowed
        assert not gate.allows(two) and gate.allows(junk)
    finally:
        gate.close()
    # the model's `2` is refused; the best allowed token, `"]]`, becomes the bare quote
    assert _choice_after(vocab_llm, '{"d": ', logits(two=9.0, junk=5.0, quote=1.0)) == quote
    # an allowed choice stands, whatever it holds
    assert _choice_after(vocab_llm, '{"d": ', logits(two=9.0, junk=10.0, quote=1.0)) == junk
    # an empty string is a value (the model's "none", which the grounding guard asks about): it stands
    assert _choice_after(vocab_llm, '{"d": ', logits(two=9.0, empty=6.0, junk=5.0, quote=1.0)) == empty
    # a refusal redone as another token stands
    assert _choice_after(vocab_llm, '{"d": "2024"', logits(two=9.0, junk=5.0, close=2.0)) == close


WHERE = {
    "name": "where",
    "parameters": {
        "type": "object",
        "properties": {
            "loc": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]},
            "n": {"type": "integer"},
            "x": {"type": "number"},
        },
        "required": ["loc"],
    },
}


@pytest.mark.parametrize(
    "params,admitted",
    [
        ({"loc": '{"lat": 34.0522}', "n": "9" * 19, "x": "-1.5e-9"}, True),
        ({"loc": '{"lat": 3.' + "9" * 16 + "}"}, True),
        ({"loc": '{"lat": 3.' + "9" * 17 + "}"}, False),  # a digit loop has to end the number
        ({"loc": '{"lat": 1' + "0" * 19 + "}"}, False),
        ({"loc": '{"lat": 1}', "x": "2." + "9" * 17}, False),
        ({"loc": '{"lat": 1}', "x": "1e1234"}, False),
        ({"loc": '{"lat": 1}', "n": "9" * 20}, False),
    ],
)
def test_numbers_have_a_bounded_count_of_digits(params, admitted):
    g = GbnfMatcher(tool_call_gbnf([WHERE], max_calls=1))
    assert g.matches(qwen(params, "where")) is admitted, params
