"""Examples built on one machine, trained on another: `--data-only` writes them, `sft.examples` reads them."""

from __future__ import annotations

import gzip
import json

import pytest

from botpsy.data.sft import read_examples, write_jsonl
from botpsy.train.sft import main

GOOD = {"input_ids": [5, 6, 7, 8], "assistant_masks": [0, 0, 1, 1]}


def _write(path, lines):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "wt") as f:
        f.write("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("name", ["train.jsonl", "train.jsonl.gz"])
def test_examples_round_trip_plain_and_gzipped(tmp_path, name):
    rows = [GOOD, {"input_ids": [1, 2], "assistant_masks": [0, 1]}]
    assert write_jsonl(rows, tmp_path / name) == 2
    assert read_examples(tmp_path / name) == rows


def test_concatenated_gzip_shards_read_as_one_file(tmp_path):
    # shards built in parallel are joined with `cat`: gzip members in a row
    a, b = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    write_jsonl([GOOD], a)
    write_jsonl([{"input_ids": [9], "assistant_masks": [1]}], b)
    joined = tmp_path / "all.jsonl.gz"
    joined.write_bytes(a.read_bytes() + b.read_bytes())
    assert [len(r["input_ids"]) for r in read_examples(joined)] == [4, 1]


@pytest.mark.parametrize(
    "line, why",
    [
        ("{broken", "not JSON"),
        (json.dumps({"input_ids": [1, 2]}), "no mask"),
        (json.dumps({"input_ids": [1, 2], "assistant_masks": [1]}), "lengths differ"),
        (json.dumps({"input_ids": [1, "2"], "assistant_masks": [0, 1]}), "a string id"),
        (json.dumps({"input_ids": [1, -2], "assistant_masks": [0, 1]}), "a negative id"),
        (json.dumps({"input_ids": [1, 2], "assistant_masks": [0, 2]}), "a mask value of 2"),
        (json.dumps({"input_ids": [1, 2], "assistant_masks": [0, 0]}), "nothing to train on"),
        (json.dumps([1, 2]), "a list, not a row"),
    ],
)
def test_a_bad_row_is_an_error_with_its_line(tmp_path, line, why):
    path = _write(tmp_path / "train.jsonl", [json.dumps(GOOD), line])
    with pytest.raises(ValueError, match="line 2 is not an example"):
        read_examples(path)


@pytest.mark.parametrize(
    "content, match",
    [
        (None, "no such file"),
        (b"", "holds no examples"),
        (b"\x1f\x8b\x08\x00garbage", "cannot be read"),
    ],
)
def test_unreadable_or_empty_files_are_clear_errors(tmp_path, content, match):
    path = tmp_path / "train.jsonl.gz"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        read_examples(path)


def test_a_cut_off_gzip_file_is_an_error_not_a_partial_dataset(tmp_path):
    path = tmp_path / "train.jsonl.gz"
    write_jsonl([GOOD] * 2000, path)
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(ValueError, match="cannot be read"):
        read_examples(path)


def test_the_command_line_reports_a_missing_examples_file_without_a_traceback(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--out", str(tmp_path / "out"), "--set", f"sft.examples={tmp_path / 'none.jsonl.gz'}"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "no such file" in err and "Traceback" not in err


def test_data_only_and_examples_together_are_refused(tmp_path, capsys):
    path = tmp_path / "t.jsonl.gz"
    write_jsonl([GOOD], path)
    with pytest.raises(SystemExit) as e:
        main(["--out", str(tmp_path / "out"), "--data-only", "--set", f"sft.examples={path}"])
    assert e.value.code == 2 and "give one of them" in capsys.readouterr().err


def test_data_only_writes_what_a_run_on_the_examples_trains_on(tmp_path, tiny_qwen_dir, one_torch_thread):
    pytest.importorskip("trl")
    from botpsy.train.sft import run_sft
    from botpsy.train.sft_config import SFTStageConfig

    small = dict(
        base=str(tiny_qwen_dir), domains=("calendar",), conversations=3, per_conversation=1,
        synthetic_share=0.0, max_steps=1, batch_size=1, grad_accum=1, threads=1, max_length=1024,
        shared_prefix=False,
    )  # fmt: skip
    summary = run_sft(SFTStageConfig(**small), tmp_path / "data", log=lambda *_: None, data_only=True)
    built = tmp_path / "data" / "train.jsonl.gz"
    assert summary["conversations"] == 3 and not (tmp_path / "data" / "adapter.gguf").exists()
    examples = read_examples(built)
    assert sum(len(e["input_ids"]) for e in examples) == summary["tokens"]

    logs: list[str] = []
    trained = run_sft(SFTStageConfig(**small, examples=str(built)), tmp_path / "run", log=logs.append)
    assert trained["conversations"] == 3 and trained["tokens"] == summary["tokens"]
    assert any("mix fields of this config are not used" in m for m in logs)
    assert (tmp_path / "run" / "adapter.gguf").read_bytes()[:4] == b"GGUF"
    # the config that built the data travels with the run that trained on it
    assert json.loads((tmp_path / "run" / "data_config.json").read_text())["conversations"] == 3


def test_examples_built_for_a_larger_vocabulary_are_refused(tmp_path, tiny_qwen_dir, one_torch_thread):
    pytest.importorskip("trl")
    from botpsy.train.sft import run_sft
    from botpsy.train.sft_config import SFTStageConfig

    path = tmp_path / "t.jsonl"
    write_jsonl([{"input_ids": [1, 10**7], "assistant_masks": [0, 1]}], path)
    with pytest.raises(ValueError, match="outside .* vocabulary"):
        run_sft(
            SFTStageConfig(base=str(tiny_qwen_dir), examples=str(path)), tmp_path / "run", log=lambda *_: None
        )
