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


# ---- issue 36: read-only files, non-regular files, folders that move mid-write ------------------
def test_a_read_only_file_is_refused_even_for_root(tmp_path):
    target = tmp_path / "calendar.ics"
    target.write_bytes(b"old")
    target.chmod(0o444)
    with pytest.raises(ReplaceError) as info:
        write_atomic(target, lambda f: f.write(b"new"))
    assert info.value.action == "write to" and "read-only (mode 0444)" in info.value.hint
    assert target.read_bytes() == b"old" and target.stat().st_mode & 0o777 == 0o444
    assert list(tmp_path.iterdir()) == [target]


@pytest.mark.parametrize("kind", ["fifo", "socket"])
def test_a_fifo_or_socket_is_never_replaced(tmp_path, kind):
    import os
    import socket

    target = tmp_path / "name"
    if kind == "fifo":
        os.mkfifo(target)
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(target))
        sock.close()
    with pytest.raises(ReplaceError) as info:
        write_atomic(target, lambda f: f.write(b"x"))
    assert "not a regular file" in info.value.hint
    assert not target.is_file() and list(tmp_path.iterdir()) == [target]


def test_a_new_file_never_replaces_a_name_that_appeared(tmp_path):
    import os

    from botpsy.atomic import write_at

    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:

        def racer(f):  # another program makes the name while our bytes are being written
            (tmp_path / "new.txt").write_bytes(b"theirs")
            f.write(b"ours")

        with pytest.raises(ReplaceError, match="File exists") as info:
            write_at(fd, "new.txt", racer, where=tmp_path / "new.txt", replace=False)
        assert "appeared" in info.value.hint
    finally:
        os.close(fd)
    assert (tmp_path / "new.txt").read_bytes() == b"theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.txt"]


def test_the_temporary_file_is_removed_where_it_was_made_when_the_folder_moves(tmp_path):
    import os

    folder = tmp_path / "docs"
    folder.mkdir()
    (tmp_path / "elsewhere").mkdir()

    def swap_then_fail(f):  # the folder is renamed and a link put in its place, then writing fails
        os.rename(folder, tmp_path / "docs-moved")
        os.symlink(tmp_path / "elsewhere", folder)
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(ReplaceError):
        write_atomic(folder / "a.txt", swap_then_fail)
    assert os.listdir(tmp_path / "docs-moved") == [] and os.listdir(tmp_path / "elsewhere") == []
