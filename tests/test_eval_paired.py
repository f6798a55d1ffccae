"""`botpsy eval compare`: two models' per-task rows paired by task id, with an exact sign test."""

from __future__ import annotations

import json
import math

import pytest

from botpsy import cli
from botpsy.eval.paired import RowsError, compare, load_rows, sign_test


def _rows(path, outcomes, domain="calendar", kind="single"):
    path.write_text(
        "\n".join(
            json.dumps({"task_id": f"t{i}", "success": s, "domain": domain, "kind": kind})
            for i, s in enumerate(outcomes)
        )
        + "\n"
    )
    return path


@pytest.mark.parametrize(
    "wins,losses,p",
    [(0, 0, 1.0), (5, 5, 1.0), (6, 0, 2 / 64), (20, 12, 0.2153), (10, 0, 2 / 1024), (0, 10, 2 / 1024)],
)
def test_sign_test_is_the_exact_two_sided_binomial_tail(wins, losses, p):
    assert math.isclose(sign_test(wins, losses), p, abs_tol=1e-4)


def test_only_disagreements_count_and_groups_split_them(tmp_path):
    a = load_rows(_rows(tmp_path / "a.jsonl", [True, True, True, False, False]))
    b = load_rows(_rows(tmp_path / "b.jsonl", [True, False, False, True, False]))
    p = compare(a, b)
    assert (p.n, p.a, p.b, p.a_only, p.b_only) == (5, 3, 2, 2, 1)
    assert p.groups["domain"]["calendar"].a_only == 2 and p.groups["kind"]["single"].n == 5
    assert math.isclose(p.p, 1.0)


def test_tasks_only_one_side_has_are_left_out_and_said(tmp_path, capsys):
    a = _rows(tmp_path / "a.jsonl", [True] * 6)
    b = _rows(tmp_path / "b.jsonl", [False] * 4)
    assert cli.main(["eval", "compare", str(a), str(b), "--json"]) == 0
    d = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert d["n"] == 4 and d["a_only"] == 4 and d["unpaired"] == {"a": 2, "b": 0}
    assert math.isclose(d["sign_test_p"], 0.125)
    assert cli.main(["eval", "compare", str(a), str(b), "--label-a", "new [/]"]) == 0
    out, err = (" ".join(x.split()) for x in capsys.readouterr())
    assert "A = new [/]" in out and "sign test p = 0.125" in out and "2 tasks only in A" in err


@pytest.mark.parametrize(
    "content,message",
    [
        (None, "no such file"),
        ("{not json\n", "not a JSON row"),
        ('{"success": true}\n', "task_id"),
        ("\n", "no rows"),
    ],
)
def test_a_bad_file_is_one_clear_line(tmp_path, capsys, content, message):
    bad = tmp_path / "bad.jsonl"
    if content is not None:
        bad.write_text(content)
    good = _rows(tmp_path / "good.jsonl", [True])
    assert cli.main(["eval", "compare", str(bad), str(good)]) == 2
    err = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert message in err and "Traceback" not in err


def test_files_with_no_task_in_common_are_refused(tmp_path):
    a = load_rows(_rows(tmp_path / "a.jsonl", [True]))
    b = {"other": {"task_id": "other", "success": True}}
    with pytest.raises(RowsError, match="share no task id"):
        compare(a, b)
