"""The scale preset's smoke run: its plan is the scale preset with only the run sizes cut."""

from __future__ import annotations

import dataclasses

import pytest

from botpsy.export.lora_gguf import gguf_arch
from botpsy.train.presets import resolve
from botpsy.train.scale_smoke import SMOKE_SIZES, main, markdown, smoke_plan


def test_smoke_plan_keeps_the_scale_settings_and_cuts_the_sizes():
    plan = smoke_plan(steps=2, teacher="/ckpt/teacher", minutes=1.5)
    full = resolve(
        "scale",
        ["sft", "mopd", "rl1", "rl2"],
        ["mopd.teachers=tool_use=/t,reasoning=/t,instruction_following=/t"],
    )["stages"]
    for stage, cfg in plan.items():
        ref = full[stage]["config"]
        assert cfg.max_steps == 2 and cfg.time_budget_min == 1.5
        changed = {f.name for f in dataclasses.fields(cfg) if getattr(cfg, f.name) != getattr(ref, f.name)}
        allowed = {"max_steps", "time_budget_min", "use_vllm", "teachers", *SMOKE_SIZES[stage]}
        assert changed <= allowed, (stage, changed - allowed)
        assert getattr(cfg, "use_vllm", False) is False
    # the settings that make it the scale preset stay: LoRA rank, DAPO, group size, sequence length
    assert plan["sft"].lora_r == 64 and plan["sft"].max_length == 8192
    assert plan["rl1"].loss_type == "dapo" and plan["rl1"].num_generations == 16
    assert plan["mopd"].teachers == (
        "tool_use=/ckpt/teacher",
        "reasoning=/ckpt/teacher",
        "instruction_following=/ckpt/teacher",
    )
    # SFT gets enough conversations for its steps at the preset's batch
    assert plan["sft"].conversations >= 2 * plan["sft"].batch_size * plan["sft"].grad_accum


def test_smoke_plan_takes_overrides_and_refuses_unknown_ones():
    plan = smoke_plan(1, "/t", 1.0, ["rl2.max_completion_length=64"])
    assert plan["rl2"].max_completion_length == 64
    with pytest.raises(ValueError, match="no setting"):
        smoke_plan(1, "/t", 1.0, ["rl1.not_a_field=3"])


def test_markdown_names_failed_stages():
    report = {
        "command": "python -m botpsy.train.scale_smoke --out x",
        "machine": {
            "device": "GPU",
            "torch": "2",
            "transformers": "5",
            "trl": "1",
            "flash_linear_attention": False,
        },
        "shape": "qwen3.5-0.8b",
        "parameters": 752_393_024,
        "overrides": {},
        "stages": [
            {
                "stage": "sft",
                "steps": 2,
                "train_s": 10.0,
                "s_per_step": 5.0,
                "tokens_per_s": 900.0,
                "peak_gb": 20.5,
                "error": None,
                "sizes": {"batch_size": 8},
            },
            {
                "stage": "rl1",
                "steps": 0,
                "train_s": None,
                "s_per_step": None,
                "tokens_per_s": None,
                "peak_gb": 1.0,
                "error": "MemoryError: rl1 ran out of memory",
                "sizes": {},
            },
        ],
    }
    md = markdown(report)
    assert "| sft | 2 | 10.0 | 5.0 | 900.0 | 20.5 | batch_size=8 |  |" in md
    assert "MemoryError: rl1 ran out of memory" in md


def test_missing_model_folder_is_a_clear_error(tmp_path, capsys):
    assert main(["--out", str(tmp_path / "o"), "--model", str(tmp_path / "nope"), "--stages", "sft"]) == 2
    assert "holds no Hugging Face model" in capsys.readouterr().err


def test_adapter_architecture_follows_the_model_type():
    class Cfg:
        model_type = "qwen3_5_text"

    assert gguf_arch(Cfg) == "qwen35"
    Cfg.model_type = "llama"
    assert gguf_arch(Cfg) == "llama"
    Cfg.model_type = "gpt2"
    with pytest.raises(ValueError, match="no llama.cpp architecture known for model type 'gpt2'"):
        gguf_arch(Cfg)
