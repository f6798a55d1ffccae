"""Malformed tool schemas from a `botpsy serve` client are a 400, never a 500 (issue 36, item 9).

Before: 644 of 3,000 fuzzed completions against malformed schemas escaped the parser (HTTP 500,
or an error inside an HTTP 200 stream): `properties` as a list, `items` as a string, `required`
naming nothing, `enum` as a number all reached code that trusted them. Now `serve_schema` checks
every schema at the edge.

The fuzzer mutates realistic schemas (the calendar suite's and a few hand-written ones) one to
three times each — a value replaced by junk, a key dropped, a schema keyword added with a junk
value, a key renamed — from a fixed seed, and sends each with a random `tool_choice` and a
scripted reply that calls the tool with random arguments. Forced choices build a grammar and
llama.cpp parses it (a vocabulary-only model), so grammar construction is fuzzed too. Every
outcome must be a completion or a `BadRequest`; both kinds must occur, so the fuzz is not vacuous.
"""

from __future__ import annotations

import copy
import json
import os
import random
import threading
import urllib.error
import urllib.request

import pytest

from botpsy.engine.oracle import ScriptedEngine
from botpsy.serve import BadRequest, ChatService, make_server
from botpsy.tools.calendar import TOOLS

SEED = 36
N_IN_PROCESS = int(os.environ.get("BOTPSY_SCHEMA_FUZZ_N", "10000"))
N_HTTP = 300

HAND = [
    {
        "type": "function",
        "function": {
            "name": "search_flights",
            "description": "Find flights.",
            "parameters": {
                "type": "object",
                "properties": {
                    "from": {"type": "string", "description": "IATA code"},
                    "passengers": {"type": "integer", "minimum": 1},
                    "cabin": {"type": "string", "enum": ["economy", "business"]},
                    "dates": {"type": "array", "items": {"type": "string", "format": "date"}},
                    "flexible": {"type": ["boolean", "null"]},
                    "filters": {
                        "type": "object",
                        "properties": {"max_price": {"type": "number"}},
                        "additionalProperties": False,
                    },
                    "legs": {
                        "type": "array",
                        "items": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {}}]},
                    },
                },
                "required": ["from", "passengers"],
            },
        },
    },
    {"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}},
]
KEYWORDS = [
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "anyOf",
    "oneOf",
    "allOf",
    "additionalProperties",
    "description",
    "title",
    "name",
    "parameters",
    "function",
]


def junk(rng: random.Random, depth: int = 0):
    pool = [
        None,
        True,
        False,
        0,
        -7,
        1.5,
        1e308,
        "",
        "x",
        "string",
        "integer",
        "array",
        "object",
        "objekt",
        "null",
        "bad name<>",
        "<tool_call>",
        "ü" * 3,
        "a" * 100,
        [],
        [None],
        [1, "a"],
        ["string", "string"],
        ["integer", "null"],
        ["object", 5],
        {},
        {"type": 5},
        {"type": "array", "items": 3},
        {"type": "string", "enum": []},
        {"properties": []},
        {"properties": {"ok": "string"}},
        {"required": "x"},
        {"required": ["ghost"]},
        {"type": "object", "properties": {"in": {"type": "integer"}}, "required": ["in"]},
    ]
    if depth < 3 and rng.random() < 0.15:
        return {rng.choice(KEYWORDS): junk(rng, depth + 1)}
    if depth < 3 and rng.random() < 0.05:
        nested: object = {"type": "array"}
        for _ in range(rng.randint(20, 40)):
            nested = {"type": "array", "items": nested}
        return nested
    return copy.deepcopy(rng.choice(pool))


def locations(obj, out=None):
    """Every (container, key) in a JSON tree."""
    out = [] if out is None else out
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in list(items):
        out.append((obj, k))
        locations(v, out)
    return out


def mutate(rng: random.Random, tool: dict) -> dict:
    tool = copy.deepcopy(tool)
    for _ in range(rng.randint(1, 3)):
        locs = locations(tool)
        if not locs:
            break
        container, key = rng.choice(locs)
        op = rng.random()
        if op < 0.5 or not isinstance(container, dict):
            container[key] = junk(rng)
        elif op < 0.7:
            del container[key]
        elif op < 0.88:
            container[rng.choice(KEYWORDS)] = junk(rng)
        else:
            new = rng.choice(["", "bad name", "x<y", "a" * 70, "ok_name", "über"])
            container[new] = container.pop(key)
    return tool


