"""ACEBench's scoring rules, reimplemented: normal (call matching), special (phrases), agent (end state).

ACEBench (chenchen0103/ACEBench, `model_eval/`) judges three kinds of item. This module restates
its rules as pure functions over decoded calls, so botpsy's runs score as ACEBench's checker would
score the same calls. Facts carried over, and kept on purpose even where they are lenient, so the
figures stay comparable with ACEBench's leaderboard:

Normal items (`normal_checker`): the decoded output is a list of `{name: {arg: value}}`.
* The number of calls must equal the number of functions in the possible answer; answer keys
  lose a trailing `_<digits>` (two calls of one function are written `f` and `f_1`); every name
  must appear as often in the output as in the answer.
* Each answer call passes if some output call of that name passes `function_check` (one output
  call may satisfy two answer calls: there is no one-to-one matching).
* `function_check`: every required parameter present; no parameter outside the schema or the
  answer; the value's Python type must be the declared one (`number` means int, `float` float,
  `object`/`dict` dict, `array`/`list` list), else the answer's own type is accepted and the value
  is then not compared at all ("variable"); top-level numbers and booleans are type-checked only;
  strings compare after `normalise` (drop ` ,./-_*^`, lowercase, ' → ") with the answer a
  *substring* of the output outside agent items; lists compare element-wise after `normalise`;
  dicts need the same key count and each answer value's `str()` must be a substring of the
  output's (recursively for nested dicts); lists of dicts compare pairwise that way.
* A call with no arguments fails unless its schema's `parameters` is literally `{}`.
* Normal multi-turn rows are whole-whitespace-stripped before decoding (ACEBench does
  `"".join(text.split())`), which `strip_whitespace` applies to the decoded values.

Special items (`special_check`): substring tests on the model's raw output — incomplete: the
phrase "Missing necessary parameters", the function's name and every missing parameter's name;
error_param: "There is incorrect value" and every wrong value; irrelevant: "the limitations of
the function". Case-sensitive, as ACEBench's.

Agent items (`agent_check`): the saved attributes of each involved API class after the episode
(JSON round-tripped, as ACEBench's result files are) against the answer's class states: the class
count must match; each answer class is compared with the output class of the same key (an answer
key that matches none — e.g. "ReminderAPI" against "ReminderApi" in a few answers — is not
checked, as in ACEBench); dict attributes need every answer key equal, others plain equality.
`process_accuracy` is the share of milestone calls found in order among the agent's calls.

Parity: `tests/test_eval_acebench_parity.py` runs ACEBench's own checker and scenario classes from a
clone (`ACEBENCH_DIR`) beside these: at its commit 56dd66c, 5,493 normal outputs (answers and
mutations) got the same verdicts and 200 agent call sequences the same end states.

Aggregation (`aggregate`, ACEBench's `generate_result_csv`): normal = unweighted mean of its 12
categories, special = of its 3, agent = of its 2 (end-to-end accuracy); overall = 0.578 normal +
0.2676 special + 0.1545 agent. Normal multi-turn categories score per conversation: a
conversation counts only if every one of its turns passes.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from botpsy.eval.acebench_data import AGENT, NORMAL, SPECIAL

# ACEBench's declared-type → Python-type table. "number" is int there, and "enum" is never a
# value's type (so an enum typed "enum" is always judged by the answer's type, value unchecked).
PY_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "int": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "list": list,
    "list(string)": list,
    "list(enum)": list,
    "objectArray": list,
    "dict": dict,
    "object": dict,
    "any": str,
    "number": int,
    "enum": type("_EnumNeverAValue", (), {}),
}
NESTED = {"array", "tuple", "list(string)", "list(enum)", "object", "objectArray"}

INCOMPLETE_PHRASE = "Missing necessary parameters"
IRRELEVANT_REPLY = "Due to the limitations of the function, I cannot solve this problem."
ERROR_PHRASE = "There is incorrect value"
IRRELEVANT_PHRASE = "the limitations of the function"

_DROP = re.compile(r"[ ,./\-_*^]")


def normalise(text: str) -> str:
    """ACEBench's string standardisation: drop ` ,./-_*^`, lowercase, single → double quotes."""
    return _DROP.sub("", text).lower().replace("'", '"')


