"""A tiny model of the real Qwen3.5 architecture, with a tokenizer trained on botpsy's own corpus.

Why: there are no Qwen3.5 weights offline, yet the export path (HF → GGUF → llama.cpp) and both
engines must be proven on the architecture BotPsy ships — hybrid Gated DeltaNet linear attention
plus gated full attention (`Qwen3_5ForCausalLM`, model_type `qwen3_5_text`). This builds one in
a few seconds:

* 4 layers in the published 3:1 pattern (three linear-attention layers, then one full-attention
  layer), hidden 256, head_dim 256 as in Qwen3.5-0.8B, fewer heads. Every matrix *input*
  dimension (hidden, intermediate, query heads × head_dim, value heads × value head dim) is a
  multiple of 256, the K-quant block size, so Q4_K_M really is Q4_K/Q6_K and Q8_0 really is Q8_0
  instead of silently falling back to other types (`quantization_blockers` checks that).
* The linear-attention layers have more value heads than key heads (2 vs 1), as Qwen3.5-9B does,
  so the converter's value-head reordering is exercised too.
* Untied output head, initializer_range 0.02 (transformers' default). Qwen3.5-0.8B ties its
  embeddings, but a random *tied* model's hidden state is mostly its input embedding, so greedy
  decoding repeats the last token forever (newline after newline): useless as a baseline and as
  a test of two engines agreeing. A larger init breaks that but makes the random network chaotic
  (Q4_K_M logit correlation falls from 0.97 to 0.83 at 0.05). Untied at 0.02 keeps both.
* A byte-level BPE tokenizer trained with `tokenizers` on rendered calendar-world conversations,
  the Qwen special tokens appended after the learned vocabulary (as Qwen orders them), the
  Qwen3.5 pre-tokenizer split regex (Qwen2's plus combining marks `\\p{M}`), NFC normalisation,
  and botpsy's own chat template (`templates/qwen35.jinja`), which the GGUF then carries so
  `detect_format` picks "qwen35" from it.

Random init by default: this is "the untrained random-init model" evaluation compares against.
`train_steps` > 0 runs a few plain next-token steps on the same corpus (seconds, not a recipe).

    python -c "from botpsy.export.tiny_qwen import build_tiny_qwen35; build_tiny_qwen35('runs/tiny-hf')"
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from botpsy.data.sft import conversation_messages
from botpsy.protocol.formats import ChatFormat, template_text
from botpsy.worlds import get_domain

# The pre-tokenizer split regexes, written out so the HF tokenizer and llama.cpp's built-in
# pre-tokenizer of the same name agree. "qwen35" is Qwen3.5's (letters may carry combining marks);
# "qwen2" is Qwen2/2.5/3's. llama.cpp knows both by these names.
SPLIT_REGEX = {
    "qwen2": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
    "qwen35": r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""",
}

# Qwen's added tokens, in Qwen's order. The first three are control tokens; the rest are plain
# added tokens (never split, but printed when decoding), as in Qwen3's tokenizer_config.
QWEN_SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
QWEN_ADDED_TOKENS = (
    "<|object_ref_start|>",
    "<|object_ref_end|>",
    "<|box_start|>",
    "<|box_end|>",
    "<|quad_start|>",
    "<|quad_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|vision_pad|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "<tool_call>",
    "</tool_call>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|fim_pad|>",
    "<|repo_name|>",
    "<|file_sep|>",
    "<tool_response>",
    "</tool_response>",
    "<think>",
    "</think>",
)
K_QUANT_BLOCK = 256


