"""Shared fixtures. Add yours below; keep each one's build cost stated in its docstring."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _state_cache_in_tmp(tmp_path_factory):
    """Engines built by `load_engine` save prefix states (engine/state_cache.py): keep the test
    run's out of ~/.cache, in one folder shared by the session."""
    mp = pytest.MonkeyPatch()
    mp.setenv("BOTPSY_STATE_CACHE", str(tmp_path_factory.mktemp("state_cache")))
    yield
    mp.undo()


# ---- tiny Qwen3.5 model (export and transformers-engine tests) ----------------------------------


@pytest.fixture
def one_torch_thread():
    """Run a test's torch work on one thread: on a shared 2-core CPU, spinning OpenMP threads that
    compete with another process slow tiny models 20-50x. Restores the previous setting."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_qwen_dir(tmp_path_factory):
    """A random-init tiny `Qwen3_5ForCausalLM` HF folder with botpsy's tokenizer (≈4 s once)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from botpsy.export.tiny_qwen import build_tiny_qwen35

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return build_tiny_qwen35(tmp_path_factory.mktemp("tiny_qwen35") / "hf", seed=0)
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="session")
def tiny_qwen_gguf(tiny_qwen_dir):
    """The tiny model as f16, Q8_0 and Q4_K_M GGUF files: {"f16": path, "Q8_0": path, "Q4_K_M": path} (≈1 s)."""
    pytest.importorskip("conversion")
    from botpsy.export.gguf import convert_hf_to_gguf, quantize_gguf

    out = tiny_qwen_dir.parent
    files = {"f16": convert_hf_to_gguf(tiny_qwen_dir, out / "model-f16.gguf", "f16")}
    for q in ("Q8_0", "Q4_K_M"):
        files[q] = quantize_gguf(files["f16"], out / f"model-{q}.gguf", q)
    return files


@pytest.fixture(scope="session")
def tiny_llama_dir(tmp_path_factory):
    """A random-init 2-layer Llama (hidden 64, 4,096 positions; `distill.tiny_random_teacher`) HF folder
    on botpsy's trained tokenizer (vocab 600, the Qwen3.5 chat template; pad <|endoftext|>, eos
    <|im_end|>): the student the training stages, the recipe and the held-out evaluation run on
    (≈3 s once). Tests read it and write elsewhere."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from botpsy.export.tiny_qwen import corpus_texts, hf_tokenizer, train_tokenizer
    from botpsy.protocol.formats import template_text
    from botpsy.train.distill import tiny_random_teacher

    tok = hf_tokenizer(train_tokenizer(corpus_texts(30), 600), template_text("qwen35"))
    model = tiny_random_teacher(tok, seed=0, max_positions=4096)
    folder = tmp_path_factory.mktemp("tiny_llama")
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