def reply(rng: random.Random, tool) -> str:
    """A scripted completion calling the (possibly broken) tool with random arguments."""
    fn = tool.get("function") if isinstance(tool, dict) else None
    name = fn.get("name") if isinstance(fn, dict) else None
    params = fn.get("parameters") if isinstance(fn, dict) else None
    props = params.get("properties") if isinstance(params, dict) else None
    keys = list(props) if isinstance(props, dict) else ["x"]
    values = ["Paris", "3", "-1", "2.5", "true", "[1, 2]", '["a", null]', "{}", "", "null", "9" * 30]
    args = "".join(
        f"<parameter={k}>\n{rng.choice(values)}\n</parameter>\n" for k in rng.sample(keys, min(len(keys), 3))
    )
    return f"ok\n</think>\n\n<tool_call>\n<function={name}>\n{args}</function>\n</tool_call>"


class VocabEngine(ScriptedEngine):
    """Scripted replies, but with a grammar argument and a real vocabulary, so the server builds
    every grammar a forced `tool_choice` needs and llama.cpp parses it."""

    def __init__(self, llm):
        super().__init__([])
        self.llm = llm

    def generate(self, prompt_ids, max_tokens=512, temperature=0.0, on_text=None, grammar=None):
        return super().generate(prompt_ids, max_tokens, temperature, on_text)


@pytest.fixture(scope="module")
def vocab_llm():
    llama_cpp = pytest.importorskip("llama_cpp")
    from botpsy.models import smollm2_base

    return llama_cpp.Llama(model_path=str(smollm2_base()), vocab_only=True, verbose=False)


def cases(n: int, seed: int):
    rng = random.Random(seed)
    bases = [t.schema() for t in TOOLS] + HAND
    for _ in range(n):
        tool = mutate(rng, rng.choice(bases))
        fn = tool.get("function") if isinstance(tool, dict) else None
        named = {"type": "function", "function": {"name": fn.get("name") if isinstance(fn, dict) else "x"}}
        choice = rng.choice(["auto", "auto", "required", "none", named])
        body = {"messages": [{"role": "user", "content": "go"}], "tools": [tool], "tool_choice": choice}
        yield body, reply(rng, tool), rng.random() < 0.5


def test_fuzzed_schemas_are_answered_or_refused_never_crash(vocab_llm):
    engine = VocabEngine(vocab_llm)
    service = ChatService(engine)
    outcomes = {"ok": 0, "400": 0}
    escapes = []
    for body, text, thinking in cases(N_IN_PROCESS, SEED):
        engine.texts = [text]
        engine.thinking = thinking
        try:
            out = service.complete(body)
            assert out["choices"][0]["finish_reason"] in ("stop", "tool_calls", "length")
            json.dumps(out)
            outcomes["ok"] += 1
        except BadRequest as e:
            assert str(e) and "Traceback" not in str(e)
            outcomes["400"] += 1
        except Exception as e:  # what would have been an HTTP 500
            escapes.append((type(e).__name__, str(e)[:120], json.dumps(body["tools"])[:300]))
    assert escapes == [], f"{len(escapes)} of {N_IN_PROCESS} escaped; first: {escapes[:3]}"
    # Both outcomes occur in quantity: the fuzz reaches past the checks as well as into them.
    assert outcomes["ok"] > N_IN_PROCESS // 10 and outcomes["400"] > N_IN_PROCESS // 4, outcomes


def test_fuzzed_schemas_over_http_are_200_or_400(vocab_llm):
    engine = VocabEngine(vocab_llm)
    srv = make_server(engine, "127.0.0.1", 0)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    codes: dict[int, int] = {}
    try:
        for i, (body, text, _) in enumerate(cases(N_HTTP, SEED + 1)):
            engine.texts = [text]
            body["stream"] = i % 2 == 1
            req = urllib.request.Request(
                f"http://127.0.0.1:{srv.server_port}/v1/chat/completions",
                json.dumps(body).encode(),
                {"Content-Type": "application/json"},
            )
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    code, data = r.status, r.read().decode()
            except urllib.error.HTTPError as e:
                code, data = e.code, e.read().decode()
            codes[code] = codes.get(code, 0) + 1
            assert code in (200, 400), (code, data[:300])
            if code == 200 and body["stream"]:
                assert '"error"' not in data, data[:300]  # no failure hidden inside a 200 stream
    finally:
        srv.shutdown()
        srv.server_close()
    assert codes.get(200, 0) > 0 and codes.get(400, 0) > 0, codes


