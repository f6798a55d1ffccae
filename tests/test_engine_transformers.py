"""The transformers backend against the llama.cpp backend on the same tiny Qwen3.5 model (f16 GGUF)."""

from __future__ import annotations

import pytest

from botpsy.engine.base import EngineError


def test_missing_model_folder_is_a_clear_error(tmp_path):
    from botpsy.engine.transformers_engine import TransformersEngine

    with pytest.raises(EngineError, match="no config.json"):
        TransformersEngine(tmp_path / "nowhere")


@pytest.fixture(scope="module")
def engines(tiny_qwen_dir, tiny_qwen_gguf):
    pytest.importorskip("torch")
    from botpsy.engine.llamacpp import LlamaCppEngine
    from botpsy.engine.transformers_engine import TransformersEngine

    hf = TransformersEngine(tiny_qwen_dir)
    cpp = LlamaCppEngine(tiny_qwen_gguf["f16"], n_ctx=2048, n_threads=1)
    yield hf, cpp
    cpp.llm.close()


def _prompt(engine) -> list[int]:
    from botpsy.data.sft import conversation_messages
    from botpsy.protocol.formats import ChatFormat
    from botpsy.worlds import get_domain

    msgs = conversation_messages(get_domain("calendar").generate(1, seed=4, split="eval"))
    return engine.tokenize(ChatFormat("qwen35").render(msgs, None, add_generation_prompt=True))


def test_same_format_and_tokens(engines):
    hf, cpp = engines
    assert hf.chat_format == cpp.chat_format and hf.chat_format.name == "qwen35"
    assert hf.turn_end.ids == cpp.turn_end.ids and hf.turn_end.ids[0] in hf.stop_ids
    ids = _prompt(hf)
    assert cpp.tokenize(hf.detokenize(ids)) == ids


NEAR_TIE = 0.01  # f16 weights move this random model's logits by ~1e-3; closer calls may flip


def assert_greedy_agree(hf, prompt: list[int], a: list[int], b: list[int]) -> int:
    """Two greedy continuations agree, except after a near tie; returns how many ids agreed.

    A random model's top two logits are often within a few thousandths, so where the engines part
    the transformers logits must show a near tie between their two choices — anything else is a bug.
    """
    import numpy as np

    from botpsy.export.parity import hf_next_token_logits

    k = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    if k is None:
        assert len(a) == len(b)
        return len(a)
    logits = hf_next_token_logits(hf.model, prompt + a[:k])
    gap = float(logits[a[k]] - logits[b[k]])
    assert int(np.argmax(logits)) == a[k] and gap < NEAR_TIE, f"diverged at {k} with a logit gap of {gap:.4f}"
    return k


def test_greedy_tokens_match_llamacpp(engines, one_torch_thread):
    hf, cpp = engines
    ids = _prompt(hf)
    a = hf.generate(ids, max_tokens=12)
    b = cpp.generate(ids, max_tokens=12)
    agreed = assert_greedy_agree(hf, ids, a.ids, b.ids)
    if agreed == len(a.ids):
        assert a.text == b.text and a.stop == b.stop
    assert len(set(a.ids)) > 3  # the random model does not just repeat one token
    assert a.timing.prompt_tokens == len(ids)
    assert a.timing.generated_tokens == len(a.ids) - (a.stop == "length")


def test_prefix_cache_extends_and_resets(engines, one_torch_thread):
    hf, _ = engines
    hf.reset()
    ids = _prompt(hf)
    first = hf.generate(ids, max_tokens=6)
    turn = (
        ids
        + first.ids
        + hf.tokenize("\n" + hf.chat_format.user("And on Friday?") + hf.chat_format.generation_prompt())
    )
    second = hf.generate(turn, max_tokens=6)
    # Fed so far: the prompt and every generated id but the last one picked (and never the
    # end-of-turn id appended when the cap was hit).
    fed_before = len(ids) + len(first.ids) - 1 - (first.stop == "length")
    assert second.timing.cached_tokens == fed_before
    assert second.timing.prompt_tokens == len(turn) - fed_before
    hf.reset()
    fresh = hf.generate(turn, max_tokens=6)
    assert fresh.timing.cached_tokens == 0 and fresh.ids == second.ids
    # A prompt that diverges from the cache: linear-attention state cannot roll back, so start over.
    other = hf.generate(ids[:-3] + hf.tokenize("x"), max_tokens=2)
    assert other.timing.cached_tokens == 0


def test_streaming_pieces_add_up_to_the_text(engines, one_torch_thread):
    hf, _ = engines
    pieces: list[str] = []
    gen = hf.generate(_prompt(hf), max_tokens=10, on_text=pieces.append)
    assert "".join(pieces) == gen.text


def test_agent_step_agrees_on_both_engines(engines, one_torch_thread):
    from botpsy.agent.loop import Agent, AgentConfig
    from botpsy.worlds import get_domain, make_world

    dom = get_domain("calendar")
    task = dom.generate(1, seed=2, split="eval")[0]
    traces = []
    for engine in engines:
        if hasattr(engine, "reset"):
            engine.reset()
        agent = Agent(
            engine, make_world(dom, task), system=task.system, config=AgentConfig(max_steps=1, max_tokens=10)
        )
        traces.append(agent.send(task.user))
    hf_trace, cpp_trace = traces
    for tr in traces:
        assert tr.stopped in ("answer", "token_cap", "step_limit") and len(tr.timings) == 1
    # The agent's first generated run, identical up to a near tie; the prompts before it exactly so.
    start = hf_trace.generated_mask.index(1)
    assert hf_trace.token_ids[:start] == cpp_trace.token_ids[:start]
    assert cpp_trace.generated_mask.index(1) == start

    def generated(tr):
        mask = tr.generated_mask[start:]
        n = mask.index(0) if 0 in mask else len(mask)
        return tr.token_ids[start : start + n]

    assert_greedy_agree(engines[0], hf_trace.token_ids[:start], generated(hf_trace), generated(cpp_trace))


def test_loads_the_checkpoint_a_model_folder_names(tmp_path, tiny_qwen_dir):
    import json

    from botpsy.engine.transformers_engine import _hf_folder

    (tmp_path / "manifest.json").write_text(
        json.dumps({"base": "model-Q8_0.gguf", "hf": str(tiny_qwen_dir), "thinking": False})
    )
    assert _hf_folder(tmp_path) == (tiny_qwen_dir, False)
    (tmp_path / "manifest.json").write_text(json.dumps({"base": "model-Q8_0.gguf"}))
    with pytest.raises(EngineError, match="names no Hugging Face checkpoint"):
        _hf_folder(tmp_path)
