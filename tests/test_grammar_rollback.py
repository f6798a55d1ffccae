"""Runtime speed options on the tiny Qwen3.5 model: the tool-call grammar (always on and lazy from
`<tool_call>`), and `n_rs_seq` recurrent-state snapshots that keep rollbacks from re-prefilling."""

from __future__ import annotations

import json

import pytest

from botpsy.engine.grammar import LazyGrammar, lazy_tool_grammar, tool_call_gbnf, tool_call_grammar
from botpsy.protocol.formats import ChatFormat

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "days": {"type": "integer"},
                "units": {"type": "string", "enum": ["metric", "imperial"]},
                "hourly": {"type": "boolean"},
                "fields": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["city"],
        },
    },
}
PING = {"type": "function", "function": {"name": "ping", "description": "No arguments.", "parameters": {}}}
# A tool whose arguments are all text, for forcing calls out of a random model: with values capped
# at a few characters the grammar has nowhere to go but to the end of the call.
FIND = {
    "type": "function",
    "function": {
        "name": "find_events",
        "description": "Find events.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "date": {"type": "string"}},
            "required": ["query"],
        },
    },
}


# ---- grammar text (no model) ------------------------------------------------------------------


def test_qwen35_grammar_types_values_and_orders_parameters():
    g = tool_call_gbnf([WEATHER, PING], max_calls=2)
    lines = dict(line.split(" ::= ", 1) for line in g.strip().splitlines())
    assert lines["root"] == 'call ("\\n" call){0,1}'
    assert lines["call"] == '"<tool_call>\\n" (fn-get-weather | fn-ping) "</function>\\n</tool_call>"'
    # required first and mandatory, optional ones at most once, in schema order
    assert lines["fn-get-weather"] == (
        '"<function=get_weather>\\n" fn-get-weather-p-city fn-get-weather-p-days? '
        "fn-get-weather-p-units? fn-get-weather-p-hourly? fn-get-weather-p-fields?"
    )
    assert lines["fn-get-weather-p-days"] == '"<parameter=days>\\n" "-"? [0-9]{1,19} "\\n</parameter>\\n"'
    assert '("metric" | "imperial")' in lines["fn-get-weather-p-units"]
    assert '("true" | "false")' in lines["fn-get-weather-p-hourly"]
    # a typed array: its items are JSON strings, never null (test_engine_grammar.py checks the language)
    assert lines["fn-get-weather-p-fields"] == '"<parameter=fields>\\n" arr-1 "\\n</parameter>\\n"'
    assert (
        lines["arr-1"] == '"[" ws ( json-str ( ws "," ws json-str )* )? ws "]"' and lines["text"] == "[^<]*"
    )
    assert lines["fn-ping"] == '"<function=ping>\\n"'


def test_hermes_grammar_and_bad_input():
    g = tool_call_gbnf([WEATHER, PING], fmt="hermes", max_calls=1)
    assert g.startswith("root ::= call\n")
    assert 'call ::= "<tool_call>\\n{\\"name\\": " (fn-get-weather | fn-ping) "}\\n</tool_call>"' in g
    assert 'fn-ping ::= "\\"ping\\", \\"arguments\\": " "{" ws "}"' in g
    with pytest.raises(ValueError, match="expected 'qwen35' or 'hermes'"):
        tool_call_gbnf([WEATHER], fmt="mistral")
    with pytest.raises(ValueError, match="at least one tool"):
        tool_call_gbnf([])
    with pytest.raises(ValueError, match="max_calls"):
        tool_call_gbnf([WEATHER], max_calls=0)
    with pytest.raises(ValueError, match="trigger"):
        LazyGrammar('root ::= "x"')


# ---- on the tiny model ------------------------------------------------------------------------


@pytest.fixture
def engine(tiny_qwen_gguf):
    from botpsy.engine.llamacpp import LlamaCppEngine

    eng = LlamaCppEngine(tiny_qwen_gguf["f16"], n_ctx=2048, n_threads=1, n_threads_batch=1)
    yield eng
    eng.llm.close()


def _prompt(engine, tools):
    fmt = engine.chat_format
    return engine.tokenize(
        fmt.system(tools, "") + fmt.user("What is on my calendar?") + fmt.generation_prompt(True)
    )


