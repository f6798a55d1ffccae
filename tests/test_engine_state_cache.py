"""engine/state_cache.py: the system block's llama.cpp state saved by one process, restored by the next.

Two `LlamaCppEngine` objects on one cache folder stand for two processes: the second never
prefilled anything, so what it has it restored from disk. The check that matters: the logits after
a restore equal those of a full prefill of the same prompt, on an attention model with a LoRA
adapter (the embedded SmolLM2) and on the hybrid Qwen3.5 architecture (recurrent state included).
"""

from __future__ import annotations

import logging
import os

import numpy as np
import pytest

from botpsy.engine.state_cache import MIN_PREFIX_TOKENS, StateCache, system_prefix_len
from botpsy.protocol.formats import IM_END, IM_START
from botpsy.worlds import get_domain

# ---- where the stable prefix ends (a fake tokenizer: one id per character, one per marker) ----------

MARKERS = {IM_START: 1000, IM_END: 1001}


def fake_tokenize(text: str) -> list[int]:
    ids, i = [], 0
    while i < len(text):
        for m, tok in MARKERS.items():
            if text.startswith(m, i):
                ids.append(tok)
                i += len(m)
                break
        else:
            ids.append(ord(text[i]))
            i += 1
    return ids


def fake_detokenize(ids: list[int]) -> str:
    back = {v: k for k, v in MARKERS.items()}
    return "".join(back.get(i, chr(i)) for i in ids)


SYSTEM = f"{IM_START}system\n" + "You are botpsy. " * 4 + f"{IM_END}\n"
USER = f"{IM_START}user\nHello{IM_END}\n{IM_START}assistant\n"


@pytest.mark.parametrize(
    "text, expected",
    [
        (SYSTEM + USER, len(fake_tokenize(SYSTEM))),
        (SYSTEM + USER + "Hi" + IM_END + "\n" + USER, len(fake_tokenize(SYSTEM))),  # the first turn only
        (USER + USER, 0),  # no system turn: every request would be its own entry
        (f"{IM_START}system\nshort{IM_END}\n" + USER, 0),  # below MIN_PREFIX_TOKENS
        (SYSTEM, 0),  # the system turn with nothing after it is not a prompt yet
        (SYSTEM.replace(IM_END + "\n", IM_END) + USER, 0),  # not closed the way botpsy renders
    ],
)
def test_system_prefix_len(text, expected):
    assert len(fake_tokenize(SYSTEM)) >= MIN_PREFIX_TOKENS
    assert system_prefix_len(fake_tokenize(text), fake_tokenize, fake_detokenize) == expected


def test_default_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("BOTPSY_STATE_CACHE", str(tmp_path / "s"))
    assert StateCache.default().folder == tmp_path / "s"
    monkeypatch.setenv("BOTPSY_STATE_CACHE", "off")
    assert StateCache.default() is None
    monkeypatch.delenv("BOTPSY_STATE_CACHE")
    monkeypatch.setenv("BOTPSY_CACHE", str(tmp_path / "c"))
    assert StateCache.default().folder == tmp_path / "c" / "state"


# ---- two engines, one folder --------------------------------------------------------------------


def _prompt(engine, system: str | None = None) -> list[int]:
    """The agent's first prompt on the calendar suite: the system block, then the request."""
    dom = get_domain("calendar")
    fmt = engine.chat_format
    ids = engine.tokenize(fmt.system([t.schema() for t in dom.tools], system or dom.system))
    return ids + engine.tokenize(fmt.user("What do I have on Friday?") + fmt.generation_prompt(True))


def _last_logits(engine) -> np.ndarray:
    import llama_cpp

    ptr = llama_cpp.llama_get_logits_ith(engine.llm.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(engine.llm.n_vocab(),)).copy()


def _prompt_tokens_evaluated(engine) -> int:
    import llama_cpp

    return int(llama_cpp.llama_perf_context(engine.llm.ctx).n_p_eval)


def _full_prefill_logits(engine, ids: list[int]) -> np.ndarray:
    engine.llm.reset()
    engine.llm.eval(ids)
    return _last_logits(engine)


