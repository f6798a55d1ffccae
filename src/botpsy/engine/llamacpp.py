"""The on-device backend: a GGUF model through llama.cpp (llama-cpp-python), no torch needed.

`Llama.generate` already re-evaluates only the suffix of a prompt that extends the cached one;
this wrapper keeps that true by being fed append-only token ids, measures how much was reused,
and turns every load failure (missing file, truncated GGUF, unknown architecture) into an
`EngineError` with a one-line explanation.

Options beyond what `Llama()` takes:

* `n_threads_batch`: threads for multi-token batches (prompts). `Llama` defaults it to every
  core whatever `n_threads` says; on a shared CPU that oversubscribes and small batches (a
  14-token follow-up turn) slow down 10-30x, so benchmarks pin it to `n_threads`.
* `n_rs_seq`: recurrent-state snapshots kept per sequence (llama.cpp's experimental context
  parameter, not exposed by `Llama()`). Qwen3.5's Gated DeltaNet layers hold one running state,
  not a per-token cache, so dropping the last tokens is impossible without a snapshot: by default
  llama.cpp refuses and `Llama.generate` re-prefills the whole conversation. With `n_rs_seq` = k
  llama.cpp accepts rollbacks of up to k tokens — but (checked on llama.cpp as vendored in
  llama-cpp-python 0.3.36, `tests/test_grammar_rollback.py`) the restored state is exact only
  when the target lies *inside the last decoded batch*: each batch writes snapshots of its own
  last k tokens, so after one-token decode steps the older slots are stale and a rollback is
  silently wrong (next-token logit correlation 0.99 instead of 1; greedy output changes). That is
  the speculative-decoding pattern (evaluate a draft batch, drop the rejected tail), not
  regeneration. So with `n_rs_seq` set, `generate` clears the memory itself whenever the new
  prompt does not extend what is cached (a re-prefill, as without the option), and the option
  is what makes draft / prompt-lookup decoding possible on hybrid models. Memory: the recurrent
  state times (1 + k), about 19 MB per snapshot for Qwen3.5-0.8B (18 layers × 16 heads ×
  128 × 128 fp32). Architectures without support clamp it to 0 (see `rs_rollback`).
* `extra_bufts` (auto): llama.cpp's extra CPU buffer types, where weights are repacked at load
  (AVX2/NEON interleaved layouts, Intel AMX tiles). On a CPU with AMX (this project's CI and dev
  machines: Sapphire Rapids-class, `amx_int8` in /proc/cpuinfo) a llama-cpp-python 0.3.36 wheel
  built with `-march=native` compiles ggml's AMX buffer type in, and decoding through it
  segfaults (a Q8_0 or Q4_K model, first `decode`; `tests/test_export_tiny_qwen.py` crashed the
  whole test run). Auto turns extra buffer types off on such CPUs and keeps them elsewhere, where
  the repacked Q4_0/Q4_K layouts are the fast path.
* `state_cache` (off here, on through `engine.load.load_engine`): a `StateCache` folder where the
  state after the system block is saved, so the next process restores it instead of prefilling
  it (`engine.state_cache`).
* `grammar_first` (on): with a grammar, the model's own choice is checked against it first and
  the vocabulary masked only on a refusal (`engine.grammar.GrammarGate`), instead of llama.cpp's
  chain masking all 248k Qwen3.5 tokens on every step. Greedy output is the same either way.

Thread defaults (`default_threads`): prompts are batched on every core (llama.cpp's own default),
but tokens are decoded on every core but one. A decode step of a small model is hundreds of short
operations with a barrier after each, and on this 2-core CPU the barrier was what decode waited
on: the embedded model decoded at 14 tok/s on 2 passively waiting threads against 38-39 on one,
quiet or beside a busy process (`bench.contention`; 2 spinning threads: 55 quiet, 18 beside it).
BotPsy's 0.8B shape (Q4_K_M) loses 14% quiet on one thread (11.2 against 13.1 tok/s) and gains
10% beside a busy process (11.2 against 10.2). A user's `--threads N` sets both counts.

Memory defaults (peak RSS against GGUF + KV cache, the device budget; measured on this 2-core
CPU, prefill and decode speed unchanged within noise):

* `n_ubatch` 128, not llama.cpp's 512: the compute buffer grows with the micro-batch (without flash
  attention the KQ matrix is n_ubatch × n_ctx × heads floats). The model's share of peak RSS for
  the embedded SmolLM2-135M went from 268 to 235 MiB, for the Qwen3.5-0.8B shape (Q4_K_M) from 932
  to 895 MiB.
* `n_batch` = `n_ubatch` (128), not 512: llama-cpp-python's batch holds an n_ctx-long sequence
  id array per token (512 × 16 KiB at n_ctx 4096) and llama.cpp sizes its batch buffers by it;
  a batch of one micro-batch saved 3.5 MiB of the embedded model's peak (293.5 → 290.0 MiB),
  prefill 1.007× and decode 1.00× (8 interleaved readings each, `reports/bench-memory`).
* `use_mmap` off: llama.cpp repacks Q4_K/Q4_0 weights into a CPU-friendly layout at load, so a
  mapped file is read (and counted) once and the repacked copy lives beside it; reading the file
  into memory keeps one copy. Qwen3.5-0.8B Q4_K_M: 886 → 680 MiB; Q8_0 and bf16 unchanged, and
  loading is faster (Q8_0 2.9 → 1.7 s). A LoRA adapter needs it off anyway.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from botpsy.engine.base import EngineBase, EngineError, Generation, TurnEnd
from botpsy.engine.copy_guide import CopyGuide
from botpsy.engine.llama_memory import release_replaced_samplers
from botpsy.engine.state_cache import PrefixStates
from botpsy.protocol.blocks import encode
from botpsy.protocol.formats import IM_END, IM_START, ChatFormat, detect_format
from botpsy.protocol.messages import StepTiming

GGUF_MAGIC = b"GGUF"


def check_gguf(path: Path, what: str = "model") -> None:
    if not path.exists():
        raise EngineError(f"{what} file not found: {path}")
    if path.is_dir():
        raise EngineError(f"{what} path is a folder, expected a .gguf file: {path}")
    with open(path, "rb") as f:
        head = f.read(4)
    if head != GGUF_MAGIC:
        raise EngineError(f"{path} is not a GGUF file (starts with {head!r}, expected {GGUF_MAGIC!r})")


_PARAMS_LOCK = threading.Lock()


def default_threads(cores: int | None = None) -> int:
    """Decode threads when none are given: every core but one, at least one and at most 8 (module doc)."""
    cores = cores if cores is not None else (os.cpu_count() or 2)
    return max(1, min(cores - 1, 8))


def cpu_has_amx(cpuinfo: str | None = None) -> bool:
    """Whether the CPU advertises Intel AMX (Linux's `amx_int8` flag); False where unknown."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(errors="replace")
        except OSError:
            return False
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return "amx_int8" in line.split(":", 1)[-1].split()
    return False


@contextlib.contextmanager
def _llama_params(model: dict | None = None, context: dict | None = None):
    """Make `Llama()` build its model and context with extra `llama_*_params` fields set.

    `Llama.__init__` builds its params from `llama_cpp.llama_model_default_params()` and
    `llama_context_default_params()` and loads right away, with no hook in between; wrapping those
    functions for the duration of the constructor (under a lock) sets the fields before the model
    and context exist, where setting them afterwards would mean loading twice.
    """
    patches = {
        name: fields
        for name, fields in (("llama_model_default_params", model), ("llama_context_default_params", context))
        if fields
    }
    if not patches:
        yield
        return
    import llama_cpp.llama as llama_module

    lib = llama_module.llama_cpp
    originals = {name: getattr(lib, name) for name in patches}

    def with_fields(original, fields):
        def make():
            params = original()
            for key, value in fields.items():
                setattr(params, key, value)
            return params

        return make

    with _PARAMS_LOCK:
        for name, fields in patches.items():
            setattr(lib, name, with_fields(originals[name], fields))
        try:
            yield
        finally:
            for name, original in originals.items():
                setattr(lib, name, original)


def import_llama():
    """`llama_cpp.Llama`, its OpenMP runtime loaded with `OMP_WAIT_POLICY=PASSIVE` unless the user
    chose a policy.

    llama.cpp's CPU threads meet at a barrier after every operation, and libgomp's default is to
    spin there before sleeping. On a CPU another process also uses, the spinning thread burns the
    time slice its partner needs: measured on this 2-core machine with other load, the embedded
    model decoded at 1-3 tok/s on 2 spinning threads against 10-30 tok/s with PASSIVE (and 8-23
    on one thread). libgomp reads the variable once, when it is loaded, so it is set around the
    import only; torch, which carries its own libgomp, is left to its own default.
    """
    if "llama_cpp" not in sys.modules and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
        try:
            from llama_cpp import Llama
        finally:
            os.environ.pop("OMP_WAIT_POLICY", None)
    from llama_cpp import Llama

    return Llama


@contextlib.contextmanager
def _quiet_stderr():
    """llama.cpp prints its load log on fd 2; keep it off the user's terminal."""
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


ASSISTANT_OPEN = f"{IM_START}assistant"


class LlamaCppEngine(EngineBase):
    def __init__(
        self,
        model_path: str | Path,
        lora_path: str | Path | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        chat_format: str | None = None,
        seed: int = 0,
        verbose: bool = False,
        n_threads_batch: int | None = None,
        n_rs_seq: int = 0,
        grammar_first: bool = True,
        n_ubatch: int = 128,
        flash_attn: bool = False,
        use_mmap: bool = False,
        extra_bufts: bool | None = None,
        state_cache=None,
    ):
        Llama = import_llama()
        model_path = Path(model_path)
        check_gguf(model_path)
        if lora_path is not None:
            check_gguf(Path(lora_path), "LoRA adapter")
        t0 = time.perf_counter()
        ctx = contextlib.nullcontext() if verbose else _quiet_stderr()
        if extra_bufts is None:
            extra_bufts = not cpu_has_amx()
        self.extra_bufts = extra_bufts
        model_fields = {} if extra_bufts else {"use_extra_bufts": False}
        context_fields = {"n_rs_seq": n_rs_seq} if n_rs_seq else {}
        try:
            with ctx, _llama_params(model=model_fields, context=context_fields):
                self.llm = Llama(
                    model_path=str(model_path),
                    lora_path=str(lora_path) if lora_path else None,
                    n_ctx=n_ctx,
                    n_threads=n_threads or default_threads(),
                    n_batch=n_ubatch,  # one micro-batch per call: the module doc's memory defaults
                    n_ubatch=n_ubatch,
                    flash_attn=flash_attn,
                    seed=seed,
                    verbose=verbose,
                    use_mmap=use_mmap and lora_path is None,
                    **({"n_threads_batch": n_threads_batch} if n_threads_batch is not None else {}),
                )
        except (ValueError, RuntimeError, OSError) as e:
            raise EngineError(
                f"llama.cpp could not load {model_path.name}: {e}. The file may be truncated or of an "
                "architecture this llama.cpp build does not know."
            ) from None
        self.load_s = time.perf_counter() - t0
        release_replaced_samplers(self.llm)  # each turn's sampler freed now, not at a GC (llama_memory)
        self.name = model_path.name if lora_path is None else f"{model_path.name}+{Path(lora_path).name}"
        template = self.llm.metadata.get("tokenizer.chat_template")
        self.chat_format = ChatFormat(chat_format or detect_format(template))
        self.n_ctx = n_ctx
        self.n_rs_seq = n_rs_seq
        self.grammar_first = grammar_first
        self.grammar_stats: dict[str, int] = {}
        self._seed = seed
        self.turn_end = TurnEnd(self.tokenize(IM_END), [self.llm.token_eos()])
        if self.llm.metadata.get("tokenizer.ggml.add_bos_token") == "true" and self.llm.token_bos() >= 0:
            self.bos_ids = [self.llm.token_bos()]
        self.stop_ids = self.turn_end.stop_ids
        # The system block's state saved across processes (`engine.state_cache`); None: off.
        self.prefix_states = None
        if state_cache is not None:
            self.prefix_states = PrefixStates(self, state_cache, model_path, lora_path)

    @property
    def rs_rollback(self) -> int:
        """Tokens that can be rolled back without a re-prefill (llama.cpp's effective `n_rs_seq`)."""
        import llama_cpp

        return int(llama_cpp.llama_n_rs_seq(self.llm.ctx))

    @property
    def cheap_rollback(self) -> bool:
        """Whether dropping the last generated tokens keeps the cache (attention-only models).

        A recurrent or hybrid model (Qwen3.5) keeps no per-token state: a rollback makes
        `generate` prefill the whole conversation again, so the agent avoids asking for one.
        """
        import llama_cpp

        model = self.llm._model.model
        return not (llama_cpp.llama_model_is_recurrent(model) or llama_cpp.llama_model_is_hybrid(model))

    def _is_eog(self, tok: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self.llm._model.vocab, tok))

    def tool_grammar(self, tools: list[dict], max_calls: int = 8):
        """A lazy grammar for calls to `tools` in this model's chat format (`engine.grammar`)."""
        from botpsy.engine.grammar import lazy_tool_grammar  # imports llama_cpp

        return lazy_tool_grammar(self, tools, max_calls=max_calls)

    def copy_guide(
        self, sources: list[str], params: dict[str, dict] | None = None, prior: dict[str, float] | None = None
    ) -> CopyGuide:
        def piece(tok: int) -> str:
            return self.llm.detokenize([tok], special=True).decode("utf-8", errors="ignore")

        return CopyGuide(
            sources, self._tokenize_text, piece, self.chat_format.name, params=params, prior=prior
        )

    def check_grammar(self, grammar) -> None:
        """Let llama.cpp parse `grammar` (ValueError when it refuses), quietly: llama.cpp prints a
        refused grammar whole to stderr, and a server's client must not fill the log."""
        from botpsy.engine.grammar import GrammarGate  # imports llama_cpp

        with _quiet_stderr():
            GrammarGate(self.llm, grammar).close()

    def close(self) -> None:
        llm = self.__dict__.pop("llm", None)
        if llm is not None:
            llm.close()

    def tokenize(self, text: str) -> list[int]:
        """Markup parses special tokens; the data pieces of a `Block` never do (protocol.blocks)."""
        return encode(text, self._tokenize_markup, self._tokenize_text)

    def _tokenize_markup(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode(), add_bos=False, special=True)

    def _tokenize_text(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode(), add_bos=False, special=False)

    def detokenize(self, ids: list[int]) -> str:
        return self.llm.detokenize(ids, special=True).decode("utf-8", errors="replace")

    def cached_prefix(self, ids: list[int]) -> int:
        n = 0
        for a, b in zip(self.llm._input_ids[: self.llm.n_tokens], ids, strict=False):
            if a != b:
                break
            n += 1
        return n

    def generate(
        self,
        prompt_ids: list[int],
        max_tokens: int = 512,
        temperature: float = 0.0,
        on_text: Callable[[str], None] | None = None,
        grammar=None,
        should_stop: Callable[[], bool] | None = None,
        guide: CopyGuide | None = None,
    ) -> Generation:
        """`should_stop`, asked after every token (after `on_text`), ends generation early with
        stop "stopped": `serve` uses it for stop strings and for a client that left. `guide`
        (`engine.copy_guide`) may choose a token instead of the model's top one in a call's values."""
        room = self.n_ctx - len(prompt_ids)
        if room <= 8:
            raise EngineError(
                f"the conversation ({len(prompt_ids)} tokens) fills the context window ({self.n_ctx}); "
                "start a new conversation or raise --n-ctx"
            )
        max_tokens = min(max_tokens, room - 1)
        if self.n_rs_seq and self.cached_prefix(prompt_ids) < self.llm.n_tokens:
            # A rollback over one-token decode steps would restore a stale snapshot (module doc).
            self.llm.reset()
        t0 = time.perf_counter()
        restored = self.prefix_states.prepare(prompt_ids) if self.prefix_states is not None else None
        # After a miss, `prepare` prefilled part of the system block: it says what was reused.
        cached = min(self.cached_prefix(prompt_ids), len(prompt_ids) - 1) if restored is None else restored
        if cached < self.llm.n_tokens and not self.cheap_rollback:
            cached = 0  # a hybrid model cannot drop the cached tail: llama.cpp reads it all again
        first = None
        out: list[int] = []
        stop = "length"
        text_so_far = b""
        if (grammar is not None and self.grammar_first) or guide is not None:
            tokens = self._grammar_first_tokens(prompt_ids, temperature, grammar, guide)
        else:
            tokens = self.llm.generate(
                prompt_ids,
                temp=temperature,
                top_k=40 if temperature > 0 else 1,
                top_p=0.95,
                min_p=0.0,
                repeat_penalty=1.0,
                grammar=grammar,
            )
        for tok in tokens:
            if first is None:
                first = time.perf_counter()
            # A finished grammar lets only end-of-generation tokens through, and any of them (not
            # just <|im_end|>) may win: stop on all of them, or the loop would emit them to the end.
            if tok in self.stop_ids or (grammar is not None and self._is_eog(tok)):
                stop = "eos"
                break
            out.append(tok)
            if on_text is not None:
                piece = self.llm.detokenize([tok], prev_tokens=out[:-1], special=True)
                text_so_far += piece
                on_text(piece.decode("utf-8", errors="ignore"))
            if self.turn_end.reached(out, self.detokenize):
                stop = "eos"
                break
            if should_stop is not None and should_stop():
                stop = "stopped"
                break
            if len(out) >= max_tokens:
                break
        if hasattr(tokens, "close"):
            tokens.close()  # free the grammar-first path's sampler now, not at garbage collection
        end = time.perf_counter()
        first = first or end
        new_prompt = len(prompt_ids) - cached
        n_gen = len(out) + (1 if stop == "eos" else 0)
        timing = StepTiming(
            prompt_tokens=new_prompt,
            cached_tokens=cached,
            generated_tokens=n_gen,
            ttft_s=first - t0,
            prefill_tok_s=new_prompt / max(first - t0, 1e-9),
            decode_tok_s=(n_gen - 1) / (end - first) if n_gen > 1 and end > first else 0.0,
            total_s=end - t0,
        )
        ids, text = self.turn_end.cut(out, self.detokenize, self.tokenize)
        return Generation(ids, text, stop, timing)

    def _turn_so_far(self, prompt_ids: list[int], window: int = 512) -> str:
        """The text of the prompt after its last `<|im_start|>assistant` (within `window` ids)."""
        tail = self.detokenize(prompt_ids[-window:])
        at = tail.rfind(ASSISTANT_OPEN)
        return tail[at + len(ASSISTANT_OPEN) :] if at >= 0 else ""

    def _grammar_first_tokens(self, prompt_ids: list[int], temperature: float, grammar, guide=None):
        """`Llama.generate`'s loop (prefix reuse, evaluate, sample, yield, evaluate the token on
        resume) with grammar-first sampling (`botpsy.engine.grammar.GrammarGate`) when `grammar` is
        given, and the copy guide's choice (`engine.copy_guide`) when `guide` is. Sampling when
        `temperature` > 0 matches the default path's settings (top-k 40, top-p 0.95) in numpy."""
        import llama_cpp

        from botpsy.engine.grammar import GrammarGate  # imports llama_cpp

        llm = self.llm
        keep = min(self.cached_prefix(prompt_ids), len(prompt_ids) - 1)
        if keep < llm.n_tokens and not llm._ctx.kv_cache_seq_rm(-1, keep, -1):
            llm.reset()  # a hybrid model without a usable snapshot: prefill again
            keep = 0
        llm.n_tokens = keep
        rng = np.random.default_rng(self._seed)
        n_vocab = llm.n_vocab()

        def pick(logits: np.ndarray) -> int:
            best = int(np.argmax(logits))
            if temperature <= 0 or not np.isfinite(logits[best]):
                return best
            top = np.argpartition(logits, -40)[-40:]
            top = top[np.argsort(-logits[top])]
            p = np.exp((logits[top] - logits[top[0]]) / temperature)
            p /= p.sum()
            n = int(np.searchsorted(np.cumsum(p), 0.95)) + 1
            return int(top[rng.choice(n, p=p[:n] / p[:n].sum())])

        gate = GrammarGate(llm, grammar) if grammar is not None else None
        # The assistant turn so far, for the guide: a call may have opened before this engine call
        # (a cut call continued); the prompt's earlier turns, tool results among them, are not read.
        text = self._turn_so_far(prompt_ids).encode() if guide is not None else b""
        try:
            llm.eval(prompt_ids[keep:])
            while True:
                logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1), shape=(n_vocab,))
                if (
                    guide is not None
                    and (steer := guide.steer(text.decode("utf-8", "ignore"), logits)) is not None
                ):
                    logits = logits.copy()  # llama.cpp's buffer stays as it computed it
                    logits[steer] = logits.max() + 1.0
                tok = gate.choose(logits, pick) if gate is not None else pick(logits)
                if gate is not None:
                    gate.accept(tok)
                if guide is not None:
                    text += llm.detokenize([tok], special=True)
                yield tok
                llm.eval([tok])
        finally:
            if gate is not None:
                self.grammar_stats = {"checks": gate.checks, "refusals": gate.refusals}
                gate.close()
