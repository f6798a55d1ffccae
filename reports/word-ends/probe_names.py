"""How sure the model is of the tool it names, against BM25's ranking: for each BFCL `multiple`
item, the log-probability of "NAME fits" opening the reasoning, for every listed tool, and each
tool's BM25 score for the request (`agent.retrieval.rank_tools`).

    OMP_NUM_THREADS=1 python reports/word-ends/probe_names.py names-multiple.jsonl

Rows: the item, the right tool (BFCL's answer), the tool the model called (the latest recorded
calls, `table.recorded`), `lp` and `bm` per tool. The run that chose `TOOL_PRIOR` stopped after 73
items (`names-multiple.jsonl`); its prompt is the agent's, stopped before the model's first token.
"""

import json
import sys

import llama_cpp
import numpy as np
from table import recorded

import botpsy.eval.bfcl_data as BD
from botpsy.agent.loop import Agent, AgentConfig
from botpsy.agent.retrieval import rank_tools
from botpsy.engine.load import load_engine
from botpsy.eval.bfcl import BfclFormat, StubEnv, _question_text, bfcl_tools


class Stop(Exception):
    pass


def main() -> None:
    calls = {key: c for key, (_, c) in recorded().items() if key[0] == "multiple"}
    engine = load_engine(None, n_threads=1)
    llm, prompt = engine.llm, {}

    def capture(ids, *args, **kwargs):
        prompt["ids"] = list(ids)
        raise Stop

    engine.generate = capture

    def logprobs() -> np.ndarray:
        lg = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(llm.n_vocab(),))
        m = lg.max()
        return lg - m - np.log(np.exp(lg - m).sum())

    items = BD.load_category("multiple")
    truth = BD.load_truth("multiple", items)
    with open(sys.argv[1], "w") as out:
        for e in items:
            system, user = _question_text(e["question"][0])
            tools = bfcl_tools(e["function"])
            agent = Agent(engine, StubEnv(tools), system, AgentConfig(max_steps=1))
            agent.fmt = BfclFormat(engine.chat_format.name)
            try:
                agent.send(user)
            except Stop:
                pass
            llm.reset()
            llm.eval(prompt["ids"])
            n, first = llm.n_tokens, logprobs()
            lp = {}
            for t in tools:
                toks = engine._tokenize_text(t.name + " fits")
                llm.n_tokens = n
                total = float(first[toks[0]])
                for a, b in zip(toks, toks[1:], strict=False):
                    llm.eval([a])
                    total += float(logprobs()[b])
                lp[t.name] = total
            made = calls.get(("multiple", e["id"])) or []
            row = {
                "id": e["id"],
                "gold": next(iter(truth[e["id"]][0])),
                "model": next(iter(made[0])) if made else None,
                "lp": lp,
                "bm": {t.name: s for t, s in rank_tools(user, tools)},
            }
            out.write(json.dumps(row) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