def _resumed_logits(engine, ids: list[int]) -> tuple[np.ndarray, int | None]:
    """Logits at the end of `ids` the way `generate` gets there: `prepare`, then the rest."""
    restored = engine.prefix_states.prepare(ids)
    rest = ids[engine.llm.n_tokens :]
    engine.llm.eval(rest)
    return _last_logits(engine), restored


def _embedded(cache, n_ctx=1024):
    from botpsy.engine.llamacpp import LlamaCppEngine
    from botpsy.models import resolve

    ms = resolve("embedded")
    return LlamaCppEngine(ms.base, ms.adapter, n_ctx=n_ctx, n_threads=1, n_threads_batch=1, state_cache=cache)


def _qwen(path, cache, n_ctx=1024):
    from botpsy.engine.llamacpp import LlamaCppEngine

    return LlamaCppEngine(path, n_ctx=n_ctx, n_threads=1, n_threads_batch=1, state_cache=cache)


def _check_resume(make, tmp_path):
    cache = StateCache(tmp_path / "states")
    first = make(cache)
    ids = _prompt(first)
    n = system_prefix_len(ids, first.tokenize, first.detokenize)
    assert n > 100 and n < len(ids)
    _, restored = _resumed_logits(first, ids)
    assert restored == 0 and first.prefix_states.last["hit"] is False  # a miss: prefilled and saved
    assert len(cache.entries()) == 1
    full = _full_prefill_logits(first, ids)
    first.llm.close()

    second = make(cache)  # a fresh "process": nothing prefilled
    resumed, restored = _resumed_logits(second, ids)
    assert restored == n and second.prefix_states.last["hit"] is True
    assert np.abs(resumed - full).max() <= 1e-4
    assert int(resumed.argmax()) == int(full.argmax())
    return second, cache, ids


@pytest.mark.slow
def test_embedded_model_with_adapter_resumes_with_full_prefill_logits(tmp_path):
    engine, _, _ = _check_resume(_embedded, tmp_path)
    assert "+" in engine.name  # the adapter is applied


@pytest.mark.slow
def test_a_miss_on_an_attention_model_keeps_the_shared_start_of_the_block(tmp_path):
    """Two evaluation items with the same system text and other tools: the second item's block is
    a miss, but the tokens it shares with the first stay in memory (as before the cache existed)."""
    engine = _embedded(StateCache(tmp_path / "states"))
    fmt, tools = engine.chat_format, [t.schema() for t in get_domain("calendar").tools]
    request = engine.tokenize(fmt.user("What do I have on Friday?") + fmt.generation_prompt(True))
    first = engine.tokenize(fmt.system(tools[:2], "You are botpsy.")) + request
    second = engine.tokenize(fmt.system(tools[:1] + tools[2:3], "You are botpsy.")) + request
    shared = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        shared += 1
    engine.generate(first, max_tokens=1)
    timing = engine.generate(second, max_tokens=1).timing
    assert engine.prefix_states.last["hit"] is False and shared > 20
    assert timing.cached_tokens == shared and timing.prompt_tokens == len(second) - shared
    logits = _last_logits(engine)
    engine.llm.reset()
    engine.llm.eval(second)
    assert int(_last_logits(engine).argmax()) == int(logits.argmax())
    engine.llm.close()


@pytest.mark.parametrize("quant", ["f16", "Q4_K_M"])
def test_hybrid_qwen35_resumes_with_full_prefill_logits(tiny_qwen_gguf, tmp_path, quant):
    """Qwen3.5's Gated DeltaNet layers keep a recurrent state, not per-token cells: it must be in
    the file too, or the logits after a restore would be those of a model that read nothing."""
    engine, _, ids = _check_resume(lambda c: _qwen(tiny_qwen_gguf[quant], c), tmp_path)
    assert not engine.cheap_rollback  # really the hybrid path


