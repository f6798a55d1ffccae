"""The one file-replacing mechanism: which step failed, folders on the way, nothing left behind."""

from __future__ import annotations

import errno

import pytest

from botpsy.atomic import ReplaceError, write_atomic


def test_a_missing_folder_is_a_write_to_error_unless_parents_are_made(tmp_path):
    target = tmp_path / "a" / "b" / "r.json"
    with pytest.raises(ReplaceError) as info:
        write_atomic(target, lambda f: f.write(b"{}"))
    assert info.value.action == "write to" and info.value.errno == errno.ENOENT
    assert write_atomic(target, lambda f: f.write(b"{}"), parents=True) == target
    assert target.read_bytes() == b"{}"


def test_a_failed_write_is_a_save_error_and_keeps_the_old_file_and_mode(tmp_path):
    target = tmp_path / "calendar.ics"
    target.write_bytes(b"old")
    target.chmod(0o640)

    def no_space(f):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(ReplaceError) as info:
        write_atomic(target, no_space)
    assert info.value.action == "save" and info.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"old" and list(tmp_path.iterdir()) == [target]
    write_atomic(target, lambda f: f.write(b"new"))
    assert target.read_bytes() == b"new" and target.stat().st_mode & 0o777 == 0o640


def test_a_symlink_is_written_through(tmp_path):
    real = tmp_path / "real.txt"
    real.write_bytes(b"old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    write_atomic(link, lambda f: f.write(b"new"))
    assert link.is_symlink() and real.read_bytes() == b"new"


def test_run_state_stopped_mid_write_keeps_the_old_file(tmp_path, monkeypatch):
    import json

    from botpsy import atomic
    from botpsy.train.runner import write_json

    done = tmp_path / "done.json"
    write_json(done, {"best": "sft/checkpoint-10"})

    def stopped(fd):
        raise KeyboardInterrupt  # Ctrl-C after the bytes were written, before the rename

    monkeypatch.setattr(atomic.os, "fsync", stopped)
    with pytest.raises(KeyboardInterrupt):
        write_json(done, {"best": "sft/checkpoint-20", "start": "base"})
    assert json.loads(done.read_text()) == {"best": "sft/checkpoint-10"}
    assert list(tmp_path.iterdir()) == [done]
