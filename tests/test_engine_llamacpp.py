"""llama.cpp engine load options: extra CPU buffer types (weight repacking) and AMX CPUs."""

from __future__ import annotations

import pytest

from botpsy.engine.llamacpp import cpu_has_amx

SPR_FLAGS = "flags\t\t: fpu sse sse2 avx avx2 avx512f avx512_vnni amx_bf16 amx_tile amx_int8\n"
ZEN_FLAGS = "flags\t\t: fpu sse sse2 avx avx2 avx512f avx512_vnni avx512_bf16\n"


def test_amx_is_read_from_the_flags_line_only():
    assert cpu_has_amx("processor\t: 0\n" + SPR_FLAGS)
    assert not cpu_has_amx("processor\t: 0\n" + ZEN_FLAGS)
    assert not cpu_has_amx("model name\t: amx_int8 lookalike\n" + ZEN_FLAGS)
    assert not cpu_has_amx("")  # no flags line (macOS, Windows, a container without /proc)


@pytest.mark.parametrize("quant", ["Q8_0", "Q4_K_M"])
def test_quantized_model_decodes_with_the_automatic_buffer_choice(tiny_qwen_gguf, quant):
    """On an AMX CPU, ggml's AMX buffer type (compiled in by a -march=native build) segfaulted in
    the first decode of a Q8_0 model and killed the test run; auto turns extra buffer types off
    there, and the setting reaches llama.cpp's model params."""
    from botpsy.engine.llamacpp import LlamaCppEngine

    eng = LlamaCppEngine(tiny_qwen_gguf[quant], n_ctx=512, n_threads=1, n_threads_batch=1)
    assert eng.extra_bufts is (not cpu_has_amx())
    assert bool(eng.llm.model_params.use_extra_bufts) is eng.extra_bufts
    gen = eng.generate(
        eng.tokenize("<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"), max_tokens=4
    )
    assert 1 <= len(gen.ids) <= 5 and gen.stop in ("eos", "length")


def test_extra_buffer_types_can_be_turned_off_explicitly(tiny_qwen_gguf):
    from botpsy.engine.llamacpp import LlamaCppEngine

    eng = LlamaCppEngine(tiny_qwen_gguf["f16"], n_ctx=512, n_threads=1, extra_bufts=False)
    assert eng.extra_bufts is False and not eng.llm.model_params.use_extra_bufts


def test_close_frees_the_model_once(tiny_qwen_gguf):
    """`close()` is on the Engine protocol: the CLI frees llama.cpp's model before interpreter exit
    (left to garbage collection, its free can run after the library is unloaded and print a traceback)."""
    from botpsy.engine.llamacpp import LlamaCppEngine

    eng = LlamaCppEngine(tiny_qwen_gguf["f16"], n_ctx=256, n_threads=1)
    llm = eng.llm
    eng.close()
    eng.close()  # idempotent
    assert not hasattr(eng, "llm")
    assert llm._model.model is None  # llama.cpp's model freed now, not at garbage collection