@dataclass(frozen=True)
class TinyQwenShape:
    """The tiny model's shape. Defaults keep every matrix input dimension a multiple of 256."""

    hidden_size: int = 256
    intermediate_size: int = 512
    num_hidden_layers: int = 4
    full_attention_interval: int = 4  # Qwen3.5: every 4th layer is full attention (3:1)
    num_attention_heads: int = 2
    num_key_value_heads: int = 1
    head_dim: int = 256  # as in Qwen3.5-0.8B; rotary on a quarter of it, like the real model
    linear_num_key_heads: int = 1
    linear_num_value_heads: int = 2
    linear_key_head_dim: int = 128
    linear_value_head_dim: int = 128
    linear_conv_kernel_dim: int = 4
    # An upper bound: BPE stops when no pair occurs twice, and the calendar corpus supports about
    # 1,170 tokens; more conversations add few. The embedding has exactly one row per token: the
    # row count does not matter to K-quants (they block along hidden), and padding rows would be
    # tokens a random-init model could emit but no tokenizer could print.
    max_vocab_size: int = 4096
    max_position_embeddings: int = 8192
    tie_word_embeddings: bool = False  # see the module docstring: the 0.8B ties, random tied models loop
    initializer_range: float = 0.02


def quantization_blockers(shape: TinyQwenShape, block: int = K_QUANT_BLOCK) -> list[str]:
    """Matrix input dimensions that are not a multiple of `block` (each would force a fallback type)."""
    dims = {
        "hidden_size": shape.hidden_size,
        "intermediate_size": shape.intermediate_size,
        "num_attention_heads*head_dim": shape.num_attention_heads * shape.head_dim,
        "linear_num_value_heads*linear_value_head_dim": shape.linear_num_value_heads
        * shape.linear_value_head_dim,
    }
    return [f"{k}={v}" for k, v in dims.items() if v % block]


def qwen35_config(shape: TinyQwenShape, vocab_size: int, eos_id: int, pad_id: int):
    from transformers import Qwen3_5TextConfig

    layer_types = [
        "full_attention" if (i + 1) % shape.full_attention_interval == 0 else "linear_attention"
        for i in range(shape.num_hidden_layers)
    ]
    return Qwen3_5TextConfig(
        vocab_size=vocab_size,
        hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size,
        num_hidden_layers=shape.num_hidden_layers,
        num_attention_heads=shape.num_attention_heads,
        num_key_value_heads=shape.num_key_value_heads,
        head_dim=shape.head_dim,
        layer_types=layer_types,
        full_attention_interval=shape.full_attention_interval,
        linear_num_key_heads=shape.linear_num_key_heads,
        linear_num_value_heads=shape.linear_num_value_heads,
        linear_key_head_dim=shape.linear_key_head_dim,
        linear_value_head_dim=shape.linear_value_head_dim,
        linear_conv_kernel_dim=shape.linear_conv_kernel_dim,
        max_position_embeddings=shape.max_position_embeddings,
        tie_word_embeddings=shape.tie_word_embeddings,
        initializer_range=shape.initializer_range,
        # Qwen3.5 applies interleaved multimodal RoPE; for text all three sections see the same
        # position. The sections must cover rotary_dim / 2 = head_dim * 0.25 / 2 frequency pairs.
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10_000_000.0,
            "partial_rotary_factor": 0.25,
            "mrope_section": _mrope_section(shape.head_dim // 4 // 2),
            "mrope_interleaved": True,
        },
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
    )


def _mrope_section(pairs: int) -> list[int]:
    """Split `pairs` rotary frequency pairs over (time, height, width) as Qwen3.5 does ([11, 11, 10] for 32)."""
    base = pairs // 3
    extra = pairs - 3 * base
    return [base + (1 if i < extra else 0) for i in range(3)]


# ---- corpus and tokenizer ---------------------------------------------------------------------


def corpus_texts(n_conversations: int = 300, seed: int = 0, domain: str = "calendar") -> list[str]:
    """Rendered world conversations (system + tools + gold turns), as the model would see them."""
    dom = get_domain(domain)
    tools = [t.schema() for t in dom.tools]
    fmt = ChatFormat("qwen35")
    tasks = dom.generate(n_conversations, seed=seed, split="train")
    texts = []
    for i in range(0, len(tasks), 2):  # two requests per conversation, as training packs them
        texts.append(fmt.render(conversation_messages(tasks[i : i + 2]), tools))
    return texts


def _strip_special(text: str) -> list[str]:
    """Cut the added tokens out of training text so BPE never learns merges across them."""
    pattern = "|".join(re.escape(t) for t in QWEN_SPECIAL_TOKENS + QWEN_ADDED_TOKENS)
    return [p for p in re.split(pattern, text) if p]


