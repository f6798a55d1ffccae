"""Grammars that make `botpsy serve` keep `tool_choice` and `response_format` promises.

Asking a small model nicely does not make it call a tool or write JSON; a grammar does. llama.cpp
masks every token that would leave the grammar's language, so with `tool_choice: "required"` the
answer *is* one or more well-formed calls to the client's tools, with a named function it is a
call to that function, and with `response_format` JSON it is JSON (of the schema, when given).

A thinking model reasons first, and that reasoning must stay free: the grammar's first part is
"any text without `</think>`, then `</think>`" (a small automaton over the tag's prefixes, one
rule per matched prefix), and the forced part starts after the tag. Unlike a grammar switched on
lazily at `</think>`, this one also forbids ending the turn inside the reasoning, so a "required"
request cannot end without a call; only `max_tokens` can cut it (finish_reason "length"). A model
that does not think has an empty think block in its prompt already, so its grammar starts with
the forced part.

Grammars need a backend that samples under one (llama.cpp: its `generate` takes `grammar`); for
any other, a request that needs one is a 400 saying so, never an answer that ignores the option.
Every grammar is parsed by llama.cpp before the request is accepted, so a client's JSON schema
that cannot become a grammar is a 400 too, not a failure halfway through a stream.
"""

from __future__ import annotations

import contextlib
import inspect
import json
from typing import Any

from botpsy.serve_errors import BadRequest
from botpsy.serve_options import Options

THINK_CLOSE = "</think>"
ROOT = "botpsy-answer"  # the start rule, and the prefix of ours: no clash with a converter's names
MAX_CALLS = 8
# Below where llama.cpp's recursive grammar parser overflows its stack (between 5,000 and 20,000
# nested groups here), above what a real schema needs (a `maxLength` of 1,000 nests 1,000 deep).
MAX_NESTING = 2000


def accepts(engine: Any, parameter: str) -> bool:
    """Whether `engine.generate` takes the keyword `parameter` (llama.cpp: grammar, should_stop)."""
    try:
        return parameter in inspect.signature(engine.generate).parameters
    except (TypeError, ValueError):
        return False


def needs_grammar(opts: Options) -> bool:
    return opts.forced or opts.response_format != "text"


def _json_gbnf(opts: Options) -> str:
    """The converter's GBNF (rule `root`) for a JSON answer: any object, or the client's schema."""
    from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf

    if opts.response_format == "json_object":
        return JSON_GBNF
    try:
        return json_schema_to_gbnf(json.dumps(opts.json_schema or {}))
    except Exception as e:  # noqa: BLE001 - the converter asserts and raises freely on what it lacks
        raise BadRequest(
            f"response_format.json_schema cannot be enforced: {type(e).__name__}: {str(e)[:200]}; "
            "simplify the schema (no remote $ref, no lookaround patterns) or use 'json_object'"
        ) from None


def _calls_gbnf(tools: list[dict[str, Any]], opts: Options, fmt: str) -> str:
    from botpsy.engine.grammar import tool_call_gbnf

    chosen = [t for t in tools if t["function"]["name"] == opts.tool_name] if opts.tool_name else tools
    one = opts.tool_choice == "function" or not opts.parallel_tool_calls
    try:
        return tool_call_gbnf(chosen, fmt, max_calls=1 if one else MAX_CALLS)
    except ValueError as e:
        raise BadRequest(f"tool_choice cannot be enforced for these tools: {e}") from None


def request_grammar(engine: Any, tools: list[dict[str, Any]], opts: Options, lock=None):
    """The grammar `opts` needs on this engine (None: none needed), or BadRequest when it cannot
    have one. Forced calls win over a response format: a forced answer holds no text to format.
    `lock` (the engine's) is held only while llama.cpp parses the grammar: building it from a
    large schema can take a second, which must not stall another request's generation."""
    if not needs_grammar(opts):
        return None
    what = f"tool_choice {opts.tool_choice!r}" if opts.forced else f"response_format {opts.response_format!r}"
    if not accepts(engine, "grammar"):
        raise BadRequest(
            f"{what} needs grammar-constrained decoding, which this server's backend "
            f"({type(engine).__name__}) does not have; serve a GGUF model through llama.cpp, or drop it"
        )
    from llama_cpp import LlamaGrammar

    gbnf = answer_gbnf(tools, opts, engine.chat_format.name, engine.thinking)
    depth = nesting(gbnf)
    if depth > MAX_NESTING:
        # llama.cpp parses groups recursively: a schema with maxLength 20000 (nested optional
        # groups, one per character) overflowed its stack and killed the server (a segfault).
        raise BadRequest(
            f"{what} cannot be enforced: its grammar nests {depth} groups deep (at most "
            f"{MAX_NESTING}); lower maxLength / maxItems / pattern repetition counts"
        )
    grammar = LlamaGrammar.from_string(gbnf, verbose=False)
    grammar._root = ROOT
    with lock if lock is not None else contextlib.nullcontext():
        _check_parses(engine, grammar, what)
    return grammar


