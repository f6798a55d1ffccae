"""llama.cpp rollouts sample from the policy under training (train/llama_rollout.py).

The student's f16 GGUF plus the LoRA written from the live PEFT model must give llama.cpp the same
next-token distribution as the torch policy; without the adapter it must not (so the check can fail).
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("llama_cpp")


def test_student_plus_lora_gguf_matches_the_peft_policy(tiny_llama_dir, tmp_path):
    from llama_cpp import Llama
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from botpsy.export.parity import compare, gguf_next_token_logits, hf_next_token_logits
    from botpsy.train.adapters import lora_config
    from botpsy.train.llama_rollout import adapter_gguf, student_gguf

    student = tmp_path / "student"
    AutoModelForCausalLM.from_pretrained(tiny_llama_dir).save_pretrained(student)
    AutoTokenizer.from_pretrained(tiny_llama_dir).save_pretrained(student)
    model = get_peft_model(AutoModelForCausalLM.from_pretrained(student), lora_config(4, 8))
    torch.manual_seed(0)
    with torch.no_grad():  # PEFT starts B at zero; give the adapter a real effect
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    model.eval()
    tok = AutoTokenizer.from_pretrained(student)
    ids = tok("<|im_start|>user\nAdd a dentist appointment<|im_end|>\n", add_special_tokens=False)[
        "input_ids"
    ]
    policy = hf_next_token_logits(model, ids)
    gguf = student_gguf(str(student))
    adapter = adapter_gguf(model, tmp_path / "lora.gguf")
    with_lora = Llama(model_path=str(gguf), lora_path=str(adapter), n_ctx=256, verbose=False)
    plain = Llama(model_path=str(gguf), n_ctx=256, verbose=False)
    try:
        ours = compare(policy, gguf_next_token_logits(with_lora, ids))
        base = compare(policy, gguf_next_token_logits(plain, ids))
    finally:
        with_lora.close()
        plain.close()
    assert ours.correlation > 0.999 and ours.same_top1
    assert ours.max_abs_diff < 0.05 * float(np.abs(policy).max())
    assert base.max_abs_diff > 10 * ours.max_abs_diff  # the adapter is what makes them agree
