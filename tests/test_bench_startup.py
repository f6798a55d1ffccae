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
    # warm prefills a request of the same shape, not a prompt cached whole
    assert r.new_tokens_warm > r.new_tokens_cached / 2 > 5
    for phases in (r.run_cached_s, r.run_cold_s):
        assert list(phases) == ["import", "load", "setup", "prefill", "decode", "total"]
        assert phases["total"] >= phases["import"] + phases["load"] + phases["prefill"] - 1e-3
    assert not [x for x in lines if "did not restore" in x]
    assert r.peak_rss_cached_mb > 0 and r.peak_rss_cold_mb > 0
    md = "\n".join(startup_rows(r.__dict__))
    assert f"{r.system_tokens} tokens restored" in md and "| with the cache |" in md


def test_no_startup_figures_no_rows():
    assert startup_rows({}) == []


# libgomp prints OMP_WAIT_POLICY 'PASSIVE' when it is unset too; the spin count tells them apart
# (300,000 spins before sleeping by default, 0 when passive, effectively endless when active).
@pytest.mark.parametrize(
    "given, expected", [(None, "GOMP_SPINCOUNT = '0'"), ("ACTIVE", "OMP_WAIT_POLICY = 'ACTIVE'")]
)
def test_llama_cpp_threads_wait_passively_unless_the_user_chose(given, expected):
    """libgomp's spinning barrier made a busy 2-core machine decode ~10x slower (engine.llamacpp).
    libgomp reads the policy once, when loaded: checked in a fresh interpreter through its own
    `omp_display_env`; the variable is not left in the environment for other libraries."""
    import os
    import subprocess
    import sys

    code = (
        "import ctypes, os\n"
        "from botpsy.engine.llamacpp import import_llama\n"
        "import_llama()\n"
        "print('left', os.environ.get('OMP_WAIT_POLICY'), flush=True)\n"
        "ctypes.CDLL('libgomp.so.1').omp_display_env(1)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        pytest.fail("importing llama_cpp took over 2 minutes")
    if proc.returncode != 0 and "libgomp" in proc.stderr:
        pytest.skip("llama.cpp is not built with GNU OpenMP here")
    assert expected in proc.stdout + proc.stderr
    assert f"left {given}" in proc.stdout