def test_generate_uses_the_saved_state_and_counts_it_as_cached(tiny_qwen_gguf, tmp_path):
    """The agent needs no change: the engine's first `generate` notices the saved system block."""
    from botpsy.agent.loop import Agent, AgentConfig
    from botpsy.worlds import make_world
    from botpsy.worlds.kit import TODAY

    cache = StateCache(tmp_path / "states")
    dom = get_domain("calendar")
    task = dom.generate(1, 7, "eval")[0]
    config = AgentConfig(max_tokens=4, max_steps=1, thinking=False, tool_grammar=False)
    steps = []
    for _ in range(2):
        engine = _qwen(tiny_qwen_gguf["f16"], cache)
        agent = Agent(engine, make_world(dom, task), task.system, config, today=TODAY)
        steps.append(agent.send(task.user).timings[0])
        n = system_prefix_len(agent.trace.token_ids, engine.tokenize, engine.detokenize)
        engine.llm.close()
    assert steps[0].cached_tokens == 0  # the first process prefilled everything
    assert steps[1].cached_tokens == n  # the second restored the system block
    assert steps[1].prompt_tokens == steps[0].prompt_tokens - n


def test_a_new_conversation_on_a_hybrid_model_restores_instead_of_prefilling(tiny_qwen_gguf, tmp_path):
    """The demo runs each request as a new conversation on one engine. An attention model keeps
    the shared system block in memory; a hybrid one cannot drop the old conversation's tail, so
    llama.cpp re-read the whole prompt (cached 0): now the block comes back from the file."""
    from botpsy.agent.loop import Agent, AgentConfig
    from botpsy.worlds import make_world
    from botpsy.worlds.kit import TODAY

    engine = _qwen(tiny_qwen_gguf["f16"], StateCache(tmp_path / "states"))
    dom = get_domain("calendar")
    tasks = dom.generate(2, 11, "eval")
    config = AgentConfig(max_tokens=4, max_steps=1, thinking=False, tool_grammar=False)
    firsts, evaluated = [], []
    for task in tasks:
        agent = Agent(engine, make_world(dom, task), task.system, config, today=TODAY)
        before = _prompt_tokens_evaluated(engine)
        firsts.append(agent.send(task.user).timings[0])
        evaluated.append(_prompt_tokens_evaluated(engine) - before)
    n = system_prefix_len(agent.trace.token_ids, engine.tokenize, engine.detokenize)
    assert not engine.cheap_rollback
    assert firsts[0].cached_tokens == 0 and firsts[1].cached_tokens == n
    assert engine.prefix_states.last["hit"] is True
    # what llama.cpp itself counted: the second conversation read only its own tokens
    # (llama.cpp counts one-token batches as decode, hence the margins)
    assert evaluated[0] >= n and evaluated[1] <= firsts[1].prompt_tokens < n / 4
    engine.llm.close()


def test_a_hybrid_re_read_is_not_reported_as_cached(tiny_qwen_gguf):
    """Without the cache, a second prompt sharing only the system block makes llama.cpp read the
    hybrid model's whole prompt again; the timing used to count the shared block as cached."""
    engine = _qwen(tiny_qwen_gguf["f16"], None)
    ids = _prompt(engine)
    engine.generate(ids, max_tokens=2)
    other = ids[:-8] + engine.tokenize("Is Monday free?") + ids[-8:]
    before = _prompt_tokens_evaluated(engine)
    timing = engine.generate(other, max_tokens=2).timing
    assert timing.cached_tokens == 0 and timing.prompt_tokens == len(other)
    assert _prompt_tokens_evaluated(engine) - before >= len(other) - 1
    engine.llm.close()


def test_a_changed_key_misses_and_a_stale_file_never_loads(tiny_qwen_gguf, tmp_path, caplog):
    cache = StateCache(tmp_path / "states")
    engine = _qwen(tiny_qwen_gguf["f16"], cache)
    ids = _prompt(engine)
    engine.prefix_states.prepare(ids)
    (saved,) = cache.entries()
    engine.llm.close()

    other = _qwen(tiny_qwen_gguf["f16"], cache, n_ctx=2048)  # another context size: another key
    assert other.prefix_states.key != engine.prefix_states.key
    n = system_prefix_len(ids, other.tokenize, other.detokenize)
    assert cache.path(other.prefix_states.key, ids[:n]) != saved
    # The old file put under the new key's name (a hash collision, a copied folder) is refused.
    os.replace(saved, cache.path(other.prefix_states.key, ids[:n]))
    with caplog.at_level(logging.WARNING, logger="botpsy.engine.state_cache"):
        assert other.prefix_states.prepare(ids) == 0  # a miss: prefilled, then saved under its key
    assert [r.message for r in caplog.records if "key does not match" in r.message]
    logits, restored = _resumed_logits(other, ids)
    assert restored is None  # held in memory now
    assert np.abs(logits - _full_prefill_logits(other, ids)).max() <= 1e-4
    other.llm.close()


