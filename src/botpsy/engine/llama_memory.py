"""Memory that llama-cpp-python holds on to longer than botpsy needs it (issue 37's RSS target).

`Llama.generate` builds a new llama.cpp sampler chain on every call (`Llama._init_sampler`) and
stores it in `Llama._sampler`, dropping the previous one. The Python wrapper
(`_internals.LlamaSampler`) frees its chain in a callback that holds the wrapper itself, a
reference cycle, so a dropped chain is freed only when Python's cyclic garbage collector reaches
it — and a chain that lived through a generation has been promoted to an old generation, which is
collected rarely. Each chain keeps a candidate buffer of the vocabulary's size (49,152 × 12 bytes
= 0.56 MiB for SmolLM2, 2.8 MiB for Qwen3.5's 248k tokens), so a conversation's turns pile them
up: measured on the embedded model, the C heap grew 0.56 MiB per turn for nine turns and gave
4.4 MiB back at the next full collection (`reports/bench-memory`).

`release_replaced_samplers` makes a `Llama` close the chain it is about to replace. Only
`Llama._sampler` is ever used to sample (a suspended generator reads the attribute, not the
object it started with), so the replaced chain is unreachable but for its own cycle.
"""

from __future__ import annotations

import weakref


def release_replaced_samplers(llm) -> bool:
    """Make `llm` (a `llama_cpp.Llama`) close its previous sampler chain whenever it builds a new
    one. Returns False, changing nothing, on a llama-cpp-python without `_init_sampler` /
    `_sampler` (the hook would be dead code there; `tests/test_llama_memory.py` notices)."""
    init = getattr(type(llm), "_init_sampler", None)  # the class's function: a bound method holds `llm`
    if init is None or not hasattr(llm, "_sampler"):
        return False
    ref = weakref.ref(llm)  # a closure over `llm` itself would be one more cycle to collect

    def init_sampler(*args, **kwargs):
        owner = ref()
        if owner is None:
            raise RuntimeError("the Llama this sampler hook belonged to is gone")
        old, owner._sampler = owner._sampler, None
        if old is not None:
            old.close()
        return init(owner, *args, **kwargs)

    llm._init_sampler = init_sampler
    return True
