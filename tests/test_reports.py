"""The one report writer (`botpsy.reports`): atomic files, each report's JSON bytes, paths in order."""

import json
import os
from dataclasses import asdict
from pathlib import Path

import pytest

from botpsy.reports import JsonFormat, ReportWriter, pyplot, write_atomic


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


@pytest.mark.parametrize(
    "fmt, obj, expected",
    [
        (JsonFormat(), {"a": [1]}, '{\n  "a": [\n    1\n  ]\n}\n'),
        (JsonFormat(newline=False), {"a": 1}, '{\n  "a": 1\n}'),  # the recipe and device reports
        (JsonFormat(), {"s": "é→"}, '{\n  "s": "\\u00e9\\u2192"\n}\n'),
        (JsonFormat(indent=1, ensure_ascii=False, default=str), {"s": "é→"}, '{\n "s": "é→"\n}\n'),
        (JsonFormat(indent=1, ensure_ascii=False, default=str), {"p": Path("/x")}, '{\n "p": "/x"\n}\n'),
    ],
)
def test_json_format_writes_exactly_these_bytes(tmp_path, fmt, obj, expected):
    path = ReportWriter(tmp_path).json("r.json", obj, fmt)
    assert path.read_bytes() == expected.encode("utf-8")


def test_paths_come_back_in_the_order_written_and_the_folder_is_made(tmp_path):
    writer = ReportWriter(tmp_path / "a" / "b")
    writer.text("r.md", "# title\n")
    writer.json("r.json", {})
    with writer.figure("r.png", figsize=(2, 2), dpi=50) as (fig, ax):
        ax.plot([0, 1], [0, 1])
    writer.copy(tmp_path / "a" / "b" / "r.md", "copy.md")
    folder = tmp_path / "a" / "b"
    assert writer.paths == [folder / n for n in ("r.md", "r.json", "r.png", "copy.md")]
    assert (folder / "r.png").read_bytes()[:4] == b"\x89PNG"
    assert (folder / "copy.md").read_bytes() == b"# title\n"
    assert _leftovers(folder) == []


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_a_write_that_raises_midway_leaves_the_old_file_and_no_partial_one(tmp_path, error):
    path = tmp_path / "report.json"
    path.write_text("the previous report\n")

    def half_then_fail(f):
        f.write(b'{"half": ')
        raise error

    with pytest.raises(type(error)):
        write_atomic(path, half_then_fail)
    assert path.read_text() == "the previous report\n"
    assert _leftovers(tmp_path) == []


def test_a_value_json_cannot_hold_fails_before_any_file_exists(tmp_path):
    writer = ReportWriter(tmp_path)
    with pytest.raises(TypeError, match="not JSON serializable"):
        writer.json("r.json", {"p": Path("/x")})  # no default=str in the plain format
    assert list(tmp_path.iterdir()) == [] and writer.paths == []


def test_a_figure_is_closed_whether_or_not_it_was_drawn(tmp_path):
    plt = pyplot()
    writer = ReportWriter(tmp_path)
    before = set(plt.get_fignums())
    with pytest.raises(ValueError, match="bad figure"):
        with writer.figure("bad.png", dpi=50):
            raise ValueError("bad figure")
    assert not (tmp_path / "bad.png").exists() and writer.paths == []
    with writer.figure("ok.png", 1, 2, figsize=(3, 2), dpi=50) as (_, axes):
        assert len(axes) == 2
    assert set(plt.get_fignums()) == before
    assert plt.get_backend().lower() == "agg"
    assert _leftovers(tmp_path) == []


def test_files_are_created_readable_as_open_creates_them(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_atomic(tmp_path / "r.md", lambda f: f.write(b"x"))
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o644  # not tempfile's 0600


# The callers keep the JSON bytes their own writers produced before they shared this one.


def test_recipe_report_json_is_indented_two_without_a_final_newline(tmp_path):
    from botpsy.train.report import copy_report, write_report

    rows = [{"stage": "base", "n": 4, "success": 0.25, "tool_call_exact": 0.5, "items": []}]
    report = write_report(rows, tmp_path / "run", "tiny")
    written = (tmp_path / "run" / "recipe-tiny.json").read_bytes()
    assert written == json.dumps(report, indent=2).encode()
    copied = copy_report(tmp_path / "run", "tiny", tmp_path / "reports")
    assert [p.name for p in copied][:2] == ["recipe-tiny.json", "recipe-tiny.md"]
    assert (tmp_path / "reports" / "recipe-tiny.json").read_bytes() == written
    assert copy_report(tmp_path / "run", "micro", tmp_path / "micro-reports") == []
    assert not (tmp_path / "micro-reports").exists()


def test_device_report_json_and_files(tmp_path):
    from botpsy.bench.device import BenchResult, write_report

    r = BenchResult("m", 100.0, 0.5, 800, 6000.0, 6000.0, 250.0, 140.0, 33.0, 34.0, -0.03)
    r.ttft_turns_ms, r.cache_hit_turns = [6000.0, 250.0], [0.0, 0.9]
    assert write_report([r], tmp_path) == tmp_path
    assert (tmp_path / "bench.json").read_bytes() == json.dumps([asdict(r)], indent=2).encode()
    assert (tmp_path / "bench.md").read_text().endswith("| prompt share from cache | 0.0% | 90.0% |\n")
    assert (tmp_path / "bench.png").read_bytes()[:4] == b"\x89PNG"
