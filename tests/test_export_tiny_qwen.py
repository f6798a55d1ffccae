"""The Qwen3.5 export path on a tiny model botpsy builds itself: HF → GGUF → llama.cpp, checked
against transformers (logits, tokenization, chat template, quantization types)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from botpsy.export.tiny_qwen import (
    QWEN_ADDED_TOKENS,
    QWEN_SPECIAL_TOKENS,
    TinyQwenShape,
    corpus_texts,
    quantization_blockers,
    train_tokenizer,
)

K_QUANTS = {"Q4_K", "Q5_K", "Q6_K"}


# ---- fast: no model --------------------------------------------------------------------------


def test_default_shape_quantizes_without_fallback():
    assert quantization_blockers(TinyQwenShape()) == []
    bad = replace(TinyQwenShape(), intermediate_size=576, linear_value_head_dim=96)
    assert quantization_blockers(bad) == [
        "intermediate_size=576",
        "linear_num_value_heads*linear_value_head_dim=192",
    ]


def test_tokenizer_has_qwen_tokens_after_the_learned_vocabulary():
    pytest.importorskip("tokenizers")
    tok = train_tokenizer(corpus_texts(20), 4096)
    vocab = tok.get_vocab()
    added = QWEN_SPECIAL_TOKENS + QWEN_ADDED_TOKENS
    ids = [vocab[t] for t in added]
    assert ids == list(range(len(vocab) - len(added), len(vocab)))  # appended, in Qwen's order
    text = "<|im_start|>assistant\n<think>\nok\n</think>\n\n<tool_call>\n<function=list_events>\n</function>\n</tool_call><|im_end|>"
    enc = tok.encode(text)
    for t in ("<|im_start|>", "<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>"):
        assert vocab[t] in enc.ids, t
    assert tok.decode(enc.ids, skip_special_tokens=False) == text
    assert tok.decode(tok.encode("naïve café — 10:30 ☕").ids) == "naïve café — 10:30 ☕"


# ---- the built model ---------------------------------------------------------------------------


def test_tiny_model_is_qwen35_with_botpsy_template(tiny_qwen_dir):
    from transformers import AutoTokenizer

    from botpsy.data.sft import conversation_messages
    from botpsy.protocol.formats import ChatFormat, template_text
    from botpsy.worlds import get_domain

    cfg = json.loads((tiny_qwen_dir / "config.json").read_text())
    assert cfg["architectures"] == ["Qwen3_5ForCausalLM"] and cfg["model_type"] == "qwen3_5_text"
    assert cfg["layer_types"] == ["linear_attention"] * 3 + ["full_attention"]
    tok = AutoTokenizer.from_pretrained(str(tiny_qwen_dir))
    assert len(tok) == cfg["vocab_size"]
    assert tok.chat_template == template_text("qwen35")
    assert tok.eos_token == "<|im_end|>" and cfg["eos_token_id"] == tok.convert_tokens_to_ids("<|im_end|>")

    dom = get_domain("calendar")
    msgs = conversation_messages(dom.generate(2, seed=11, split="eval"))
    tools = [t.schema() for t in dom.tools]
    ours = ChatFormat("qwen35").render(msgs, tools, add_generation_prompt=True)
    theirs = tok.apply_chat_template(
        [m.to_openai() for m in msgs], tools=tools, tokenize=False, add_generation_prompt=True
    )
    assert ours == theirs


def test_gguf_carries_architecture_tokenizer_and_chat_template(tiny_qwen_dir, tiny_qwen_gguf):
    from transformers import AutoTokenizer

    from botpsy.engine.llamacpp import LlamaCppEngine
    from botpsy.export.gguf import metadata
    from botpsy.protocol.formats import detect_format

    meta = metadata(tiny_qwen_gguf["f16"])
    assert meta["general.architecture"] == "qwen35"
    assert meta["tokenizer.ggml.model"] == "gpt2" and meta["tokenizer.ggml.pre"] == "qwen35"
    eng = LlamaCppEngine(tiny_qwen_gguf["f16"], n_ctx=1024, n_threads=1)
    try:
        assert detect_format(eng.llm.metadata["tokenizer.chat_template"]) == "qwen35"
        assert eng.chat_format.name == "qwen35"
        tok = AutoTokenizer.from_pretrained(str(tiny_qwen_dir))
        text = corpus_texts(2, seed=5)[0] + "Déjà vu: naïve café — 10:30 ☕ 東京"
        assert eng.tokenize(text) == tok.encode(text, add_special_tokens=False)
        assert eng.detokenize(eng.tokenize(text)) == text
    finally:
        eng.llm.close()


@pytest.mark.parametrize("qtype, allowed", [("Q8_0", {"Q8_0"}), ("Q4_K_M", K_QUANTS)])
def test_quantization_really_applies(tiny_qwen_gguf, qtype, allowed):
    """Every matrix stored as F16 before is stored in the target type after: no silent fallback."""
    from botpsy.export.gguf import tensor_types

    before = tensor_types(tiny_qwen_gguf["f16"])
    after = tensor_types(tiny_qwen_gguf[qtype])
    matrices = [n for n, t in before.items() if t == "F16"]
    assert len(matrices) >= 30  # embeddings, output, and every projection of the 4 layers
    assert {n: after[n] for n in matrices if after[n] not in allowed} == {}
    assert {n: t for n, t in after.items() if n not in matrices and t != before[n]} == {}
    if qtype == "Q4_K_M":
        kinds = [after[n] for n in matrices]
        assert kinds.count("Q4_K") > kinds.count("Q6_K") > 0


@pytest.fixture(scope="module")
def reference(tiny_qwen_dir):
    """Token ids of a rendered conversation and transformers' fp32 next-token logits after them."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from botpsy.export.parity import hf_next_token_logits
    from botpsy.export.release import parity_ids

    tok = AutoTokenizer.from_pretrained(str(tiny_qwen_dir))
    ids = parity_ids(lambda t: tok.encode(t, add_special_tokens=False))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_qwen_dir), dtype=torch.float32).eval()
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return ids, hf_next_token_logits(model, ids)
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("qtype, min_corr", [("f16", 0.999), ("Q8_0", 0.99), ("Q4_K_M", 0.93)])
def test_gguf_logits_match_transformers(tiny_qwen_gguf, reference, qtype, min_corr):
    from botpsy.engine.llamacpp import LlamaCppEngine
    from botpsy.export.parity import compare, gguf_next_token_logits

    ids, ref = reference
    assert len(ids) > 200 and ref.shape == (
        json.loads((tiny_qwen_gguf["f16"].parent / "hf" / "config.json").read_text())["vocab_size"],
    )
    eng = LlamaCppEngine(tiny_qwen_gguf[qtype], n_ctx=1024, n_threads=1)
    try:
        parity = compare(ref, gguf_next_token_logits(eng.llm, ids))
    finally:
        eng.llm.close()
    assert parity.correlation > min_corr, parity
    if qtype != "Q4_K_M":
        assert parity.same_top1, parity


