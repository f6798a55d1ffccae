"""Peak memory in benches: measured from the bench's own start, not the process's."""

import pytest


def test_bench_peak_memory_starts_over_inside_a_process_that_was_larger():
    """A bench run in a test runner that peaked earlier must not report that older peak."""
    import sys

    from botpsy.bench.device import peak_rss_mb, reset_peak_rss

    if not sys.platform.startswith("linux"):
        pytest.skip("the peak is reset through /proc")
    big = bytearray(300 * 2**20)  # touch 300 MiB, then free it
    big[::4096] = b"x" * len(big[::4096])
    before = peak_rss_mb()
    del big
    reset_peak_rss()
    assert peak_rss_mb() < before - 200


def test_memory_freed_inside_the_c_heap_is_released_before_the_baseline():
    """Holes in glibc's heap stay resident after free(); a baseline taken over them under-counts the model."""
    import ctypes
    import ctypes.util
    import sys

    from botpsy.bench.device import release_free_memory

    if not sys.platform.startswith("linux"):
        pytest.skip("glibc and /proc only")
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    if not hasattr(libc, "malloc_trim"):
        pytest.skip("not glibc")
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]

    def rss_mb() -> float:
        for line in open("/proc/self/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    size = 64 * 1024  # below glibc's mmap threshold: these live in the heap
    blocks = [libc.malloc(size) for _ in range(1600)]  # 100 MiB
    for b in blocks:
        ctypes.memset(b, 1, size)
    for b in blocks[::2]:  # every other block freed: holes the heap's top cannot give back
        libc.free(b)
    held = rss_mb()
    release_free_memory()
    released = held - rss_mb()
    for b in blocks[1::2]:
        libc.free(b)
    assert released > 30  # of the 50 MiB of holes


def test_the_engine_batches_one_micro_batch_per_call():
    """n_batch 512 over n_ubatch 128 held 3.5 MiB more of the embedded model's peak (llama-cpp-python's
    batch keeps an n_ctx-long sequence-id array per token) for no prefill speed (1.007x)."""
    from botpsy.engine.load import load_engine

    engine = load_engine(None, n_ctx=512, state_cache=None)
    try:
        params = engine.llm.context_params
        assert params.n_batch == params.n_ubatch == 128
        assert engine.llm.n_batch == 128
        # a prompt longer than one batch is still read whole, in several calls
        ids = engine.tokenize("word " * 300)
        assert len(ids) > 128
        engine.llm.eval(ids)
        assert engine.llm.n_tokens == len(ids)
    finally:
        engine.close()
