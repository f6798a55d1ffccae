"""The files sandbox raced (issue 36 item 7): a folder swapped for a link during writes.

Before: the store checked a path and then wrote to it by name, so a thread swapping `docs/` for a
link to a folder outside put writes there (17 of 2,000 in the issue's probe) and left temporary
files behind (79). Now every step is relative to a folder descriptor opened with O_NOFOLLOW.
A FIFO, socket or device node is never replaced, `overwrite` or not.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import threading
import time
from collections import Counter

import pytest

from botpsy.stores.common import StoreError
from botpsy.stores.folder import FolderStore
from botpsy.stores.workspace import Workspace
from botpsy.tools.base import ToolError
from botpsy.tools.files import delete_file, write_file

WRITES = 400


def _every_file(top):
    return sorted(os.path.relpath(os.path.join(d, f), top) for d, _, fs in os.walk(top) for f in fs)


@pytest.mark.parametrize("tool", ["write", "delete"])
def test_a_symlink_swap_racing_many_writes_never_reaches_outside(tmp_path, tool):
    root = tmp_path / "ws" / "files"
    docs = root / "docs"
    docs.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    for i in range(8):  # names the writes and deletes use, outside too: none may change
        (outside / f"f{i}.txt").write_text("outside")
    store = FolderStore(root)
    stop = threading.Event()

    def swapper():
        while not stop.is_set():
            try:
                os.rename(docs, root / "docs-real")
                os.symlink(outside, docs)
                os.unlink(docs)
                os.rename(root / "docs-real", docs)
            except OSError:
                pass
            time.sleep(0.0003)  # a moment as a real folder, so loads succeed and saves race the swap

    outcomes: Counter = Counter()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # interleave the two threads finely: the race must get its chances
    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    try:
        for i in range(WRITES):
            try:
                with store.transaction(write=True) as st:
                    name = f"docs/f{i % 8}.txt"
                    if tool == "write":
                        write_file(st, path=name, text=f"write {i}", overwrite=True)
                    else:
                        if name not in st.entries:
                            write_file(st, path=name, text="x")
                        else:
                            delete_file(st, path=name)
                outcomes["done"] += 1
            except (ToolError, StoreError):
                outcomes["refused"] += 1
            except OSError:  # checked last: what reached outside matters most
                outcomes["raw OSError"] += 1
    finally:
        stop.set()
        thread.join(10)
        sys.setswitchinterval(interval)
    if not docs.is_dir() or docs.is_symlink():
        docs.unlink(missing_ok=True)
        os.rename(root / "docs-real", docs)
    assert _every_file(outside) == [f"f{i}.txt" for i in range(8)]
    assert all((outside / f"f{i}.txt").read_text() == "outside" for i in range(8))
    strays = [p for p in _every_file(tmp_path) if p.endswith(".tmp")]
    assert strays == [], f"temporary files left behind: {strays}"
    assert outcomes["done"] > 0 and outcomes["raw OSError"] == 0, outcomes


def _special(path, kind):
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        try:
            os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # what /dev/null is
        except (PermissionError, OSError):
            pytest.skip("device nodes cannot be made here")
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()


@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
def test_a_fifo_or_socket_is_never_replaced_even_with_overwrite(tmp_path, kind):
    root = tmp_path / "ws" / "files"
    root.mkdir(parents=True)
    _special(root / "pipe.txt", kind)
    ws = Workspace(tmp_path / "ws", suites=["files"])
    assert "pipe.txt" not in json.dumps(json.loads(ws.call("list_files", {})))
    for overwrite in (False, True):
        out = json.loads(ws.call("write_file", {"path": "pipe.txt", "text": "x", "overwrite": overwrite}))
        assert "error" in out, out
        assert "exists on disk" in out["error"] and "nothing was replaced" in out["error"], out
    assert not (root / "pipe.txt").is_file() and os.path.exists(root / "pipe.txt")
    assert sorted(os.listdir(root)) == ["pipe.txt"]