def test_grammar_forces_a_well_formed_call(engine):
    tools = [FIND, WEATHER]
    gen = engine.generate(
        _prompt(engine, tools),
        max_tokens=300,
        grammar=tool_call_grammar([FIND], max_calls=1, max_value_chars=6),
    )
    assert gen.stop == "eos", gen.text  # the finished grammar let only an end token through
    parsed = ChatFormat("qwen35").parse(
        gen.text, {t["function"]["name"]: t["function"]["parameters"] for t in tools}, thinking=False
    )
    assert parsed.errors == [] and len(parsed.calls) == 1, gen.text
    assert parsed.calls[0].name == "find_events" and "query" in parsed.calls[0].arguments


SETTINGS = {
    "type": "function",
    "function": {
        "name": "set_display",
        "description": "Display settings.",
        "parameters": {
            "type": "object",
            "properties": {
                "display": {
                    "type": "object",
                    "properties": {
                        "mode": {"type": "string", "enum": ["dark", "light"]},
                        "level": {"type": "integer"},
                        "auto": {"type": "boolean"},
                    },
                    "required": ["mode", "level"],
                }
            },
            "required": ["display"],
        },
    },
}


def test_grammar_holds_a_nested_object_to_its_keys(engine):
    """llama.cpp parses the typed-object rules and a random model forced through them writes the
    declared keys, typed (the language itself: test_engine_grammar.py). Every value is bounded
    (an enum, an integer of at most 19 digits), so the forced call must end."""
    gen = engine.generate(
        _prompt(engine, [SETTINGS]), max_tokens=300, grammar=tool_call_grammar([SETTINGS], max_calls=1)
    )
    assert gen.stop == "eos", gen.text
    parsed = ChatFormat("qwen35").parse(
        gen.text, {"set_display": SETTINGS["function"]["parameters"]}, thinking=False
    )
    assert parsed.errors == [] and len(parsed.calls) == 1, gen.text
    display = parsed.calls[0].arguments["display"]
    assert display["mode"] in ("dark", "light") and isinstance(display["level"], int), display
    assert set(display) <= {"mode", "level", "auto"}, display


def test_grammar_first_matches_the_sampler_chain(engine):
    """Grammar-first (check the model's choice, mask the vocabulary only when it is refused) gives
    the same greedy tokens as llama.cpp's chain, which masks every candidate on every step."""
    prompt = _prompt(engine, [FIND, WEATHER])

    def run(first: bool):
        engine.grammar_first = first
        return engine.generate(
            prompt, max_tokens=60, grammar=tool_call_grammar([FIND, WEATHER], max_value_chars=6)
        )

    fast, chain = run(True), run(False)
    engine.grammar_first = True
    assert fast.ids == chain.ids and fast.stop == chain.stop
    stats = engine.grammar_stats  # from the grammar-first run
    assert stats["checks"] >= len(fast.ids) - 1 and 0 < stats["refusals"] <= stats["checks"]


def test_lazy_grammar_is_off_until_its_trigger(engine):
    """The random model never writes <tool_call>: with the lazy grammar it decodes exactly as without."""
    prompt = _prompt(engine, [FIND])
    free = engine.generate(prompt, max_tokens=24)
    lazy = lazy_tool_grammar(engine, [FIND])
    assert lazy.trigger_tokens == engine.tokenize("<tool_call>")  # an added token: a trigger token
    assert engine.generate(prompt, max_tokens=24, grammar=lazy).ids == free.ids


def test_lazy_grammar_constrains_from_its_trigger_on(engine):
    """Trigger on a token the free run really emits: identical up to it, a well-formed call after."""
    prompt = _prompt(engine, [FIND])
    free = engine.generate(prompt, max_tokens=24).ids[:-1]

    def whole_text(tok: int) -> bool:  # a trigger the grammar can spell: complete UTF-8, no markup
        try:
            return "<" not in engine.llm.detokenize([tok], special=True).decode("utf-8")
        except UnicodeDecodeError:
            return False

    k = next(i for i in range(len(free)) if free[i] not in free[:i] and whole_text(free[i]))
    trigger = free[k]
    trigger_text = engine.detokenize([trigger])
    gbnf = tool_call_gbnf([FIND], max_calls=1, max_value_chars=6)
    gbnf = gbnf.replace("root ::= call", f"root ::= {json.dumps(trigger_text)} call", 1)
    gen = engine.generate(prompt, max_tokens=300, grammar=LazyGrammar(gbnf, trigger_tokens=[trigger]))
    assert gen.ids[: k + 1] == free[: k + 1]
    rest = engine.detokenize(gen.ids[k + 1 : -1])
    assert rest.startswith("<tool_call>\n<function=find_events>\n<parameter=query>\n"), rest
    assert rest.endswith("</function>\n</tool_call>") and gen.stop == "eos"


