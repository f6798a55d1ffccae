"""The public-data build: sources in, eval repeats / duplicates / date conflicts out, manifest written.

Sources and evaluation suites are small files written here in their published layouts; the
tokenizing step (`train.sft.run_sft`, which loads a base model) is replaced by a recorder that
checks what it was asked to build.
"""

from __future__ import annotations

import gzip
import hashlib
import json

import pytest

from botpsy.data.public import load
from botpsy.train import public_mix

BFCL_REQUEST = "Find the area of a triangle with a base of 10 units and height of 5 units."
TAU2_REASON = "You want to return the water bottle you ordered last week because it leaks."
ACE_REQUEST = "I need to create a new press release for our upcoming product launch next week."
TOOLS = json.dumps(
    [
        {
            "name": "area",
            "description": "Area of a shape.",
            "parameters": {
                "base": {"type": "int"},
                "height": {"type": "int"},
                "day": {"type": "str, optional"},
            },
        }
    ]
)


def xlam_row(query, base=3, day=None):
    args = {"base": base, "height": 4} | ({"day": day} if day else {})
    return {"query": query, "tools": TOOLS, "answers": json.dumps([{"name": "area", "arguments": args}])}


def quiet(*_):
    pass


@pytest.fixture
def suites(tmp_path):
    bfcl = tmp_path / "bfcl"
    bfcl.mkdir()
    (bfcl / "BFCL_v4_simple_python.json").write_text(
        json.dumps({"id": "simple_python_0", "question": [[{"role": "user", "content": BFCL_REQUEST}]]})
        + "\n"
    )
    tau2 = tmp_path / "tau2" / "retail"
    tau2.mkdir(parents=True)
    scenario = {"instructions": {"reason_for_call": TAU2_REASON}}
    (tau2 / "tasks.json").write_text(json.dumps([{"id": "0", "user_scenario": scenario}]))
    ace = tmp_path / "ace" / "data_all" / "data_en"
    ace.mkdir(parents=True)
    (ace / "data_normal_single_turn_single_function.json").write_text(
        json.dumps({"id": "normal_0", "question": f"user: {ACE_REQUEST}\n"}) + "\n"
    )
    return ["--bfcl", str(bfcl), "--tau2", str(tmp_path / "tau2"), "--acebench", str(tmp_path / "ace")]


@pytest.fixture
def xlam_file(tmp_path):
    rows = [
        xlam_row(BFCL_REQUEST.lower()),  # 0: exact BFCL (case differs)
        xlam_row(BFCL_REQUEST.replace("10", "12")),  # 1: near BFCL
        xlam_row("Hello! " + TAU2_REASON),  # 2: near τ²
        xlam_row(ACE_REQUEST),  # 3: exact ACEBench
        xlam_row("What is the area of a 3 by 4 rectangle?"),  # 4: kept
        xlam_row("What is the area of a 3 by 4 rectangle?"),  # 5: duplicate of 4
        xlam_row("Area of a 3 by 4 plot for tomorrow's survey.", day="2023-05-12"),  # 6: date conflict
        xlam_row("Area of a 3 by 4 plot for tomorrow's survey.", day="2026-12-02"),  # 7: kept, agrees
        xlam_row("Compute a 5 by 6 area.", base=5),  # 8: kept
        {"query": "broken", "tools": TOOLS, "answers": "not json"},  # 9: unreadable
    ]
    path = tmp_path / "xlam_function_calling_60k.json"
    path.write_text(json.dumps(rows))
    return path


def build(argv):
    p_args = public_mix.parser().parse_args(argv)
    return public_mix.build(p_args, log=quiet)


def test_check_only_counts_every_removal_by_suite_and_kind(tmp_path, suites, xlam_file):
    out = tmp_path / "out"
    manifest = build(["--out", str(out), "--source", f"xlam={xlam_file}", "--check-only", *suites])
    [s] = manifest["sources"]
    assert s["name"] == "xlam" and s["licence"].startswith("CC-BY-4.0")
    assert s["sha256"] == hashlib.sha256(xlam_file.read_bytes()).hexdigest()
    assert (s["rows_read"], s["rows_converted"], s["rows_skipped_unreadable"]) == (10, 9, 1)
    assert s["removed"]["eval"] == {
        "bfcl": {"exact": 1, "near": 1},
        "tau2": {"exact": 0, "near": 1},
        "acebench": {"exact": 1, "near": 0},
    }
    assert (s["removed"]["eval_total"], s["removed"]["duplicate"], s["removed"]["date_conflict"]) == (4, 1, 1)
    assert (s["rows_kept"], s["rows_used"]) == (3, 0)  # measured only: nothing used
    suites_info = manifest["decontamination"]["suites"]
    assert {k: v["requests"] for k, v in suites_info.items()} == {"bfcl": 1, "tau2": 1, "acebench": 1}
    assert manifest["decontamination"]["jaccard_threshold"] == 0.5
    # check-only builds nothing, but says what it removed and why
    assert not (out / "clean").exists() and "examples" not in manifest
    removed = [json.loads(x) for x in (out / "removed.jsonl").read_text().splitlines()]
    assert [r["reason"] for r in removed] == [
        "eval-exact",
        "eval-near",
        "eval-near",
        "eval-exact",
        "duplicate",
        "date-conflict",
    ]
    assert removed[1]["item"] == "simple_python_0" and removed[1]["score"] >= 0.5
    assert [r["conversation"] for r in removed] == [0, 1, 2, 3, 5, 6]  # numbered as in the file
    assert json.loads((out / "manifest.json").read_text()) == manifest


