"""Stage 1 — SFT: LoRA on gold world conversations with TRL's `SFTTrainer`, exported as a GGUF adapter.

What it does: generates training conversations from the worlds (several requests per
conversation, so the long tool prompt is paid once per sequence), tokenizes them block by block
as the agent will (`botpsy.data.sft`), trains a PEFT LoRA with loss on assistant tokens only
(`assistant_masks`), writes the adapter as GGUF, and a `manifest.json` that makes the output
folder a model botpsy can load (`--model runs/…/sft`).

Changed from the BotPsy recipe and why: BotPsy fully fine-tunes a 0.8B model on GPUs; the tiny
preset adapts a 135M pretrained base (SmolLM2-135M-Instruct, the only small instruct model
installable offline here) with LoRA, because that is what an hour of a 2-core CPU can train and
because the committed artifact is then a few-MB adapter, not base weights.

Command: `botpsy recipe --preset tiny --stages sft` (with the recipe's evaluations), or the stage
alone: `python -m botpsy.train.sft --preset tiny --out runs/sft-all [--set sft.FIELD=VALUE ...]`.

Data and training can run on different machines: `--data-only` writes the tokenized examples
(`OUT/train.jsonl.gz`, about 0.5 byte per token) and stops; `--set sft.examples=FILE` trains on
them. Shards built in parallel with different `sft.seed`s join with `cat`. The embedded adapter
was trained this way on a lent GPU: its model card has the commands.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from botpsy.data.mix import first_replies, mix_conversations, replies_line
from botpsy.data.mix_config import mix_of
from botpsy.data.public import dataset_examples
from botpsy.data.sft import mix_examples, prepend_bos, read_examples, write_jsonl
from botpsy.engine.base import bos_ids
from botpsy.protocol.blocks import hf_encoder
from botpsy.protocol.formats import IM_END, ChatFormat
from botpsy.train.adapters import continued_lora, init_adapter_source, lora_config, save_adapter_model
from botpsy.train.common import TimeBudget, device_args
from botpsy.train.policy import load_base
from botpsy.train.presets import resolve
from botpsy.train.sft_config import SFTStageConfig


def make_trainer_class():
    """`SFTTrainer` with two CPU savings that do not change what is learned on assistant tokens.

    1. *Shared prefix.* Every sequence opens with a system block (tools and instructions, ~900
       tokens, half of a sequence); the part of it that the batch's rows share (all of it with one
       row per batch, or rows of one world) is run once without gradient and its key/value cache
       is shared by the batch, instead of a forward and backward pass per sequence.
       The LoRA weights still shape that prefix (it is recomputed with the current weights each
       step); only the gradient path *through* the prefix activations is cut.
    2. *Masked head.* The 49k-wide output projection runs only at positions that carry a label
       (~25% of tokens), instead of over every position as the default loss does.
    Measured on this CPU: see the note of the issue that introduced it (≈2x tokens/s).
    """
    import torch
    import torch.nn.functional as F
    from trl import SFTTrainer

    class PrefixSharingSFTTrainer(SFTTrainer):
        block_end = None  # row ids -> the position just past the system block (`system_block_end`)

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            ids, labels = inputs["input_ids"], inputs["labels"]
            mask = inputs.get("attention_mask")
            if mask is None:
                mask = torch.ones_like(ids)
            n_pre = shared_system_prefix(ids.tolist(), labels.tolist(), self.block_end)
            if n_pre == 0:
                raise ValueError("every training sequence must start with an untrained system block")
            prefix = ids[0, :n_pre]
            lm = model.get_base_model() if hasattr(model, "get_base_model") else model
            body, head = lm.model, lm.lm_head
            with torch.no_grad():
                cache = body(input_ids=prefix[None], use_cache=True).past_key_values
            cache.batch_repeat_interleave(ids.shape[0])
            ones = torch.ones(ids.shape[0], n_pre, dtype=mask.dtype, device=mask.device)
            full_mask = torch.cat([ones, mask[:, n_pre:]], dim=1)
            hidden = body(
                input_ids=ids[:, n_pre:], attention_mask=full_mask, past_key_values=cache, use_cache=True
            ).last_hidden_state
            target = labels[:, n_pre + 1 :]
            hidden = hidden[:, :-1]
            keep = target != -100
            logits = head(hidden[keep])
            total = F.cross_entropy(logits.float(), target[keep], reduction="sum")
            denom = num_items_in_batch if num_items_in_batch is not None else keep.sum().clamp(min=1)
            loss = total / denom
            return (loss, None) if return_outputs else loss

    PrefixSharingSFTTrainer.model_accepts_loss_kwargs = True
    return PrefixSharingSFTTrainer


def run_sft(cfg: SFTStageConfig, out_dir: Path, log=print, data_only: bool = False) -> dict:
    """Train (or, with `data_only`, only build and write the tokenized examples as
    `train.jsonl.gz`, for `sft.examples` on another machine) and export the adapter."""
    import torch
    from datasets import Dataset
    from peft import get_peft_model
    from trl import SFTConfig, SFTTrainer

    init = init_adapter_source(cfg.init_adapter) if cfg.init_adapter and not data_only else None
    if cfg.examples and data_only:
        raise ValueError("--data-only builds examples; sft.examples reads built ones: give one of them")
    # which weights it started from: "embedded" names a different adapter after each release
    init_sha = hashlib.sha256(init.read_bytes()).hexdigest() if init and init.suffix == ".gguf" else None
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps(asdict(cfg), indent=2))
    torch.set_num_threads(cfg.threads or os.cpu_count() or 2)
    torch.manual_seed(cfg.seed)

    log(f"loading base {cfg.base}")
    model, tok = load_base(cfg.base)
    examples, replies = training_examples(cfg, tok, log)
    vocab = model.get_input_embeddings().num_embeddings
    top = max(max(e["input_ids"]) for e in examples) if cfg.examples else 0  # generated: tok's own ids
    if top >= vocab:
        raise ValueError(
            f"sft.examples={cfg.examples}: token id {top} is outside {cfg.base}'s vocabulary "
            f"({vocab}): the file was built for another base"
        )
    n_tokens = sum(len(e["input_ids"]) for e in examples)
    n_train = sum(sum(e["assistant_masks"]) for e in examples)
    if not cfg.examples:
        write_jsonl(examples, out_dir / ("train.jsonl.gz" if data_only else "train.jsonl"))
    elif (Path(cfg.examples).parent / "config.json").is_file():
        # the config that built the examples (a --data-only run's), kept with the run that used them
        shutil.copyfile(Path(cfg.examples).parent / "config.json", out_dir / "data_config.json")
    log(f"{len(examples)} conversations, {n_tokens} tokens ({n_train} trained on)")
    if data_only:
        summary = {"conversations": len(examples), "tokens": n_tokens, "trained_tokens": n_train}
        if replies is not None:
            summary["first_replies"] = replies  # of the generated conversations (`data.mix.first_replies`)
        (out_dir / "data_summary.json").write_text(json.dumps(summary, indent=2))
        return summary

    if init:
        model = continued_lora(model, str(init), out_dir, "sft.init_adapter")
        lora = model.peft_config["default"]
        log(f"continuing from {init} (LoRA r {lora.r}, alpha {lora.lora_alpha})")
    else:
        model = get_peft_model(model, lora_config(cfg.lora_r, cfg.lora_alpha, cfg.lora_targets))
    args = SFTConfig(
        output_dir=str(out_dir / "checkpoints"),
        per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        learning_rate=cfg.learning_rate,
        lr_scheduler_type="cosine",
        warmup_steps=5,
        num_train_epochs=cfg.epochs,
        max_steps=cfg.max_steps,
        max_length=cfg.max_length,
        logging_steps=5,
        save_strategy="steps",
        save_steps=20,
        save_total_limit=1,
        report_to=[],
        dataloader_num_workers=0,
        # TRL's dataset preparation (labels from assistant_masks, truncation) in parallel for the
        # tens of thousands of examples a GPU run takes; one process for the CPU preset's hundreds
        dataset_num_proc=min(8, os.cpu_count() or 1) if len(examples) > 2000 else None,
        seed=cfg.seed,
        **device_args(),
        gradient_checkpointing=False,  # recomputation costs a third more compute; memory is not the limit here
    )
    trainer_cls = make_trainer_class() if cfg.shared_prefix else SFTTrainer
    trainer_cls.block_end = staticmethod(lambda row: system_block_end(row, tok.decode))
    trainer = trainer_cls(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(examples),
        processing_class=tok,
        callbacks=[TimeBudget(cfg.time_budget_min).callback] if cfg.time_budget_min > 0 else None,
    )
    resume = _last_checkpoint(out_dir / "checkpoints")
    if resume:
        log(f"resuming from {resume}")
    t0 = time.time()
    result = trainer.train(resume_from_checkpoint=resume)
    train_s = time.time() - t0
    save_adapter_model(model, out_dir, cfg.base, "botpsy-sft-" + out_dir.name)
    steps = trainer.state.global_step
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    summary = {
        "steps": steps,
        "train_seconds": round(train_s, 1),
        "tokens_per_second": round(
            n_tokens * (steps * cfg.batch_size * cfg.grad_accum / max(len(examples), 1)) / max(train_s, 1e-9),
            1,
        ),
        "first_loss": losses[0] if losses else math.nan,
        "last_loss": losses[-1] if losses else math.nan,
        "train_loss": result.training_loss,
        "conversations": len(examples),
        "tokens": n_tokens,
        "init_adapter": cfg.init_adapter or None,
        **({"init_adapter_sha256": init_sha} if init_sha else {}),
    }
    (out_dir / "train_summary.json").write_text(json.dumps(summary, indent=2))
    log(f"done: {summary}")
    return summary


def training_examples(cfg: SFTStageConfig, tok, log=print) -> tuple[list[dict[str, list[int]]], dict | None]:
    """The tokenized examples of a run: read from `cfg.examples`, or generated from the worlds (and
    `cfg.datasets`) and tokenized block by block as the agent sees them; and how the generated
    conversations first answer their requests (`data.mix.first_replies`; None for read examples)."""
    replies = None
    if cfg.examples:
        examples = read_examples(Path(cfg.examples))
        log(f"examples from {cfg.examples}: the mix fields of this config are not used")
    else:
        fmt = ChatFormat("qwen35")

        tokenize = hf_encoder(tok)
        convs = mix_conversations(cfg.conversations, cfg.seed, mix_of(cfg))
        examples = mix_examples(convs, fmt, tokenize)
        sources: dict[str, int] = {}
        for c in convs:
            sources[c.source] = sources.get(c.source, 0) + 1
        log("conversations by source: " + ", ".join(f"{k} {v}" for k, v in sorted(sources.items())))
        replies = first_replies(convs)
        log(replies_line(replies, len(convs)))
        if cfg.datasets:
            extra, skipped = dataset_examples(cfg.datasets, fmt, tokenize, log)
            log(f"public datasets: {len(extra)} conversations added, {skipped} rows skipped")
            examples += extra
        prepend_bos(examples, bos_ids(tok))
    if not any(1 in e["assistant_masks"][: cfg.max_length] for e in examples):
        first = min(e["assistant_masks"].index(1) for e in examples if 1 in e["assistant_masks"])
        raise ValueError(
            f"sft.max_length={cfg.max_length} cuts every conversation before its first assistant token "
            f"(the earliest starts at token {first}: the system prompt and tools come first); "
            "raise sft.max_length"
        )
    return examples, replies


def shared_system_prefix(ids: list[list[int]], labels: list[list[int]], block_end: Callable) -> int:
    """How many leading tokens all rows share inside their system block and before any label.

    `block_end(row)` gives the position just past a row's system block. The shared-prefix trainer
    never predicts the token right after the prefix, so that token must be unlabelled too: the
    bound is the first labelled position minus one. 0 when the rows share nothing usable.
    """
    bound = None
    for row, lab in zip(ids, labels, strict=True):
        first = next((i for i, v in enumerate(lab) if v != -100), len(row))
        b = min(block_end(row), first - 1)
        bound = b if bound is None else min(bound, b)
    n = 0
    while n < (bound or 0) and all(row[n] == ids[0][n] for row in ids):
        n += 1
    return n


def system_block_end(row: list[int], decode: Callable[[list[int]], str]) -> int:
    """The length of the shortest head of `row` whose text holds the first <|im_end|>; 0 if none.

    Found through the text, not by matching ids: SmolLM2 has <|im_end|> as one special token, but
    Gemma's vocabulary spells it in pieces that merge with the character before it (".<", "|",
    "im", ...), so no fixed id sequence marks the end of the block.
    """
    if IM_END not in decode(row):
        return 0
    lo, hi = 1, len(row)
    while lo < hi:
        mid = (lo + hi) // 2
        if IM_END in decode(row[:mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _last_checkpoint(folder: Path) -> str | None:
    if not folder.exists():
        return None
    cks = sorted(folder.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[-1]))
    return str(cks[-1]) if cks else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m botpsy.train.sft", description="the SFT stage alone")
    p.add_argument("--preset", default="tiny")
    p.add_argument("--out", required=True, help="output folder: adapter.gguf, manifest.json, train summary")
    p.add_argument("--set", action="append", default=[], metavar="sft.FIELD=VALUE")
    p.add_argument(
        "--data-only",
        action="store_true",
        help="only build the tokenized examples (OUT/train.jsonl.gz), to train on elsewhere with sft.examples",
    )
    a = p.parse_args(argv)
    try:
        cfg = resolve(a.preset, ["sft"], a.set)["stages"]["sft"]["config"]
    except ValueError as e:
        p.error(str(e))
    try:
        run_sft(cfg, Path(a.out), data_only=a.data_only)
    except ValueError as e:
        p.exit(2, f"{p.prog}: error: {e}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
