"""Trainer plumbing the stages share: device and CPU arguments, the time budget, running a trainer
(with the out-of-memory advice), the run summary, and saving and resuming a stage checkpoint.
Loading a policy is `train/policy.py`; LoRA is `train/adapters.py`.

A stage checkpoint is a folder botpsy loads as a model: `hf/` (a merged Hugging Face checkpoint, LoRA
folded in, so the next stage and the transformers engine read it directly) and `manifest.json`
naming it. The recipe hands each stage the previous stage's best checkpoint this way.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any


def device_args(use_cpu: bool | None = None) -> dict[str, Any]:
    """Where a stage trains: the CPU in fp32, or the GPU in bf16 where it has it (the scale preset)."""
    import torch

    cpu = (not torch.cuda.is_available()) if use_cpu is None else use_cpu
    return {"use_cpu": cpu, "bf16": False if cpu else torch.cuda.is_bf16_supported(), "fp16": False}


def cpu_args(use_cpu: bool | None = None) -> dict[str, Any]:
    """TrainingArguments fields that the post-SFT stages share on this project's machines."""
    return {
        **device_args(use_cpu),
        "report_to": [],
        "dataloader_num_workers": 0,
        # On: a policy update runs over whole prompts (system + tools, ~1.6k tokens) for every
        # completion of a step, and CPU attention with a padding mask keeps each layer's
        # [batch, heads, L, L] probabilities for backward: 30 layers × 8 × 9 × 1.6k² fp32 ≈ 23 GB
        # for SmolLM2-135M. Without this the tiny preset's RL1 teacher reached 19.7 GB before the
        # OOM killer ended it on this 24 GB machine. Recomputing costs about a third more compute
        # and keeps one layer's at a time.
        "activation_checkpointing": True,
        "activation_checkpointing_kwargs": {"use_reentrant": False},
        "save_total_limit": 3,
        "logging_steps": 1,
    }


def save_checkpoint(model, tok, out_dir: Path, name: str, extra: dict | None = None) -> Path:
    """Fold LoRA into the weights, save `hf/` and a manifest.json that makes `out_dir` a model."""
    out_dir = Path(out_dir)
    merged = model.merge_and_unload() if hasattr(model, "merge_and_unload") else model
    merged.save_pretrained(out_dir / "hf")
    tok.save_pretrained(out_dir / "hf")
    manifest = {"name": name, "hf": "hf", "chat_format": "qwen35", "thinking": True, **(extra or {})}
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return out_dir


def last_checkpoint(folder: Path) -> str | None:
    folder = Path(folder)
    if not folder.exists():
        return None
    cks = sorted(
        (p for p in folder.glob("checkpoint-*") if (p / "trainer_state.json").exists()),
        key=lambda p: int(p.name.split("-")[-1]),
    )
    return str(cks[-1]) if cks else None


class TimeBudget:
    """TRL/transformers callback that ends training when the wall-clock budget is spent."""

    def __init__(self, minutes: float):
        from transformers import TrainerCallback

        budget = minutes * 60

        class _CB(TrainerCallback):
            def on_train_begin(self, args, state, control, **kw):
                self.t0 = time.time()

            def on_step_end(self, args, state, control, **kw):
                if budget > 0 and time.time() - self.t0 > budget:
                    control.should_training_stop = True
                return control

        self.callback = _CB()


def time_budget_callback(minutes: float):
    return [TimeBudget(minutes).callback] if minutes > 0 else []


def write_summary(out_dir: Path, trainer, t0: float, extra: dict | None = None) -> dict:
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    summary = {
        "steps": trainer.state.global_step,
        "train_seconds": round(time.time() - t0, 1),
        "first_loss": losses[0] if losses else None,
        "last_loss": losses[-1] if losses else None,
        **(extra or {}),
    }
    (Path(out_dir) / "train_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


OOM_KNOBS = {
    "mopd": "mopd.batch_size (then mopd.max_completion_length)",
    "rl1": "rl1.prompts_per_step or rl1.num_generations (then rl1.max_completion_length)",
    "rl2": "rl2.prompts_per_step or rl2.num_generations (then rl2.max_completion_length)",
}


def train(trainer, out_dir: Path, stage: str, log=print):
    """`trainer.train()`, resuming from the stage's last checkpoint; out of memory names the knob to turn."""
    resume = last_checkpoint(Path(out_dir) / "checkpoints")
    if resume:
        log(f"{stage}: resuming from {resume}")
    try:
        return trainer.train(resume_from_checkpoint=resume)
    except (MemoryError, RuntimeError) as e:
        if isinstance(e, RuntimeError) and "out of memory" not in str(e).lower():
            raise
        raise MemoryError(
            f"{stage} ran out of memory; lower {OOM_KNOBS.get(stage, 'the batch size')} with "
            f"--set, or enable vLLM rollouts on GPUs ({stage}.use_vllm=true). The run resumes from its last "
            "checkpoint when restarted."
        ) from e


def parse_pairs(pairs: tuple[str, ...], what: str) -> dict[str, str]:
    """`("a=1", "b=x")` -> {"a": "1", "b": "x"}: the key=value lists of the stage configs."""
    out = {}
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"{what} entries are 'key=value', got {p!r}")
        out[key.strip()] = value.strip()
    return out
