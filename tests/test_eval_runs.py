"""Per-item results: the resumable cache and the one loop that turns any fault into a failed item."""

from __future__ import annotations

from botpsy.engine.base import EngineError
from botpsy.eval.runs import ItemResult, ResultCache, failure_counts, run_items


def ok_item(item):
    return ItemResult("s", "c", item, "m", ok=item != "b", reason="" if item != "b" else "wrong")


def test_faults_become_failed_items_with_their_reason():
    def one(item):
        if item == "boom":
            raise EngineError("the backend stopped responding")
        if item == "ctx":
            raise EngineError("the conversation (9000 tokens) fills the context window (8192)")
        if item == "bad":
            raise KeyError("prompt")
        return ok_item(item)

    cache = ResultCache(None, "s", "m", {})
    rs = run_items(((("c", i, i)) for i in ["a", "boom", "b", "ctx", "bad"]), one, cache, "s", "m")
    assert [r.ok for r in rs] == [True, False, False, False, False]
    assert failure_counts(rs) == {
        "error: EngineError": 1,
        "wrong": 1,
        "error: context window full": 1,
        "error: KeyError": 1,
    }
    assert rs[1].error and rs[1].detail["message"] == "the backend stopped responding"


def test_cache_resumes_ignores_a_torn_line_and_separates_configs(tmp_path):
    seen = []

    def one(item):
        seen.append(item)
        return ok_item(item)

    items = [("c", i, i) for i in "abc"]
    run_items(items, one, ResultCache(tmp_path, "s", "m", {"k": 1}), "s", "m")
    path = next((tmp_path / "cache" / "s").glob("*.jsonl"))
    path.write_text(path.read_text() + '{"suite": "s", "categ')  # an interrupted write
    rs = run_items(items, one, ResultCache(tmp_path, "s", "m", {"k": 1}), "s", "m")
    assert seen == list("abc") and [r.id for r in rs] == list("abc")
    run_items(items, one, ResultCache(tmp_path, "s", "m", {"k": 2}), "s", "m")  # another config: runs again
    assert seen == list("abcabc")