def train_tokenizer(texts: list[str], vocab_size: int, pre_tokenizer: str = "qwen35"):
    """A byte-level BPE `tokenizers.Tokenizer` with the Qwen added tokens at the end of the vocabulary."""
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        trainers,
    )

    if pre_tokenizer not in SPLIT_REGEX:
        raise ValueError(f"pre_tokenizer must be one of {sorted(SPLIT_REGEX)}, got {pre_tokenizer!r}")
    n_added = len(QWEN_SPECIAL_TOKENS) + len(QWEN_ADDED_TOKENS)
    tok = Tokenizer(models.BPE(unk_token=None, byte_fallback=False, fuse_unk=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT_REGEX[pre_tokenizer]), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - n_added,
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tok.train_from_iterator((piece for t in texts for piece in _strip_special(t)), trainer=trainer)
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in QWEN_SPECIAL_TOKENS])
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in QWEN_ADDED_TOKENS])
    return tok


def hf_tokenizer(tok, chat_template: str):
    """Wrap a `tokenizers.Tokenizer` as a transformers tokenizer with Qwen's special-token roles."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        chat_template=chat_template,
        clean_up_tokenization_spaces=False,
        model_max_length=131072,
    )


# ---- the model --------------------------------------------------------------------------------


def build_tiny_qwen35(
    out_dir: str | Path,
    seed: int = 0,
    train_steps: int = 0,
    shape: TinyQwenShape = TinyQwenShape(),
    pre_tokenizer: str = "qwen35",
    n_conversations: int = 300,
) -> Path:
    """Build and save a tiny `Qwen3_5ForCausalLM` with botpsy's tokenizer and chat template.

    Returns `out_dir`, a Hugging Face folder (config, safetensors, tokenizer, chat_template.jinja)
    that `transformers` and `botpsy.export.gguf.convert_hf_to_gguf` load. Deterministic in `seed`.
    """
    import torch
    from transformers import Qwen3_5ForCausalLM

    blockers = quantization_blockers(shape)
    if blockers:
        raise ValueError(
            f"these dimensions are not multiples of {K_QUANT_BLOCK}, so K-quants would fall back: "
            f"{', '.join(blockers)}"
        )
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    texts = corpus_texts(n_conversations, seed=seed)
    tok = train_tokenizer(texts, shape.max_vocab_size, pre_tokenizer)
    hf_tok = hf_tokenizer(tok, template_text("qwen35"))
    vocab_size = len(hf_tok)
    config = qwen35_config(
        shape,
        vocab_size,
        eos_id=hf_tok.convert_tokens_to_ids("<|im_end|>"),
        pad_id=hf_tok.convert_tokens_to_ids("<|endoftext|>"),
    )
    torch.manual_seed(seed)
    model = Qwen3_5ForCausalLM(config).float().eval()
    if train_steps > 0:
        _train_briefly(model, hf_tok, texts, train_steps, seed)
    model.generation_config.eos_token_id = [config.eos_token_id, config.pad_token_id]
    model.save_pretrained(out_dir)
    hf_tok.save_pretrained(out_dir)
    (out_dir / "botpsy_tiny.json").write_text(
        json.dumps(
            {
                "shape": asdict(shape),
                "seed": seed,
                "train_steps": train_steps,
                "pre_tokenizer": pre_tokenizer,
                "vocab_size": vocab_size,
                "parameters": sum(p.numel() for p in model.parameters()),
            },
            indent=2,
        )
        + "\n"
    )
    return out_dir


def _train_briefly(model, tokenizer, texts: list[str], steps: int, seed: int, seq_len: int = 256) -> None:
    """A few next-token steps on the corpus, so outputs are less flat than at random init (seconds)."""
    import torch

    ids = [i for t in texts for i in tokenizer.encode(t, add_special_tokens=False)]
    gen = torch.Generator().manual_seed(seed)
    data = torch.tensor(ids)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        starts = torch.randint(0, len(data) - seq_len - 1, (4,), generator=gen)
        batch = torch.stack([data[s : s + seq_len] for s in starts])
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    model.eval()