def strip_whitespace(value: Any) -> Any:
    """Every string (dict keys too) without whitespace: the decoded form of a whitespace-stripped call."""
    if isinstance(value, str):
        return "".join(value.split())
    if isinstance(value, list):
        return [strip_whitespace(v) for v in value]
    if isinstance(value, tuple):
        return tuple(strip_whitespace(v) for v in value)
    if isinstance(value, dict):
        return {strip_whitespace(k): strip_whitespace(v) for k, v in value.items()}
    return value


def _verdict(ok: bool, error: str = "", kind: str = "") -> dict[str, Any]:
    return {"valid": ok, "error": error, "error_type": kind}


OK = _verdict(True)


def _as_bool(value: Any) -> Any:
    return {"true": True, "false": False}.get(value, value) if isinstance(value, str) else value


def _type_check(value: Any, answer: Any, declared: Any, nested: Any) -> tuple[dict[str, Any], bool]:
    """(verdict, variable): `variable` means the value passed on type and is not compared.

    As ACEBench's `type_checker`: a nested type is checked only against answer options that are
    lists themselves; when none passes (an empty answer list included) the value fails even if
    its outer type is the answer's."""
    answer_type = type(answer) if answer != "" else None
    variable = answer_type is not None and answer_type is not declared
    value = _as_bool(value)
    verdict = OK
    if type(value) is declared:
        if nested is None:
            return OK, variable
        options = answer if isinstance(answer, (list, tuple, dict, str)) else ()
        for option in options:
            if not isinstance(option, list) or all(
                _type_check(v, option, nested, None)[0]["valid"] for v in value
            ):
                return OK, variable
        verdict = _verdict(False, f"inner type: expected {getattr(nested, '__name__', nested)}", "type_error")
    if answer_type is not None and (type(value) is answer_type or answer == value):
        return verdict, True
    return _verdict(
        False, f"wrong type: expected {getattr(declared, '__name__', declared)}", "type_error"
    ), variable


def _dict_check(value: Any, answer: dict[str, Any]) -> bool:
    if not isinstance(value, dict) or len(value) != len(answer):
        return False
    for key, v in value.items():
        v = _as_bool(v)
        if key not in answer:
            return False
        expected = answer[key]
        if isinstance(expected, dict):
            if not _dict_check(v, expected):
                return False
            continue
        want = normalise(expected) if isinstance(expected, str) else expected
        got = normalise(v) if isinstance(v, str) else v
        if str(want) not in str(got):
            return False
    return True


def _list_check(value: list[Any], answer: list[Any]) -> bool:
    norm = lambda xs: [normalise(x) if isinstance(x, str) else x for x in xs]  # noqa: E731
    return norm(list(value)) == norm(answer)