def auto_calls_grammar(engine: Any, tools: list[dict[str, Any]], opts: Options, lock=None):
    """With `tool_choice` "auto" (OpenAI's default) and tools shown: the lazy tool-call grammar the
    agent runs under (`engine.grammar`), so the calls the model chooses to make name the client's
    tools, with their declared parameters, typed. Text and reasoning stay free; the grammar starts
    at `<tool_call>`. A client's tools are requests the model was not written for (issue 35): before
    this, `botpsy serve` sampled them unconstrained while `botpsy run` and every evaluation held
    calls to the grammar, and the server answered worse than the figures said: BFCL's 50-item
    slices through the server, 33 of 150 before, 54 after (21 wins, 0 losses; the agent path 53;
    `reports/serve-auto/`).

    None when nothing is to be held (another `tool_choice`, no tools, a grammar already needed), the
    backend takes no grammar, or llama.cpp refuses the one these tools give: "auto" promises no
    call, so the request is answered unconstrained rather than refused."""
    if opts.tool_choice != "auto" or not tools or needs_grammar(opts) or not accepts(engine, "grammar"):
        return None
    with lock if lock is not None else contextlib.nullcontext():
        try:
            grammar = engine.tool_grammar(tools, max_calls=MAX_CALLS if opts.parallel_tool_calls else 1)
            if grammar is not None:
                engine.check_grammar(grammar)
        except ValueError:
            return None
    return grammar


def nesting(gbnf: str) -> int:
    """The deepest nesting of parenthesised groups in a GBNF text (outside literals, character
    classes and comments)."""
    depth = deepest = 0
    i, n = 0, len(gbnf)
    while i < n:
        c = gbnf[i]
        if c in '"[':
            close = '"' if c == '"' else "]"
            i += 1
            while i < n and gbnf[i] != close:
                i += 2 if gbnf[i] == "\\" else 1
        elif c == "#":
            while i < n and gbnf[i] != "\n":
                i += 1
        elif c == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif c == ")":
            depth -= 1
        i += 1
    return deepest


def answer_gbnf(tools: list[dict[str, Any]], opts: Options, fmt: str, thinking: bool) -> str:
    """The GBNF (start rule `ROOT`) of a whole completion under `opts`: reasoning when the model
    thinks, then the forced calls or the JSON answer."""
    body = _calls_gbnf(tools, opts, fmt) if opts.forced else _json_gbnf(opts)
    return (_reasoning_gbnf() if thinking else f"{ROOT} ::= root\n") + body


def _reasoning_gbnf() -> str:
    """`ROOT` ::= any text without `</think>`, then `</think>`, up to three blanks, then `root`.

    State i has matched the tag's first i characters; a character that breaks the match goes
    back to state 1 when it is '<' (it may open the tag again; the tag holds no other '<') and
    to state 0 otherwise. Every rule recurses in tail position, which llama.cpp runs in constant
    stack, so reasoning of any length costs one grammar stack.
    """
    tag = THINK_CLOSE
    state = [ROOT] + [f"{ROOT}-{i}" for i in range(1, len(tag))]
    lines = [f'{state[0]} ::= "<" {state[1]} | [^<] {state[0]}']
    for i in range(1, len(tag)):
        ch = tag[i]
        advance = f'"{ch}" {state[i + 1]}' if i + 1 < len(tag) else f'"{ch}" [ \\n]{{0,3}} root'
        lines.append(f'{state[i]} ::= {advance} | "<" {state[1]} | [^{ch}<] {state[0]}')
    return "\n".join(lines) + "\n"


def _check_parses(engine: Any, grammar: Any, what: str) -> None:
    """Let llama.cpp parse the grammar now, while the request can still be refused with a 400."""
    try:
        engine.check_grammar(grammar)
    except ValueError:
        raise BadRequest(
            f"{what} cannot be enforced: llama.cpp refused the grammar built from this request "
            "(a schema it cannot express); simplify the schema"
        ) from None
