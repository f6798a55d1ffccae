"""bench/startup.py: a `botpsy run` from process start, with and without the saved system block."""

from __future__ import annotations

import pytest

from botpsy.bench.startup import bench_startup, decode_under_load, startup_rows


def test_decode_under_load_reads_the_middle_figure_beside_a_busy_process():
    psutil = pytest.importorskip("psutil")
    me = psutil.Process()
    seen = []

    def decode():
        busy = [c for c in me.children() if "while True" in " ".join(c.cmdline())]
        seen.append(len(busy))
        return [10.0, 4.0, 12.0][len(seen) - 1]

    quiet, contended = decode_under_load(decode, seconds_before=0.05)
    assert (quiet, contended) == (11.0, 4.0)
    assert seen == [0, 1, 0]  # the competitor runs during the middle reading only
    assert not [c for c in me.children() if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]


def test_startup_bench_restores_the_system_block_in_a_fresh_process(tiny_qwen_gguf):
    """Three real processes on the tiny hybrid model (≈5 s on this 2-core CPU)."""
    lines = []
    r = bench_startup(str(tiny_qwen_gguf["f16"]), threads=1, n_ctx=2048, max_tokens=8, log=lines.append)
    assert r.system_tokens > 500  # the calendar tool definitions, restored from the file
    assert r.state_file_mb > 0 and r.restore_ms > 0
    assert r.ttft_cold_ms > 0 and r.ttft_cold_cache_ms > 0 and r.ttft_warm_ms > 0
    for phases in (r.run_cached_s, r.run_cold_s):
        assert list(phases) == ["import", "load", "setup", "prefill", "decode", "total"]
        assert phases["total"] >= phases["import"] + phases["load"] + phases["prefill"] - 1e-3
    assert not [x for x in lines if "did not restore" in x]
    assert r.peak_rss_cached_mb > 0 and r.peak_rss_cold_mb > 0
    md = "\n".join(startup_rows(r.__dict__))
    assert f"{r.system_tokens} tokens restored" in md and "| with the cache |" in md


def test_no_startup_figures_no_rows():
    assert startup_rows({}) == []
