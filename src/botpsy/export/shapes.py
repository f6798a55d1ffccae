"""BotPsy's shapes: a random-init model with the exact Qwen3.5-0.8B text shape.

Why: BotPsy published GGUF sizes (bf16 1.52 GB, Q8_0 0.81 GB, Q4_K_M 0.53 GB) but no latency,
throughput or memory figure on any device. Speed and size depend on the shape and the vocabulary,
not on the weights' values, so a random-init model of the same shape answers those questions
here, where no Qwen3.5 weights are available.

The shape is Qwen3.5-0.8B's published text config (`Qwen3_5ForCausalLM`, model_type
`qwen3_5_text`): 24 layers in the 3:1 pattern (three Gated DeltaNet layers, then one gated
full-attention layer: 6 KV-bearing layers), hidden 1024, MLP 3584, 8 query heads and 2 KV heads
of 256 (rotary on a quarter, theta 1e7, interleaved MRoPE sections 11/11/10), linear attention
with 16 key and 16 value heads of 128 and a 4-wide causal convolution, tied embeddings, RMSNorm
eps 1e-6, context 262,144, and the real 248,320-row vocabulary (`qwen_vocab`: the 248,077 Qwen3.5
tokens rebuilt from tiktoken ranks; the rest are padding rows, as in the released model).
What differs from the release: the weights are random (normal, std 0.02 — transformers' init), the
multi-token-prediction head and the vision tower are absent (the GGUF leaves both out anyway),
and the chat template is botpsy's own Qwen3.5 template.

This module holds the shapes and builds the model; `botpsy.bench.shapes` exports it, benchmarks
each GGUF and writes the report (`botpsy export shapes`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from botpsy.export.qwen_vocab import qwen35_hf_tokenizer
from botpsy.export.tiny_qwen import TinyQwenShape, quantization_blockers, qwen35_config
from botpsy.protocol.formats import template_text


@dataclass(frozen=True)
class ReferenceShape:
    """A published model's shape and the figures to compare against."""

    name: str
    shape: TinyQwenShape
    vocab_rows: int
    published_gguf_gb: dict[str, float]
    source: str


QWEN35_08B = ReferenceShape(
    name="qwen3.5-0.8b",
    shape=TinyQwenShape(
        hidden_size=1024,
        intermediate_size=3584,
        num_hidden_layers=24,
        full_attention_interval=4,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=256,
        linear_num_key_heads=16,
        linear_num_value_heads=16,
        linear_key_head_dim=128,
        linear_value_head_dim=128,
        linear_conv_kernel_dim=4,
        max_vocab_size=248_320,
        max_position_embeddings=262_144,
        tie_word_embeddings=True,
        initializer_range=0.02,
    ),
    vocab_rows=248_320,
    # BotPsy's release: the GGUF files' sizes as published (decimal GB).
    published_gguf_gb={"bf16": 1.52, "Q8_0": 0.81, "Q4_K_M": 0.53},
    source="Qwen/Qwen3.5-0.8B config.json (text_config); BotPsy model card for the GGUF sizes",
)
SHAPES = {QWEN35_08B.name: QWEN35_08B}
DEFAULT_QUANTS = ("Q8_0", "Q4_K_M")


def get_shape(name: str) -> ReferenceShape:
    try:
        return SHAPES[name]
    except KeyError:
        raise ValueError(f"unknown shape {name!r}; known: {', '.join(sorted(SHAPES))}") from None


def parameter_counts(shape: TinyQwenShape, vocab_rows: int) -> dict[str, int]:
    """Parameters by part, from the shape alone (checked against the built model in the tests)."""
    h, inter = shape.hidden_size, shape.intermediate_size
    n_full = shape.num_hidden_layers // shape.full_attention_interval
    n_linear = shape.num_hidden_layers - n_full
    q = shape.num_attention_heads * shape.head_dim
    kv = shape.num_key_value_heads * shape.head_dim
    full = h * 2 * q + 2 * h * kv + q * h + 2 * shape.head_dim  # gated q, k, v, o, q/k norms
    kd = shape.linear_num_key_heads * shape.linear_key_head_dim
    vd = shape.linear_num_value_heads * shape.linear_value_head_dim
    nv = shape.linear_num_value_heads
    linear = (
        h * (2 * kd + vd)  # in_proj_qkv
        + h * vd  # in_proj_z (output gate)
        + 2 * h * nv  # in_proj_b, in_proj_a
        + (2 * kd + vd) * shape.linear_conv_kernel_dim  # depthwise conv1d
        + 2 * nv  # A_log, dt_bias
        + shape.linear_value_head_dim  # gated RMSNorm
        + vd * h  # out_proj
    )
    mlp = 3 * h * inter
    norms = 2 * h * shape.num_hidden_layers + h
    embed = vocab_rows * h
    out = {
        "embedding": embed,
        "output": 0 if shape.tie_word_embeddings else embed,
        "full_attention": n_full * full,
        "linear_attention": n_linear * linear,
        "mlp": shape.num_hidden_layers * mlp,
        "norms": norms,
    }
    out["total"] = sum(out.values())
    return out


# ---- the model --------------------------------------------------------------------------------


def build_shape_model(
    ref: ReferenceShape | str,
    out_dir: str | Path,
    seed: int = 0,
    overrides: dict | None = None,
    dtype: str = "bfloat16",
) -> Path:
    """Save a random-init `Qwen3_5ForCausalLM` of `ref`'s shape with the Qwen3.5 vocabulary.

    `overrides` replaces shape fields (the tests build a 2-layer, 256-wide model through the same
    path). Weights are created directly in `dtype` (bf16: 1.5 GB for the 0.8B instead of 3 GB in
    fp32), then saved with the tokenizer and botpsy's Qwen3.5 chat template. Returns `out_dir`.
    """
    import torch
    from transformers import Qwen3_5ForCausalLM

    ref = get_shape(ref) if isinstance(ref, str) else ref
    shape = replace(ref.shape, **(overrides or {}))
    blockers = quantization_blockers(shape)
    if blockers:
        raise ValueError(f"K-quants would fall back to other types for: {', '.join(blockers)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tok = qwen35_hf_tokenizer(template_text("qwen35"))
    tokenizer_s = time.perf_counter() - t0
    config = qwen35_config(
        shape,
        ref.vocab_rows,
        eos_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_id=tok.convert_tokens_to_ids("<|endoftext|>"),
    )
    torch.manual_seed(seed)
    t1 = time.perf_counter()
    model = Qwen3_5ForCausalLM._from_config(config, dtype=getattr(torch, dtype)).eval()
    init_s = time.perf_counter() - t1
    model.generation_config.eos_token_id = [config.eos_token_id, config.pad_token_id]
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    n_params = sum(p.numel() for p in model.parameters())
    del model
    (out_dir / "botpsy_shape.json").write_text(
        json.dumps(
            {
                "shape_name": ref.name,
                "shape": asdict(shape),
                "overrides": overrides or {},
                "seed": seed,
                "dtype": dtype,
                "vocab_rows": ref.vocab_rows,
                "tokens": len(tok),
                "parameters": n_params,
                "tokenizer_s": round(tokenizer_s, 2),
                "init_s": round(init_s, 2),
            },
            indent=2,
        )
        + "\n"
    )
    return out_dir
