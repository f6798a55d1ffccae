"""engine/llama_memory.py: a turn's llama.cpp sampler chain is freed when the next turn replaces it.

llama-cpp-python's `LlamaSampler` frees its chain from inside a reference cycle, so each
`Llama.generate` call left 0.56 MiB (SmolLM2's vocabulary of candidates) in the C heap until a
full garbage collection: the embedded model's peak RSS carried about 5 MiB of them (issue 37).
"""

from __future__ import annotations

import ctypes
import gc
import weakref

import pytest

from botpsy.engine.llama_memory import release_replaced_samplers


class _Sampler:
    def __init__(self):
        self.closed = False

    def close(self):
        self.closed = True


class _Llama:
    """What the hook relies on: `_init_sampler` on the class, `_sampler` on the instance."""

    def __init__(self):
        self._sampler = None
        self.built = []

    def _init_sampler(self, temp=0.8):
        self.built.append(temp)
        return _Sampler()

    def generate(self, temp=0.8):
        self._sampler = self._init_sampler(temp=temp)


def test_the_replaced_sampler_is_closed_and_the_current_one_kept():
    llm = _Llama()
    assert release_replaced_samplers(llm)
    llm.generate(temp=0.0)
    first = llm._sampler
    llm.generate(temp=0.5)
    assert first.closed and not llm._sampler.closed
    assert llm.built == [0.0, 0.5]  # arguments reach the real `_init_sampler`


def test_the_hook_adds_no_reference_cycle():
    """A closure over the Llama would keep it (and its model and context) alive until a GC."""
    llm = _Llama()
    release_replaced_samplers(llm)
    ref = weakref.ref(llm)
    gc.disable()
    try:
        del llm
        assert ref() is None
    finally:
        gc.enable()


@pytest.mark.parametrize("obj", [object(), type("NoSamplerAttr", (), {"_init_sampler": lambda self: None})()])
def test_a_llama_cpp_python_without_the_hook_points_is_left_alone(obj):
    assert release_replaced_samplers(obj) is False
    assert not hasattr(obj, "__dict__") or "_init_sampler" not in vars(obj)


def _malloc_in_use_mb() -> float | None:
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallinfo2 = libc.mallinfo2
    except (OSError, AttributeError):
        return None

    class Info(ctypes.Structure):
        _fields_ = [
            (n, ctypes.c_size_t)
            for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()
        ]

    mallinfo2.restype = Info
    return mallinfo2().uordblks / 2**20


def _turns(engine, n: int, temperature: float) -> list[list[int]]:
    ids = engine.tokenize(
        "<|im_start|>user\nWhat is on my calendar tomorrow?<|im_end|>\n<|im_start|>assistant\n"
    )
    outs = []
    for _ in range(n):
        gen = engine.generate(ids, max_tokens=6, temperature=temperature)
        outs.append(gen.ids)
        ids = (
            ids
            + gen.ids
            + engine.tokenize(
                "<|im_end|>\n<|im_start|>user\nAnd after that?<|im_end|>\n<|im_start|>assistant\n"
            )
        )
    return outs


def test_the_engines_turns_do_not_pile_up_sampler_chains_in_the_c_heap():
    """Six turns on the embedded model with the collector off: each closed the chain before it
    (llama-cpp-python alone kept all six, 0.56 MiB each, until a full GC)."""
    from botpsy.engine.load import load_engine

    engine = load_engine(None, n_ctx=512, state_cache=None)
    gc.disable()
    try:
        assert "_init_sampler" in vars(engine.llm), "the engine did not install the sampler hook"
        _turns(engine, 1, 0.0)
        first = engine.llm._sampler
        before = _malloc_in_use_mb()
        _turns(engine, 6, 0.0)
        after = _malloc_in_use_mb()
        assert first.sampler is None  # closed: llama.cpp's chain freed
        assert engine.llm._sampler.sampler is not None  # the current one still usable
        if before is not None:
            assert after - before < 1.0, f"C heap grew {after - before:.2f} MiB over six turns"
    finally:
        gc.enable()
        engine.close()


def test_releasing_samplers_changes_no_output():
    """Greedy and sampled turns give the same tokens with the hook and with llama-cpp-python's own
    `_init_sampler` (the hook removed). The sampler is seeded: the engine's seed 0 is llama.cpp's
    "random seed" to `Llama`."""
    from botpsy.engine.load import load_engine

    engine = load_engine(None, n_ctx=512, state_cache=None)

    def run() -> dict[float, list[list[int]]]:
        engine.llm.reset()
        engine.llm.set_seed(1234)
        return {t: _turns(engine, 3, t) for t in (0.0, 0.8)}

    try:
        hooked = run()
        del engine.llm._init_sampler  # back to the class's method
        plain = run()
    finally:
        engine.close()
    assert hooked == plain
    assert all(any(turn for turn in turns) for turns in hooked.values())