@pytest.mark.parametrize(
    "parameters,msg",
    [
        ({"type": "object", "properties": ["city"]}, "properties must be an object of schemas"),
        ({"type": "object", "properties": {"city": "string"}}, "properties.city must be a JSON schema"),
        ({"type": "object", "properties": {"c": {"type": "text"}}}, "type must be one of"),
        ({"type": "object", "properties": {"c": {"type": "array", "items": "string"}}}, "items must be"),
        ({"type": "object", "properties": {}, "required": ["city"]}, "does not declare"),
        ({"type": "object", "properties": {"c": {"enum": 3}}}, "enum must be a non-empty list"),
        ({"type": "object", "properties": {"bad name": {}}}, "parameter name"),
        ({"type": "array"}, "must be 'object'"),
        ({"type": "object", "properties": {"c": {"anyOf": {}}}}, "anyOf must be"),
    ],
)
def test_each_malformation_is_named_in_the_400(parameters, msg):
    service = ChatService(ScriptedEngine([]))
    tool = {"type": "function", "function": {"name": "f", "parameters": parameters}}
    with pytest.raises(BadRequest, match=msg):
        service.complete({"messages": [{"role": "user", "content": "go"}], "tools": [tool]})


def test_duplicate_and_invalid_function_names_are_refused():
    service = ChatService(ScriptedEngine([]))
    f = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    with pytest.raises(BadRequest, match="used by an earlier tool"):
        service.complete({"messages": [{"role": "user", "content": "go"}], "tools": [f, f]})
    bad = {"type": "function", "function": {"name": "f>g"}}
    with pytest.raises(BadRequest, match="function name"):
        service.complete({"messages": [{"role": "user", "content": "go"}], "tools": [bad]})


def test_every_installed_tool_schema_and_common_extras_are_accepted():
    """The checks refuse only what breaks the server: every schema botpsy itself ships passes, and
    so do the JSON Schema keywords real clients add (`$schema`, `default`, `format`, nullable
    type lists, nested objects, `additionalProperties`)."""
    from botpsy.serve_schema import check_function
    from botpsy.tools.registry import SUITES

    schemas = [t.schema() for suite in SUITES.values() for t in suite.tools] + HAND
    assert len(schemas) > 50
    for i, schema in enumerate(schemas):
        check_function(schema, i)
    extras = {
        "type": "object",
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {
            "when": {"type": ["string", "null"], "format": "date-time", "default": None},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "examples": [["a"]]},
            "box": {
                "type": "object",
                "properties": {"w": {"type": "number"}},
                "additionalProperties": {"type": "string"},
            },
        },
        "required": ["when"],
        "additionalProperties": False,
    }
    check_function({"type": "function", "function": {"name": "mcp.tool-1", "parameters": extras}}, 0)


# JSON Schema keywords that reach llama.cpp's schema-to-grammar converter, with values it handles,
# refuses (lookahead, remote refs) or that would make a grammar too deep for llama.cpp's parser.
RESPONSE_EXTRAS = [
    ("minLength", 5),
    ("maxLength", 30),
    ("maxLength", 10**6),
    ("minItems", 2),
    ("maxItems", 4),
    ("pattern", "^[a-z]+$"),
    ("pattern", "^(a|b){2,5}$"),
    ("pattern", "(?=x)"),
    ("pattern", "a{1,99999}"),
    ("minimum", 3),
    ("maximum", 10**12),
    ("format", "date"),
    ("$ref", "#/$defs/x"),
    ("$ref", "https://example.com/s.json"),
    ("$defs", {"x": {"type": "integer"}}),
    ("const", 5),
    ("additionalProperties", {"type": "number"}),
    ("minProperties", 2),
]


def test_fuzzed_response_format_schemas_are_answered_or_refused(vocab_llm):
    """The same for `response_format.json_schema`, whose schema goes through llama.cpp's own
    converter (which asserts and raises on what it lacks) and then its grammar parser."""
    engine = VocabEngine(vocab_llm)
    service = ChatService(engine)
    rng = random.Random(SEED)
    bases = [t.schema()["function"]["parameters"] for t in TOOLS] + [
        h["function"]["parameters"] for h in HAND
    ]
    outcomes, escapes = {"ok": 0, "400": 0}, []
    for _ in range(N_IN_PROCESS // 5):
        wrapped = mutate(rng, {"s": rng.choice(bases)})
        schema = wrapped.get("s", {}) if isinstance(wrapped, dict) else {}
        for _ in range(rng.randint(0, 3)):
            where = [c for c, _ in locations({"r": schema}) if isinstance(c, dict)] or [{}]
            key, value = rng.choice(RESPONSE_EXTRAS)
            rng.choice(where)[key] = copy.deepcopy(value)
        body = {
            "messages": [{"role": "user", "content": "go"}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}},
        }
        engine.texts, engine.thinking = ['ok\n</think>\n\n{"a": 1}'], rng.random() < 0.5
        try:
            service.complete(body)
            outcomes["ok"] += 1
        except BadRequest:
            outcomes["400"] += 1
        except Exception as e:  # what would have been an HTTP 500
            escapes.append((type(e).__name__, str(e)[:120], json.dumps(schema)[:300]))
    assert escapes == [], f"{len(escapes)} escaped; first: {escapes[:3]}"
    assert outcomes["ok"] > 0 and outcomes["400"] > 0, outcomes