def _next_logits(llm):
    import llama_cpp
    import numpy as np

    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()


@pytest.mark.parametrize("k", [0, 8])
def test_n_rs_seq_rollback_inside_the_last_batch(tiny_qwen_gguf, k):
    """Without snapshots llama.cpp refuses to drop a hybrid model's last tokens; with n_rs_seq it
    drops up to n_rs_seq of them, and inside the last batch the restored state is exact."""
    import llama_cpp
    import numpy as np

    from botpsy.engine.llamacpp import LlamaCppEngine

    eng = LlamaCppEngine(tiny_qwen_gguf["f16"], n_ctx=2048, n_threads=1, n_threads_batch=1, n_rs_seq=k)
    llm = eng.llm
    try:
        assert eng.rs_rollback == k
        seq = _prompt(eng, [FIND])
        llm.reset()
        llm.eval(seq)  # one batch
        n = llm.n_tokens
        ok = llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(llm.ctx), 0, n - 3, -1)
        assert ok == (k > 0)
        if ok:
            llm.n_tokens = n - 3
            for t in seq[-3:]:
                llm.eval([t])
            rolled = _next_logits(llm)
            llm.reset()
            llm.eval(seq)
            assert np.corrcoef(rolled, _next_logits(llm))[0, 1] > 0.99999
    finally:
        llm.close()


def test_n_rs_seq_regeneration_stays_exact(tiny_qwen_gguf):
    """Regenerating rolls back over one-token decode steps, where llama.cpp's snapshots are stale:
    the engine re-prefills instead, so the second reply equals the first."""
    from botpsy.engine.llamacpp import LlamaCppEngine

    eng = LlamaCppEngine(tiny_qwen_gguf["f16"], n_ctx=2048, n_threads=1, n_threads_batch=1, n_rs_seq=8)
    try:
        prompt = _prompt(eng, [FIND])
        first = eng.generate(prompt, max_tokens=5)
        assert eng.generate(prompt, max_tokens=5).ids == first.ids
        follow = prompt + first.ids + eng.tokenize("\n" + eng.chat_format.user("and tomorrow?"))
        assert eng.generate(follow, max_tokens=2).timing.cached_tokens == len(prompt) + 4  # appending: reused
    finally:
        eng.llm.close()


def test_default_engine_has_no_snapshots(tiny_qwen_gguf):
    from botpsy.engine.llamacpp import LlamaCppEngine

    eng = LlamaCppEngine(tiny_qwen_gguf["f16"], n_ctx=512, n_threads=1)
    try:
        assert eng.rs_rollback == 0
        assert not eng.cheap_rollback  # hybrid: the agent avoids dropping tokens
    finally:
        eng.llm.close()


# ---- the grammar in the agent loop ---------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["qwen35", "hermes"])
def test_every_installed_tool_makes_a_grammar_llama_cpp_accepts(engine, fmt):
    """All suites' schemas at once (what the agent builds with every suite installed): llama.cpp
    parses the grammar, and it stays idle on a free answer."""
    from botpsy.engine.grammar import GrammarGate
    from botpsy.tools.registry import all_tools

    schemas = [t.schema() for t in all_tools()]
    assert len(schemas) > 50
    grammar = lazy_tool_grammar(engine, schemas, fmt=fmt, max_calls=8)
    gate = GrammarGate(engine.llm, grammar)  # raises if llama.cpp cannot parse it
    gate.close()
    prompt = _prompt(engine, [FIND])
    assert engine.generate(prompt, max_tokens=12, grammar=grammar).ids == engine.generate(prompt, 12).ids


def test_agent_hands_the_tool_grammar_to_llama_cpp(engine):
    from botpsy.agent.loop import Agent, AgentConfig
    from botpsy.worlds import get_domain, make_world

    domain = get_domain("calendar")
    task = domain.generate(1, 1000, "eval")[0]
    for on in (True, False):
        engine.grammar_stats = {}
        agent = Agent(
            engine,
            make_world(domain, task),
            task.system,
            AgentConfig(max_tokens=16, max_steps=1, tool_grammar=on),
        )
        agent.send(task.user)
        # grammar_stats is written by the grammar path only: every generated token was checked
        assert bool(engine.grammar_stats) == on
        if on:
            assert engine.grammar_stats["checks"] >= 1
    assert not engine.cheap_rollback  # Qwen3.5 is hybrid: the agent keeps what it generated