def function_check(
    doc: dict[str, Any] | None, call: dict[str, Any], answer: dict[str, Any], category: str
) -> dict[str, Any]:
    """One output call `{name: args}` against one answer call `{name: args}` (see the module doc)."""
    if doc is None:
        return _verdict(
            False, f"no function in the item is named like {next(iter(answer))!r}", "wrong_function_name"
        )
    want = next(iter(answer.values()))
    args = next(iter(call.values()))
    params = doc.get("parameters", {})
    if args == {} and params == {}:
        return OK
    if args == {} or params == {}:
        return _verdict(False, "a call without arguments (or a function without parameters)", "wrong_param")
    props = params.get("properties", {}) or {}
    if want == props:
        return OK
    if want == {}:
        return _verdict(False, "the answer has no arguments", "wrong_param")
    name = doc["name"]
    if name not in call:
        return _verdict(False, f"expected {name}, got {next(iter(call))}", "wrong_function_name")
    for p in params.get("required", []) or []:
        if p not in args:
            return _verdict(False, f"missing required parameter {p}", "lack_args")
    for p, value in args.items():
        if p not in props or p not in want:
            return _verdict(False, f"parameter {p} is not in the schema or the answer", "addition_args")
        declared_name = props[p].get("type", "string")
        declared = PY_TYPES.get(declared_name, str)
        nested = None
        if declared_name in NESTED:
            items = props[p].get("items")
            inner = items.get("type") if isinstance(items, dict) and "type" in items else None
            if inner is None:
                inner = (
                    "string" if "string" in declared_name else "enum" if "enum" in declared_name else "dict"
                )
            nested = PY_TYPES.get(inner, str)
        if declared_name == "tuple" and isinstance(value, tuple):
            value = list(value)
        if declared_name == "float" and type(value) is int:
            value = float(value)
        verdict, variable = _type_check(value, want[p], declared, nested)
        if not verdict["valid"]:
            return _verdict(False, f"{p}: {verdict['error']}", "type_error")
        if variable:
            continue
        expected = want[p]
        if declared is dict:
            ok = isinstance(expected, dict) and _dict_check(value, expected)
        elif declared is list and nested is dict:
            ok = (
                isinstance(expected, list)
                and len(value) == len(expected)
                and all(
                    isinstance(e, dict) and _dict_check(v, e) for v, e in zip(value, expected, strict=True)
                )
            )
        elif declared is str:
            exp, got = normalise(str(expected)), normalise(str(value))
            ok = exp == got if "agent" in category else exp in got
        elif declared is list:
            ok = isinstance(expected, list) and _list_check(value, expected)
        else:
            ok = True  # numbers and booleans: the type was all ACEBench checks
        if not ok:
            return _verdict(
                False, f"wrong value for {p}: expected {expected!r}, got {value!r}", "value_error"
            )
    return OK


def base_name(key: str) -> str:
    return re.sub(r"_\d+$", "", key)