def test_a_changed_model_file_changes_the_key(tiny_qwen_gguf, tmp_path):
    import shutil

    from botpsy.engine.state_cache import file_fingerprint

    copy = tmp_path / "model.gguf"
    shutil.copy(tiny_qwen_gguf["f16"], copy)
    before = file_fingerprint(copy)
    st = copy.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert file_fingerprint(copy) != before


@pytest.mark.parametrize("damage", ["truncate", "flip", "empty"])
def test_a_damaged_file_is_ignored_with_one_line_and_rebuilt(tiny_qwen_gguf, tmp_path, caplog, damage):
    cache = StateCache(tmp_path / "states")
    engine = _qwen(tiny_qwen_gguf["f16"], cache)
    ids = _prompt(engine)
    engine.prefix_states.prepare(ids)
    (path,) = cache.entries()
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        path.write_bytes(data[:100] + bytes([data[100] ^ 0xFF]) + data[101:])
    else:
        path.write_bytes(b"")
    engine.llm.close()

    fresh = _qwen(tiny_qwen_gguf["f16"], cache)
    with caplog.at_level(logging.WARNING, logger="botpsy.engine.state_cache"):
        logits, restored = _resumed_logits(fresh, ids)
    assert restored == 0  # not loaded: prefilled instead
    assert len([r for r in caplog.records if r.name == "botpsy.engine.state_cache"]) == 1
    assert path.read_bytes() == data  # rebuilt whole
    assert np.abs(logits - _full_prefill_logits(fresh, ids)).max() <= 1e-4
    fresh.llm.close()


def test_the_folder_stays_within_its_bound_least_recently_used_out(tiny_qwen_gguf, tmp_path):
    cache = StateCache(tmp_path / "states")
    engine = _qwen(tiny_qwen_gguf["f16"], cache)
    prompts = [_prompt(engine, f"You are assistant number {k}. " * 8) for k in range(3)]
    paths = []
    for ids in prompts[:2]:
        engine.llm.reset()
        engine.prefix_states.prepare(ids)
        paths.append(max(cache.entries(), key=lambda p: p.stat().st_mtime_ns))
    size = paths[0].stat().st_size
    # the first entry was used again: the second is now the least recently used
    os.utime(paths[1], ns=(1, 1))
    cache.max_bytes = int(2.5 * size)
    engine.llm.reset()
    engine.prefix_states.prepare(prompts[2])
    left = set(cache.entries())
    assert paths[0] in left and paths[1] not in left and len(left) == 2
    engine.llm.close()


def test_one_process_writes_a_bounded_number_of_files(tiny_qwen_gguf, tmp_path):
    """An evaluation whose items each bring their own tools must not write a file per item."""
    cache = StateCache(tmp_path / "states", max_saves=2)
    engine = _qwen(tiny_qwen_gguf["f16"], cache)
    for k in range(3):
        engine.llm.reset()
        assert engine.prefix_states.prepare(_prompt(engine, f"You are assistant number {k}. " * 8)) == 0
    assert len(cache.entries()) == 2 and not cache.disabled
    engine.llm.close()


def test_an_unwritable_folder_turns_the_cache_off_with_one_line(tiny_qwen_gguf, tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    engine = _qwen(tiny_qwen_gguf["f16"], StateCache(blocker / "states"))
    ids = _prompt(engine)
    with caplog.at_level(logging.WARNING, logger="botpsy.engine.state_cache"):
        gen = engine.generate(ids, max_tokens=2)
        engine.llm.reset()
        engine.generate(ids, max_tokens=2)
    assert gen.ids and engine.prefix_states.cache.disabled
    assert len([r for r in caplog.records if "cannot write" in r.message]) == 1
    engine.llm.close()
