"""A micro SFT run through the real stack: TRL + PEFT on the embedded base, LoRA → GGUF, llama.cpp loads it."""

import json

import pytest

pytestmark = pytest.mark.slow


def test_micro_sft_stage_end_to_end(tmp_path):
    pytest.importorskip("trl")
    from botpsy.train.recipe import run_recipe

    assert run_recipe("micro", "sft", str(tmp_path), False, []) == 0
    stage = tmp_path / "micro" / "sft"
    summary = json.loads((stage / "train_summary.json").read_text())
    assert summary["steps"] == 2 and summary["train_loss"] > 0
    assert (stage / "adapter.gguf").read_bytes()[:4] == b"GGUF"
    figures = json.loads((stage / "eval.json").read_text())
    assert figures["n"] == 5 and 0.0 <= figures["success"] <= 1.0


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_shared_prefix_loss_equals_plain_loss(arch):
    """The prefix-sharing trainer computes the same loss as a plain forward pass (it only saves compute).

    Gemma 3 interleaves sliding-window layers; its window (4) is shorter than the sequence here, so
    the shared cache must carry the window across the prefix boundary.
    """
    torch = pytest.importorskip("torch")
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig, LlamaConfig, LlamaForCausalLM

    from botpsy.train.sft import make_trainer_class

    torch.manual_seed(0)
    shape = dict(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, vocab_size=97
    )
    if arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(num_key_value_heads=2, **shape))
    else:
        kinds = ["sliding_attention", "full_attention"]
        config = Gemma3TextConfig(
            num_key_value_heads=1, head_dim=16, sliding_window=4, layer_types=kinds, **shape
        )
        model = Gemma3ForCausalLM(config)
    prefix = [5, 6, 7, 8, 9, 10]
    ids = torch.tensor([prefix + [11, 12, 13, 14, 0], prefix + [21, 22, 23, 24, 25]])
    attn = torch.tensor([[1] * 10 + [0], [1] * 11])
    labels = ids.clone()
    labels[:, :8] = -100
    labels[attn == 0] = -100
    trainer_cls = make_trainer_class()
    trainer_cls.block_end = staticmethod(lambda row: row.index(10) + 1)  # the "system block" is [5..10]
    ours = trainer_cls.compute_loss(
        object.__new__(trainer_cls), model, {"input_ids": ids, "attention_mask": attn, "labels": labels}
    )
    plain = model(input_ids=ids, attention_mask=attn, labels=labels).loss
    assert torch.allclose(ours, plain, atol=1e-5)


def test_micro_recipe_all_stages_on_the_embedded_base(tmp_path):
    """sft → mopd → rl1 → rl2 on SmolLM2-135M, a few steps each: the CI run of the whole recipe."""
    pytest.importorskip("trl")
    from botpsy.train.presets import STAGES
    from botpsy.train.recipe import run_recipe

    assert run_recipe("micro", ",".join(STAGES), str(tmp_path), False, []) == 0
    root = tmp_path / "micro"
    report = json.loads((root / "recipe-micro.json").read_text())
    assert [s["stage"] for s in report["stages"]] == ["base", *STAGES]
    for row in report["stages"][1:]:
        assert row["train"]["steps"] >= 2 and 0.0 <= row["success"] <= 1.0
        assert row["reasoning_loop_rate"] is not None
    assert (root / "recipe-micro.md").read_text().count("\n|") >= 6
