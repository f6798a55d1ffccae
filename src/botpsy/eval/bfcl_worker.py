"""The BFCL side of the process boundary: official data, checkers and simulated APIs, in a child process.

BFCL's checkers `eval()` strings built from model output, and its multi-turn APIs keep their state
in module globals keyed by model name and entry id. Both belong in a process of their own: a
hostile argument cannot reach botpsy's process, and a checker that crashes or hangs costs one
item, not the run (`botpsy.eval.bfcl.BfclWorker` restarts it).

Protocol: one JSON request per line on stdin, one JSON reply per line on the original stdout
(`{"ok": true, ...}` or `{"ok": false, "error": "..."}`). Everything BFCL prints goes to stderr.

Requests (`op`):
* `ast` — {category, id, output: [{name: {arg: value}}]} → {valid, error_type, error}: the
  official `ast_checker` on the entry's undecorated function docs and possible answers, after the
  same output-shape check the leaderboard runner applies.
* `relevance` — {category, output} → {valid, error_type}: a call is expected (live_relevance)
  or forbidden (irrelevance, live_irrelevance); an empty output is no call.
* `execute` — {category, id, tag, calls: [{name: args}]} → {results}: run calls on the entry's
  simulated APIs (instances persist per tag and entry, across turns, as in BFCL's inference).
* `multi_turn` — {category, id, tag, output: [[[{name: args}]]], force_quit} → {valid, error_type}:
  the official `multi_turn_checker`, with the runner's force-quit and length rules.
* `forget` — {tag}: drop the simulated-API instances of a finished item.
"""

from __future__ import annotations

import json
import os
import re
import sys
import traceback
from typing import Any

# The checker resolves function-name rewriting through a model's config; this Qwen FC entry keeps
# dots in names, as botpsy's formats do.
CHECKER_MODEL = "Qwen/Qwen3-0.6B-FC"


class Worker:
    def __init__(self) -> None:
        from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

        self._load_entries = load_dataset_entry
        self._load_truth = load_ground_truth_entry
        self.entries: dict[str, dict[str, Any]] = {}
        self.truth: dict[str, Any] = {}

    def _entry(self, category: str, item_id: str) -> dict[str, Any]:
        if item_id not in self.entries:
            # The leaderboard checks against the docs without the language hints inference adds.
            prompts = self._load_entries(category, include_prereq=False, include_language_specific_hint=False)
            for e in prompts:
                self.entries[e["id"]] = e
            try:
                gts = self._load_truth(category)
            except FileNotFoundError:  # relevance categories have no possible answers
                gts = []
            for p, g in zip(prompts, gts, strict=False):  # aligned by index, as the runner does
                self.truth[p["id"]] = g["ground_truth"]
        if item_id not in self.entries:
            raise KeyError(f"no BFCL entry {item_id!r} in {category}")
        return self.entries[item_id]

    def ast(self, category: str, id: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        from bfcl_eval.constants.enums import Language
        from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
        from bfcl_eval.utils import is_function_calling_format_output, is_java, is_js

        entry = self._entry(category, id)
        if not is_function_calling_format_output(output):
            return {"valid": False, "error_type": "ast_decoder:decoder_wrong_output_format", "error": []}
        lang = (
            Language.JAVA
            if is_java(category)
            else Language.JAVASCRIPT
            if is_js(category)
            else Language.PYTHON
        )
        res = ast_checker(entry["function"], output, self.truth[id], lang, category, CHECKER_MODEL)
        return {
            "valid": bool(res["valid"]),
            "error_type": res.get("error_type", ""),
            "error": res.get("error", []),
        }

    def relevance(self, category: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        from bfcl_eval.utils import is_empty_output

        made_call = not is_empty_output(output)
        if "irrelevance" in category:
            ok = not made_call
            return {"valid": ok, "error_type": "" if ok else "irrelevance_error:decoder_success"}
        return {"valid": made_call, "error_type": "" if made_call else "relevance_error:decoder_failed"}

    def execute(self, category: str, id: str, tag: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call
        from bfcl_eval.model_handler.utils import convert_to_function_call

        entry = self._entry(category, id)
        results, _ = execute_multi_turn_func_call(
            convert_to_function_call(calls) if calls else [],
            entry.get("initial_config", {}),
            entry["involved_classes"],
            tag,
            id,
            long_context="long_context" in category or "composite" in category,
            is_evaL_run=False,
        )
        return {"results": results}

    def multi_turn(
        self, category: str, id: str, tag: str, output: list[list[list[dict[str, Any]]]], force_quit: bool
    ) -> dict[str, Any]:
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import is_empty_execute_response
        from bfcl_eval.model_handler.utils import convert_to_function_call

        entry = dict(self._entry(category, id))
        entry.pop("function", None)
        truth = self.truth[id]
        if force_quit or len(output) != len(truth):
            return {"valid": False, "error_type": "multi_turn:force_terminated"}
        decoded = []
        for turn in output:
            steps = []
            for step in turn:
                strings = convert_to_function_call(step) if step else []
                if not is_empty_execute_response(strings):
                    steps.append(strings)
            decoded.append(steps)
        res = multi_turn_checker(decoded, truth, entry, category, tag)
        return {"valid": bool(res["valid"]), "error_type": res.get("error_type", "")}

    def forget(self, tag: str) -> dict[str, Any]:
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

        safe = re.sub(r"[-./:]", "_", tag)
        g = vars(multi_turn_utils)
        for k in [k for k in g if k.startswith(safe)]:
            del g[k]
        return {}


def main() -> int:
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything BFCL prints lands on stderr, never in the protocol stream
    sys.stdout = sys.stderr
    try:
        worker = Worker()
    except Exception as e:
        proto.write(
            json.dumps({"ok": False, "error": f"cannot load bfcl-eval: {type(e).__name__}: {e}"}) + "\n"
        )
        return 1
    proto.write(json.dumps({"ok": True, "ready": True}) + "\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req.pop("op")
            reply = {"ok": True, **getattr(worker, op)(**req)}
        except Exception as e:
            reply = {
                "ok": False,
                "error": f"{type(e).__name__}: {str(e)[:300]}",
                "trace": traceback.format_exc(limit=3)[-800:],
            }
        proto.write(json.dumps(reply, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