def test_export_model_writes_a_resolvable_folder(tiny_qwen_dir, tmp_path):
    from botpsy.engine.load import load_engine
    from botpsy.export.release import export_model
    from botpsy.models import resolve

    manifest = export_model(tiny_qwen_dir, tmp_path, name="tiny-test", check_parity=False)
    m = json.loads(manifest.read_text())
    assert m["base"] == "model-Q8_0.gguf" and m["chat_format"] == "qwen35" and m["adapter"] is None
    assert set(m["files"]) == {"f16", "Q8_0", "Q4_K_M"}
    spec = resolve(tmp_path)
    assert spec.base == tmp_path / "model-Q8_0.gguf" and spec.name == "tiny-test"
    eng = load_engine(tmp_path, n_ctx=512, n_threads=1)
    try:
        assert eng.name == "tiny-test" and eng.chat_format.name == "qwen35"
        gen = eng.generate(eng.tokenize("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"), 4)
        assert 1 <= len(gen.ids) <= 5
    finally:
        eng.llm.close()
    report = json.loads((tmp_path / "export_report.json").read_text())
    assert (
        report["files"]["Q4_K_M"]["bytes"]
        < report["files"]["Q8_0"]["bytes"]
        < report["files"]["f16"]["bytes"]
    )


def test_convert_rejects_a_folder_without_config(tmp_path):
    from botpsy.export.gguf import ExportError, convert_hf_to_gguf

    with pytest.raises(ExportError, match="no config.json"):
        convert_hf_to_gguf(tmp_path, tmp_path / "x.gguf")


@pytest.mark.slow
def test_export_tiny_end_to_end(tmp_path, one_torch_thread):
    """`export_tiny` as the CLI calls it: build (with two training steps), convert, quantize, check parity."""
    from botpsy.export.release import export_tiny
    from botpsy.models import resolve

    manifest = export_tiny(tmp_path, seed=1, train_steps=2)
    m = json.loads(manifest.read_text())
    assert m["name"] == "tiny-qwen35-2steps" and m["hf"] == "hf"
    assert resolve(tmp_path).base.name == "model-Q8_0.gguf"
    for f in ("model-f16.gguf", "model-Q8_0.gguf", "model-Q4_K_M.gguf"):
        assert (tmp_path / f).read_bytes()[:4] == b"GGUF"
    parity = json.loads((tmp_path / "export_report.json").read_text())["parity"]
    assert parity["model-f16.gguf"]["correlation"] > 0.999
    assert parity["model-Q8_0.gguf"]["correlation"] > 0.99
    assert parity["model-Q4_K_M.gguf"]["correlation"] > 0.9
    info = json.loads((tmp_path / "hf" / "botpsy_tiny.json").read_text())
    assert info["train_steps"] == 2 and info["seed"] == 1


@pytest.mark.parametrize("pre", ["qwen2", "qwen35"])
def test_pre_tokenizer_is_named_from_the_split_regex(tmp_path, pre):
    """The converter would reject our vocabulary by hash; the split regex names llama.cpp's rule."""
    pytest.importorskip("tokenizers")
    from botpsy.export.gguf import split_regex_pre_tokenizer

    train_tokenizer(corpus_texts(4), 512, pre).save(str(tmp_path / "tokenizer.json"))
    assert split_regex_pre_tokenizer(tmp_path) == pre
    (tmp_path / "tokenizer.json").write_text('{"pre_tokenizer": {"type": "Whitespace"}}')
    assert split_regex_pre_tokenizer(tmp_path) is None
