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