def test_build_writes_kept_rows_that_load_back_and_hands_them_to_the_sft_data_path(
    tmp_path, suites, xlam_file, monkeypatch
):
    import botpsy.train.sft as sft

    seen = {}

    def fake_run_sft(cfg, out_dir, log=print, data_only=False):
        seen.update(datasets=cfg.datasets, data_only=data_only, conversations=cfg.conversations)
        with gzip.open(out_dir / "train.jsonl.gz", "wb") as f:
            f.write(b"examples")
        return {"conversations": 7, "tokens": 70, "trained_tokens": 7}

    monkeypatch.setattr(sft, "run_sft", fake_run_sft)
    out = tmp_path / "out"
    argv = [
        "--out",
        str(out),
        "--source",
        f"xlam={xlam_file}",
        "--sample",
        "2",
        "--set",
        "sft.conversations=5",
    ]
    manifest = build([*argv, *suites])
    [s] = manifest["sources"]
    clean = out / s["clean_file"]
    assert (s["rows_kept"], s["sample"], s["rows_used"]) == (3, 2, 2)
    assert s["clean_sha256"] == hashlib.sha256(clean.read_bytes()).hexdigest()
    assert seen == {"datasets": (f"openai:{clean}",), "data_only": True, "conversations": 5}
    assert manifest["examples"]["sha256_uncompressed"] == hashlib.sha256(b"examples").hexdigest()
    assert manifest["examples"]["tokens"] == 70
    # the clean file is the kept conversations, unchanged, in a shape sft.datasets reads
    rows = load(clean, "openai", log=quiet).conversations
    kept = {
        "What is the area of a 3 by 4 rectangle?",
        "Area of a 3 by 4 plot for tomorrow's survey.",
        "Compute a 5 by 6 area.",
    }
    assert len(rows) == 2 and all(m[0].content in kept for m, _ in rows)
    assert all(m[1].tool_calls[0].name == "area" and t[0]["function"]["name"] == "area" for m, t in rows)
    # the same seed keeps the same sample
    again = build([*argv, "--out", str(tmp_path / "again"), *suites])
    assert again["sources"][0]["clean_sha256"] == s["clean_sha256"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--source", "toolace"], "expected NAME=PATH"),
        (["--source", "glaive=x.json"], "unknown source 'glaive'"),
        (["--source", "toolace=/no/such/file.json"], "not found"),
        ([], "no --source given"),
    ],
)
def test_bad_sources_are_named(tmp_path, suites, argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        public_mix.main(["--out", str(tmp_path / "o"), *argv, *suites])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_when2call_test_split_is_refused_for_training(tmp_path, suites, capsys):
    test = tmp_path / "when2call_test_llm_judge.jsonl"
    test.write_text(
        json.dumps(
            {"question": "Hi there, how are you?", "answers": {"direct": "Fine."}, "correct_answer": "direct"}
        )
        + "\n"
    )
    with pytest.raises(SystemExit):
        public_mix.main(["--out", str(tmp_path / "o"), "--source", f"when2call={test}", *suites])
    assert "evaluation set" in capsys.readouterr().err and not (tmp_path / "o" / "clean").exists()
    manifest = build(["--out", str(tmp_path / "o"), "--source", f"when2call={test}", "--check-only", *suites])
    assert manifest["sources"][0]["rows_converted"] == 1
    renamed = tmp_path / "when2call.jsonl"  # renamed, still multiple choice: still refused
    renamed.write_bytes(test.read_bytes())
    with pytest.raises(SystemExit):
        public_mix.main(["--out", str(tmp_path / "o"), "--source", f"when2call={renamed}", *suites])
    assert "evaluation set" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name", ["level-3.json", "level-1-api.json", "AddAgenda-level-1-1.jsonl", "lv3-test.json"]
)
def test_apibank_evaluation_files_are_refused_for_training(tmp_path, suites, name, capsys):
    path = tmp_path / name
    path.write_text(json.dumps([{"instruction": "API-Request", "input": "User: hi", "output": "AI: hello"}]))
    with pytest.raises(SystemExit) as e:
        public_mix.main(["--out", str(tmp_path / "o"), "--source", f"apibank={path}", *suites])
    assert e.value.code == 2 and "API-Bank's evaluation files" in capsys.readouterr().err
    assert {"apibank", "sgd"} <= set(public_mix.SOURCES)
