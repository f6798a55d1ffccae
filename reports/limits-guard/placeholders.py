"""Recorded BFCL and ACEBench calls checked for placeholders (`agent.grounding.placeholder`): a
required argument whose text only names its own parameter, which the grounding guard now holds.

    python reports/limits-guard/placeholders.py BFCL_ROWS.jsonl [...] -- ACEBENCH_ROWS.jsonl [...] ACEBENCH_DIR

Both suites' items are one model step, scored on the decoded calls, and the guard acts after the
step: a call it holds is scored as no call. Prints each recorded call it would now hold.
"""

import sys

import acebench_limits
import bfcl_limits

from botpsy.agent import grounding


def newly_held(calls: list[dict], tools: dict, said: str) -> list[tuple[str, str]]:
    out = []
    for c in calls:
        ((name, args),) = c.items()
        required = set(tools.get(name, {}).get("required", []))
        out += [
            (f"{name}.{k}", v) for k, v in args.items() if k in required and grounding.placeholder(k, v, said)
        ]
    return out


def main(argv: list[str]) -> None:
    cut = argv.index("--")
    suites = [
        ("bfcl", bfcl_limits.recorded(argv[:cut])),
        ("acebench", acebench_limits.recorded(argv[cut + 1 : -1], argv[-1])),
    ]
    for suite, rows in suites:
        for r, tools, said in rows:
            if r["detail"].get("held"):
                continue
            found = newly_held(r["detail"]["calls"], tools, said.lower())
            if found:
                print(suite, r["category"], r["id"], "right" if r["ok"] else "wrong", found)


if __name__ == "__main__":
    main(sys.argv[1:])
