"""Tool calls constrained by a grammar from `<tool_call>` on (lazy), so every call is well-formed.

The model reasons and writes prose freely; the moment it emits `<tool_call>`, llama.cpp's lazy
grammar sampler switches on and from then on only tokens that continue a well-formed call to an
*installed* tool with *declared* parameter names can be sampled. A call can still carry a wrong
value (the grammar does not know the user's intent), but never a malformed tag, an unknown tool
or an invented parameter, so the parser's `unclosed_call` / `no_function` / `unknown_function`
errors cannot happen.

How it is wired. llama-cpp-python has `LlamaSampler.add_grammar_lazy_patterns` (over llama.cpp's
`llama_sampler_init_grammar_lazy_patterns`) but `Llama.generate` only ever calls `add_grammar`.
`LazyGrammar` is a `LlamaGrammar` that also carries its triggers, and importing this module makes
`LlamaSampler.add_grammar` route a `LazyGrammar` to the lazy constructor (any other grammar goes
where it always went), so `engine.generate(ids, grammar=lazy_tool_grammar(engine, tools))` needs
nothing else. With a trigger *token* llama.cpp feeds that token's text to the grammar first, so
the root rule starts with the `<tool_call>` literal; when `<tool_call>` is not one token in the
vocabulary, a trigger *pattern* does the same from the text.

Grammar (qwen35 format, what `protocol.formats` renders and parses):

    root  ::= call ("\\n" call){0,max_calls-1}
    call  ::= "<tool_call>\\n" (fn-create-event | fn-list-events | …) "</function>\\n</tool_call>"
    fn-…  ::= "<function=create_event>\\n" p-…{0,n_params}
    p-…   ::= "<parameter=" ("title" | "start" | …) ">\\n" value "\\n</parameter>\\n"
    value ::= [^<]*          (or at most `max_value_chars` characters)

Text values are free text without '<' (the format has no escaping, and '<' would open a tag);
integers, numbers, booleans and enums are pinned, arrays are JSON arrays of their item type,
and an object that declares its properties holds those keys, typed. A number has at most 19
digits before its point, 16 after it and 3 in its exponent (a double holds 17 significant
digits): past them a small model's digit loop ("latitude": 3.9999…, 1,300 tokens to the cap)
has to end the number.
Once the root is complete llama.cpp allows only end-of-generation tokens. The hermes format gets
the same call structure with a JSON body, `{"name": <one of the tools>, "arguments": {…}}`, whose
arguments object holds that tool's declared keys, typed. No typed value admits `null`: a null
required argument or array item is what the tools refuse, so the grammar must not lead there.
"""

from __future__ import annotations

import ctypes
import json
import re
from typing import Any

import numpy as np
from llama_cpp import LlamaGrammar

TOOL_CALL = "<tool_call>"
# llama.cpp matches a trigger pattern against the whole generated text and feeds the grammar from
# the first capture group on.
TOOL_CALL_PATTERN = r"[\s\S]*?(<tool_call>[\s\S]*)"


class LazyGrammar(LlamaGrammar):
    """A GBNF grammar that stays off until one of its trigger tokens or patterns is generated."""

    def __init__(
        self, grammar: str, trigger_tokens: list[int] | None = None, trigger_patterns: list[str] | None = None
    ):
        super().__init__(_grammar=grammar)
        self.trigger_tokens = list(trigger_tokens or [])
        self.trigger_patterns = list(trigger_patterns or [])
        if not self.trigger_tokens and not self.trigger_patterns:
            raise ValueError("a lazy grammar needs at least one trigger token or pattern")


def _install_lazy_dispatch() -> None:
    from llama_cpp import _internals

    cls = _internals.LlamaSampler
    if getattr(cls.add_grammar, "_botpsy_lazy", False):
        return
    original = cls.add_grammar

    def add_grammar(self, model, grammar):
        if isinstance(grammar, LazyGrammar):
            return self.add_grammar_lazy_patterns(
                model, grammar, grammar.trigger_patterns, grammar.trigger_tokens
            )
        return original(self, model, grammar)

    add_grammar._botpsy_lazy = True
    cls.add_grammar = add_grammar