def find_doc(functions: list[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """ACEBench's lookup: the first function whose name occurs inside the answer key."""
    return next((f for f in functions if f.get("name", "") in key), None)


def normal_checker(
    functions: list[dict[str, Any]], output: list[dict[str, Any]], answer: dict[str, Any], category: str
) -> dict[str, Any]:
    """One decoded output (a list of `{name: args}`) against one possible answer (`{name: args, …}`)."""
    if len(output) != len(answer):
        return _verdict(False, f"{len(output)} calls, the answer has {len(answer)}", "wrong_functions_number")
    wanted = [(key, base_name(key), args) for key, args in answer.items()]
    got = Counter(next(iter(c)) for c in output)
    need = Counter(base for _, base, _ in wanted)
    for name in got:
        if name not in need:
            return _verdict(False, f"{name} is not in the answer", "function_mismatch")
    for name, n in need.items():
        if got.get(name) != n:
            return _verdict(
                False, f"{name}: {n} calls expected, {got.get(name, 0)} made", "function_mismatch"
            )
    for key, base, args in wanted:
        doc = find_doc(functions, key)
        verdicts = [function_check(doc, c, {base: args}, category) for c in output if next(iter(c)) == base]
        if not any(v["valid"] for v in verdicts):
            return verdicts[-1]
    return OK


def check_normal(functions: list[dict[str, Any]], output: Any, truth: Any, category: str) -> dict[str, Any]:
    """An item's verdict: the output must be a list of single-key dicts, and pass any one answer."""
    if not isinstance(output, list) or not all(isinstance(c, dict) and len(c) == 1 for c in output):
        return _verdict(False, "the output is not a list of calls", "wrong_output_format")
    if "multi_turn" in category:
        output = [{k: strip_whitespace(v)} for c in output for k, v in c.items()]
    answers = truth if isinstance(truth, list) else [truth]
    first = None
    for answer in answers:
        v = normal_checker(functions, output, answer, category)
        if v["valid"]:
            return v
        first = first or v
    return first or _verdict(False, "no possible answer", "no_answer")


def missing_reply(missing: dict[str, list[str]]) -> str:
    """ACEBench's reply form for a request that lacks values: {function: [parameter, ...]}."""
    return " ".join(
        f"{INCOMPLETE_PHRASE} ({', '.join(params)}) for the api ({name})" for name, params in missing.items()
    )


def incorrect_reply(wrong: dict[str, list[Any]]) -> str:
    """ACEBench's reply form for values a function does not take: {parameter: [value, ...]}."""
    return " ".join(
        f"{ERROR_PHRASE} ({', '.join(map(str, values))}) for the parameters ({key}) in the conversation history."
        for key, values in wrong.items()
    )


def special_check(category: str, output: str, truth: Any) -> dict[str, Any]:
    """ACEBench's phrase tests on the model's raw output for the three special categories."""
    if "incomplete" in category:
        for name, missing in truth.items():
            if INCOMPLETE_PHRASE not in output:
                return _verdict(False, f"did not say {INCOMPLETE_PHRASE!r}", "error_detection")
            if name not in output:
                return _verdict(False, f"did not name the function {name}", "error_correction")
            for p in missing:
                if p not in output:
                    return _verdict(False, f"did not name the missing parameter {p}", "error_correction")
        return OK
    if "error" in category:
        for _, values in truth.items():
            if ERROR_PHRASE not in output:
                return _verdict(False, f"did not say {ERROR_PHRASE!r}", "error_detection")
            for v in values:
                if v not in output:
                    return _verdict(False, f"did not name the wrong value {v}", "error_correction")
        return OK
    if IRRELEVANT_PHRASE not in output:
        return _verdict(False, f"did not say {IRRELEVANT_PHRASE!r}", "error_detection")
    return OK


def agent_check(states: list[dict[str, Any]], truth: list[dict[str, Any]]) -> dict[str, Any]:
    """End states `[{Class: {attr: value}}]` against the answer's (both JSON round-tripped)."""
    states = json.loads(json.dumps(states))
    if len(states) != len(truth):
        return _verdict(
            False, f"{len(states)} API classes, the answer has {len(truth)}", "wrong_number_of_classes"
        )
    errors = []
    for want in truth:
        match = next((s for s in states if set(s) == set(want)), None)
        if match is None:
            continue  # ACEBench leaves an answer class no output class matches unchecked
        (cls, want_attrs), got_attrs = next(iter(want.items())), next(iter(match.values()))
        for attr, value in got_attrs.items():
            if attr not in want_attrs:
                errors.append(f"{cls}.{attr} is not in the answer")
            elif isinstance(want_attrs[attr], dict):
                for k, v in want_attrs[attr].items():
                    if not isinstance(value, dict) or k not in value or value[k] != v:
                        errors.append(f"{cls}.{attr}[{k}] differs")
            elif want_attrs[attr] != value:
                errors.append(f"{cls}.{attr} differs")
    return _verdict(not errors, "; ".join(errors[:5]), "class_attributes_wrong" if errors else "")


def process_accuracy(calls: list[str], milestones: list[Any]) -> float:
    """Share of milestone calls found in order among the agent's call texts (best over alternatives)."""
    if milestones and isinstance(milestones[0], list):
        return max((process_accuracy(calls, m) for m in milestones), default=1.0)
    if not milestones:
        return 1.0
    found, i = 0, 0
    for stone in milestones:
        while i < len(calls):
            i += 1
            if calls[i - 1].strip() == str(stone).strip():
                found += 1
                break
    return round(found / len(milestones), 3)


# ACEBench's weights of its three groups in the overall score (`generate_result_csv`).
WEIGHTS = {"normal": 0.578, "special": 0.2676, "agent": 0.1545}


def aggregate(accuracy: dict[str, float]) -> dict[str, Any]:
    """Groups and overall from {category: accuracy}. `overall_official` is ACEBench's formula with
    every category not run counted as 0 (12 normal, 3 special, 2 agent); `overall` averages over
    the categories and groups that were run (a partial run of a perfect model reaches 1)."""
    members = {"normal": NORMAL, "special": SPECIAL, "agent": AGENT}
    groups, official = {}, {}
    for g, cats in members.items():
        ran = [accuracy[c] for c in cats if c in accuracy]
        if ran:
            groups[g] = sum(ran) / len(ran)
        official[g] = sum(accuracy.get(c, 0.0) for c in cats) / len(cats)
    weight = sum(WEIGHTS[g] for g in groups)
    overall = sum(WEIGHTS[g] * v for g, v in groups.items()) / weight if weight else 0.0
    return {
        "overall": overall,
        "overall_official": sum(WEIGHTS[g] * official[g] for g in WEIGHTS),
        "groups": groups,
    }
