"""A whole `botpsy run` of the demo's first request over the saved system block, in fresh processes:
the default thread counts (decode on every core but one) against `--threads 2` (the old default on
this 2-core CPU), quiet and beside one busy-looping process, interleaved.

    python reports/bench-contention/threads_e2e.py
"""

import json
import subprocess
import sys
import tempfile
import time

from botpsy.bench.startup import DEMO_FIRST, run_process

out: dict[str, list[dict]] = {}
with tempfile.TemporaryDirectory() as folder:
    run_process(None, folder, [DEMO_FIRST], first_step_only=[True])  # writes the state file
    for load in ("quiet", "busy"):
        hog = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if load == "busy" else None
        time.sleep(0.5)
        try:
            for r in range(3):
                for th in (None, 2) if r % 2 == 0 else (2, None):
                    p = run_process(None, folder, [DEMO_FIRST], threads=th)
                    q = p["requests"][0]
                    key = f"{load} threads={'default' if th is None else th}"
                    out.setdefault(key, []).append(
                        {
                            "total_s": round(p["import_s"] + p["load_s"] + q["total_s"], 2),
                            "ttft_s": round(q["ttft_s"], 3),
                            "decode_s": round(q["decode_s"], 2),
                            "generated": q["generated_tokens"],
                            "steps": q["steps"],
                        }
                    )
                    print(key, out[key][-1], flush=True)
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
with open("reports/bench-contention/threads_e2e.json", "w") as f:
    json.dump(out, f, indent=1)