_install_lazy_dispatch()


# ---- GBNF -------------------------------------------------------------------------------------


def _lit(text: str) -> str:
    """A GBNF string literal."""
    return json.dumps(text, ensure_ascii=False)


def _rule_name(prefix: str, name: str, taken: set[str]) -> str:
    base = f"{prefix}-" + (re.sub(r"[^a-zA-Z0-9]+", "-", name).strip("-").lower() or "x")
    out, n = base, 2
    while out in taken:
        out, n = f"{base}-{n}", n + 1
    taken.add(out)
    return out


def _functions(tools: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for t in tools:
        fn = t.get("function", t)
        name = fn.get("name")
        if not name:
            raise ValueError(f"a tool schema without a name: {str(t)[:80]}")
        out.append((name, fn.get("parameters") or {}))
    if not out:
        raise ValueError("a tool-call grammar needs at least one tool")
    return out


_JSON_RULES = r"""
json-obj ::= "{" ws ( json-str ws ":" ws json-val ( ws "," ws json-str ws ":" ws json-val )* )? ws "}"
json-arr ::= "[" ws ( json-val ( ws "," ws json-val )* )? ws "]"
json-val ::= json-obj | json-arr | json-str | json-num | "true" | "false" | "null"
json-str ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] ) )* "\""
json-num ::= "-"? ( "0" | [1-9] [0-9]{0,18} ) ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,3} )?
ws ::= [ \t\n]?
"""


class _Values:
    """The GBNF for JSON values of a schema, one named rule per distinct schema (shared by tools).

    A typed value never admits `null`: a required argument or an array item given as null is what
    `Tool.bind` refuses ("expected an array of string, got null in it"), so the grammar holds the
    model to what the tool takes. An object that declares its `properties` is held to them as a
    call's arguments are (`members`): its declared keys in schema order, the required ones always,
    each value typed. Without that, a small model given a nested object parameter wrote the schema
    into the value (`[{"type": "array", "items": …}]`) or left it `{}`, and the grounding guard then
    asked the user for what they had already said (issue 35). A required object whose keys are all
    optional may still be `{}`, which the guard holds and asks about. Requiring one key there was
    measured and dropped (`reports/typed-objects/`): 11 fewer held calls, no verdict gained, and the
    released calls carried values nobody asked for (`ThinQ_Connect(body={"targetTemperature": 22})`,
    the tool's own default, for a request naming the mode, the wind and the monitoring); a question
    is better than a wrong action. Only untyped values stay free JSON:
    no `type`, an object without `properties`, or one that admits keys beyond them
    (`additionalProperties`). Integers are JSON integers of at most 19 digits, what `coerce` accepts.
    """

    SCALAR = {
        "integer": '"-"? ("0" | [1-9] [0-9]{0,18})',
        "number": "json-num",
        "boolean": '("true" | "false")',
        "string": "json-str",
    }
    MAX_DEPTH = 8  # object schemas nested deeper than this stay free JSON (bounds the grammar's size)

    def __init__(self, taken: set[str], lines: list[str]):
        self.taken, self.lines, self.rules = taken, lines, {}

    def json(self, schema: dict[str, Any], depth: int = 0) -> str:
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return "(" + " | ".join(_lit(json.dumps(v, ensure_ascii=False)) for v in schema["enum"]) + ")"
        kind = _kind(schema)
        if kind in self.SCALAR:
            return self.SCALAR[kind]
        if kind == "object":
            return self._object(schema, depth)
        if kind != "array":
            return "json-val"
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        key = "arr " + _schema_key(items)
        if key not in self.rules:
            name = _rule_name("arr", str(len(self.rules) + 1), self.taken)
            self.rules[key] = name
            item = self.json(items, depth + 1)
            self.lines.append(f'{name} ::= "[" ws ( {item} ( ws "," ws {item} )* )? ws "]"')
        return self.rules[key]

    def _object(self, schema: dict[str, Any], depth: int) -> str:
        if not typed_object(schema) or depth >= self.MAX_DEPTH:
            return "json-obj"
        key = "obj " + _schema_key(schema)
        if key not in self.rules:
            name = _rule_name("obj", str(len(self.rules) + 1), self.taken)
            self.rules[key] = name
            self.lines.append(f"{name} ::= {self.members(name, schema, depth + 1)}")
        return self.rules[key]

    def members(self, prefix: str, schema: dict[str, Any], depth: int = 0) -> str:
        """A JSON object holding `schema`'s declared keys in schema order, the required ones always
        and the optional ones at most once, each value typed; its helper rules are named after
        `prefix` and appended to the grammar.

        JSON puts a comma between members, so with optional members the first one present has none:
        `first-i` is "the members from i on, starting with the first present", `rest-i` "the members
        from i on, each after a comma"; both are built from the last member backwards.
        """
        required = set(schema.get("required") or [])
        props = [(k, v if isinstance(v, dict) else {}) for k, v in (schema.get("properties") or {}).items()]
        rest, first = "", ""  # rest-(i+1), first-(i+1) as rule names; "" is the empty sequence
        for pname, pschema in reversed(props):
            member = f'{_lit(json.dumps(pname, ensure_ascii=False))} ws ":" ws {self.json(pschema, depth)}'
            tail = f" {rest}" if rest else ""
            head = f"{member}{tail}"
            rule_rest = _rule_name(f"{prefix}-rest", pname, self.taken)
            comma = f'ws "," ws {member}'
            self.lines.append(
                f"{rule_rest} ::= {comma}{tail}" if pname in required else f"{rule_rest} ::= ({comma})?{tail}"
            )
            rule_first = _rule_name(f"{prefix}-first", pname, self.taken)
            if pname in required:
                self.lines.append(f"{rule_first} ::= {head}")
            elif first:
                self.lines.append(f"{rule_first} ::= {head} | {first}")
            else:
                self.lines.append(f"{rule_first} ::= ({head})?")
            rest, first = rule_rest, rule_first
        return f'"{{" ws {first} ws "}}"' if first else '"{" ws "}"'


def typed_object(schema: dict[str, Any]) -> bool:
    """Whether the grammar holds an object value to its declared keys: it declares `properties`
    and admits no others (`additionalProperties` absent or false)."""
    props = schema.get("properties")
    return isinstance(props, dict) and bool(props) and not schema.get("additionalProperties")


def _schema_key(schema: dict[str, Any]) -> str:
    """Schemas that differ only in descriptions share a rule."""

    def strip(v: Any) -> Any:
        if isinstance(v, dict):
            # a "description" that is a text annotates; one that is a schema is a property's
            return {k: strip(x) for k, x in v.items() if not (k == "description" and isinstance(x, str))}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return json.dumps(strip(schema), sort_keys=True, default=str)


def _kind(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):  # ["integer", "null"]: use the first non-null type
        kind = next((k for k in kind if k != "null"), None)
    return kind


def _value_rule(schema: dict[str, Any], text_rule: str, values: _Values) -> str:
    """The GBNF for one parameter value in the qwen35 format, from its JSON schema.

    Values are written as text and converted with the schema (`protocol.formats`): integers,
    numbers, booleans and enums can be pinned exactly; arrays and objects are typed JSON
    (`_Values`); anything else is free text without '<'.
    """
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return (
            "(" + " | ".join(_lit(v if isinstance(v, str) else json.dumps(v)) for v in schema["enum"]) + ")"
        )
    kind = _kind(schema)
    if kind in ("array", "object"):
        return values.json(schema)
    return {
        "integer": '"-"? [0-9]{1,19}',
        "number": "json-num",
        "boolean": '("true" | "false")',
    }.get(kind, text_rule)


def tool_call_gbnf(
    tools: list[dict[str, Any]], fmt: str = "qwen35", max_calls: int = 4, max_value_chars: int | None = None
) -> str:
    """A GBNF grammar for one to `max_calls` tool calls to `tools` (OpenAI-style schemas).

    Parameters appear in the schema's order, required ones always and optional ones at most once,
    each value typed by its schema. So a finished call has no unknown, missing, repeated or null
    argument; the price is that the model cannot choose the order. The hermes format gets the same
    as a JSON object.
    """
    if max_calls < 1:
        raise ValueError(f"max_calls must be at least 1, got {max_calls}")
    if fmt not in ("qwen35", "hermes"):
        raise ValueError(f"no tool-call grammar for format {fmt!r}; expected 'qwen35' or 'hermes'")
    fns = _functions(tools)
    more = f' ("\\n" call){{0,{max_calls - 1}}}' if max_calls > 1 else ""
    lines = [f"root ::= call{more}"]
    taken: set[str] = {"root", "call", "text", "fname", "ws"}
    values_lines: list[str] = []
    values = _Values(taken, values_lines)
    fn_rules, body = [], []
    if fmt == "hermes":
        for name, params in fns:
            fr = _rule_name("fn", name, taken)
            fn_rules.append(fr)
            args = values.members(fr, params)
            # the JSON string of the name, as a GBNF literal
            body.append(
                f"{fr} ::= {_lit(json.dumps(name, ensure_ascii=False) + ', ' + chr(34) + 'arguments' + chr(34) + ': ')} {args}"
            )
        lines.append(f'call ::= "<tool_call>\\n{{\\"name\\": " ({" | ".join(fn_rules)}) "}}\\n</tool_call>"')
        lines += body + values_lines
        lines.append(_JSON_RULES.strip())
        return "\n".join(lines) + "\n"
    for name, params in fns:
        fr = _rule_name("fn", name, taken)
        fn_rules.append(fr)
        required = set(params.get("required") or [])
        parts = []
        for pname, pschema in (params.get("properties") or {}).items():
            pr = _rule_name(f"{fr}-p", pname, taken)
            value = _value_rule(pschema if isinstance(pschema, dict) else {}, "text", values)
            body.append(f'{pr} ::= {_lit(f"<parameter={pname}>" + chr(10))} {value} "\\n</parameter>\\n"')
            parts.append(pr if pname in required else f"{pr}?")
        body.insert(
            len(body) - len(parts), f"{fr} ::= {' '.join([_lit(f'<function={name}>' + chr(10)), *parts])}"
        )
    lines.append(f'call ::= "<tool_call>\\n" ({" | ".join(fn_rules)}) "</function>\\n</tool_call>"')
    lines += body + values_lines
    lines.append(f"text ::= [^<]{{0,{max_value_chars}}}" if max_value_chars is not None else "text ::= [^<]*")
    lines.append(_JSON_RULES.strip())
    return "\n".join(lines) + "\n"


def tool_call_grammar(tools: list[dict[str, Any]], fmt: str = "qwen35", **kw) -> LlamaGrammar:
    """The same grammar, always on: the whole generation must be tool calls (tests, benchmarks)."""
    return LlamaGrammar.from_string(tool_call_gbnf(tools, fmt, **kw), verbose=False)


def lazy_tool_grammar(engine, tools: list[dict[str, Any]], fmt: str | None = None, **kw) -> LazyGrammar:
    """The grammar, switched on when the model emits `<tool_call>` (a token if the vocabulary has
    one, else a text pattern). `engine` is a `LlamaCppEngine`; `fmt` defaults to its chat format."""
    fmt = fmt or engine.chat_format.name
    gbnf = tool_call_gbnf(tools, fmt, **kw)
    ids = engine.tokenize(TOOL_CALL)
    if len(ids) == 1:
        return LazyGrammar(gbnf, trigger_tokens=ids)
    return LazyGrammar(gbnf, trigger_patterns=[TOOL_CALL_PATTERN])


# ---- grammar-first sampling --------------------------------------------------------------------


class GrammarGate:
    """Grammar-first token choice: ask the grammar about the one token the model picked, and
    mask the whole vocabulary only when that token is refused.

    llama.cpp's grammar sampler in a sampler chain checks every candidate on every step: with
    Qwen3.5's 248k-token vocabulary that is tens of milliseconds per token, as long as a 0.8B
    model's whole decode step on a phone-class CPU. A trained model's choice is almost always
    allowed, so checking it first (one candidate) and masking everything only on a refusal — what
    llama.cpp's own `common_sampler` does — keeps the guarantee at a fraction of the cost. Greedy
    output is the chain's but for one case; with sampling, a refused draw is redrawn from the
    allowed tokens.

    The case: where the model's own token is refused and the allowed one it prefers opens a JSON
    string and goes on in the same token (`"]]`, `"(`; not `""`, an empty string, the model's
    "none" that the grounding guard asks about), the bare `"` is taken instead when the grammar
    allows it. The model wanted to write a value bare (a date, `2024-…`, where the schema asks for
    a string) and the grammar made it open a string; the rest of that token is not what it wanted
    to write, and from a bare quote it writes the string's text itself (ACEBench:
    `"startDate": "]]"`).
    """

    def __init__(self, llm, grammar: LlamaGrammar):
        import llama_cpp

        self._lib = llama_cpp
        vocab = llm._model.vocab
        text, root = grammar._grammar.encode(), grammar._root.encode()
        if isinstance(grammar, LazyGrammar):
            patterns = (ctypes.c_char_p * len(grammar.trigger_patterns))(
                *[p.encode() for p in grammar.trigger_patterns]
            )
            tokens = (llama_cpp.llama_token * len(grammar.trigger_tokens))(*grammar.trigger_tokens)
            self._smpl = llama_cpp.llama_sampler_init_grammar_lazy_patterns(
                vocab,
                text,
                root,
                patterns,
                len(grammar.trigger_patterns),
                tokens,
                len(grammar.trigger_tokens),
            )
        else:
            self._smpl = llama_cpp.llama_sampler_init_grammar(vocab, text, root)
        if not self._smpl:
            raise ValueError("llama.cpp could not parse the grammar (its log says where)")
        self.n_vocab = llm.n_vocab()
        self._detokenize = llm.detokenize
        quote = llm.tokenize(b'"', add_bos=False, special=False)
        self._quote = quote[0] if len(quote) == 1 else None
        self._one = llama_cpp.llama_token_data(0, 0.0, 0.0)
        self._one_arr = llama_cpp.llama_token_data_array(ctypes.pointer(self._one), 1, -1, False)
        self._all = (llama_cpp.llama_token_data * self.n_vocab)()
        self._all_np = np.frombuffer(
            self._all, dtype=np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
        )
        self._ids = np.arange(self.n_vocab, dtype=np.int32)
        self._all_arr = llama_cpp.llama_token_data_array(self._all, self.n_vocab, -1, False)
        self.checks = self.refusals = 0

    def allows(self, token: int) -> bool:
        self._one.id, self._one.logit, self._one.p = token, 0.0, 0.0
        self._one_arr.size, self._one_arr.selected = 1, -1
        self._lib.llama_sampler_apply(self._smpl, self._one_arr)
        self.checks += 1
        return self._one.logit != float("-inf")

    def mask(self, logits):
        """`logits` with every token the grammar refuses set to -inf (a new array)."""
        self._all_np["id"] = self._ids
        self._all_np["logit"] = logits[: self.n_vocab]
        self._all_np["p"] = 0.0
        self._all_arr.size, self._all_arr.selected, self._all_arr.sorted = self.n_vocab, -1, False
        self._lib.llama_sampler_apply(self._smpl, self._all_arr)
        self.refusals += 1
        return self._all_np["logit"].copy()

    def choose(self, logits, pick) -> int:
        """`pick(logits) -> token`, kept if the grammar allows it, else redone on the masked logits
        (a token that opens a string and goes on: the bare quote, when allowed)."""
        token = pick(logits)
        if self.allows(token):
            return token
        token = pick(self.mask(logits))
        if self._quote is not None and token != self._quote:
            piece = self._detokenize([token])
            if piece[:1] == b'"' and piece[1:2] not in (b"", b'"') and self.allows(self._quote):
                return self._quote
        return token

    def accept(self, token: int) -> None:
        self._lib.llama_sampler_accept(self._smpl, token)

    def close(self) -> None:
        if self._smpl:
            self._lib.llama_sampler_free(self._smpl)
            self._smpl = None

    def __del__(self):
        self.close()
