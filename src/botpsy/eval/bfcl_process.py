"""botpsy's side of the process boundary with BFCL: the long-lived child (`eval/bfcl_worker.py`) that
holds BFCL's checkers and simulated APIs, restarted after a crash or a timeout.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from typing import Any

from botpsy.eval.bfcl_data import bfcl_root

# ---- the child process -----------------------------------------------------------------------


class WorkerError(Exception):
    """The BFCL child process failed a request (its message names the cause)."""


class BfclWorker:
    """A long-lived `python -m botpsy.eval.bfcl_worker`; restarted after a crash or a timeout."""

    def __init__(self, timeout_s: float = 120.0):
        self.timeout_s = timeout_s
        self.proc: subprocess.Popen | None = None

    def _start(self) -> None:
        env = {**os.environ, "BFCL_PROJECT_ROOT": str(bfcl_root()), "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "botpsy.eval.bfcl_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        hello = self._read(max(self.timeout_s, 180.0))
        if not hello.get("ok"):
            self.close()
            raise ValueError(hello.get("error", "the BFCL worker did not start"))

    def _read(self, timeout: float) -> dict[str, Any]:
        assert self.proc and self.proc.stdout
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            self.close()
            raise WorkerError(f"the BFCL checker did not answer within {timeout:.0f} s")
        line = self.proc.stdout.readline()
        if not line:
            self.close()
            raise WorkerError("the BFCL checker process died")
        return json.loads(line)

    def request(self, op: str, **kwargs: Any) -> dict[str, Any]:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc and self.proc.stdin
        try:
            self.proc.stdin.write(json.dumps({"op": op, **kwargs}, default=str) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.close()
            raise WorkerError("the BFCL checker process died") from None
        reply = self._read(self.timeout_s)
        if not reply.get("ok"):
            raise WorkerError(reply.get("error", "unknown checker error"))
        return reply

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.kill()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            self.proc = None

    def __enter__(self) -> BfclWorker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
