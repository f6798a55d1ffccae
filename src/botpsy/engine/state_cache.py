"""The model state after the system block, kept on disk so a fresh process skips its prefill.

`botpsy run` is one process per request, and every one used to prefill the same system block
(system text and tool definitions, ~1,000 tokens) before its first token: seconds on a laptop CPU,
tens of seconds on a phone. Here the llama.cpp state after that block is written to a file the
first time and read back by the next process in milliseconds; the prompt's remaining tokens (the
user turn) are all that is prefilled.

What is saved: llama.cpp's per-sequence state (`llama_state_seq_save_file` / `_load_file`), which
is the KV cells of an attention model and, on a hybrid model (Qwen3.5's Gated DeltaNet layers),
the attention layers' cells plus the recurrent state. Chosen over `Llama.save_state` (the whole
context, whose Python side copies up to n_batch × n_vocab logits, 100 MB for a 49k vocabulary) and
over `llama_state_seq_get_data` (one buffer the size of the state, counted in peak RSS): the file
calls stream tensor by tensor.

Key: a file is named by the SHA-256 of everything that shapes the state — the model and adapter
files (size, mtime and the SHA-256 of their first and last MiB, cheap even for a 1.5 GB GGUF), the
llama.cpp context and model parameters that change what is computed or how it is laid out (n_ctx,
type_k/type_v, flash attention, rope, n_rs_seq, batch sizes, repacked weights; thread counts do
not), the llama-cpp-python version, this file format — and the prefix's token ids. A changed key
is another file name, so it misses; the file also repeats the key and llama.cpp stores the token
ids, both checked on load, so a renamed file never loads either.

Integrity: a trailer holds a CRC-32 of the rest; a truncated or corrupt file (or one llama.cpp
refuses) is logged in one line, deleted and rebuilt by the same run. Files are written to a
temporary name in the folder and renamed, so readers see a whole file or none; two processes
saving the same prefix both write whole files and the last rename wins. The folder is bounded
(least recently used out first; a hit refreshes the file's mtime), and a process writes at most
`MAX_SAVES` files, so an evaluation whose items each bring their own tools does not fill it.

Measured on this 2-core CPU while other jobs kept it busy (load ~5, `botpsy bench`): the demo's
first request in a fresh process went from 12.7 s to 0.89 s to the first token (889 tokens of the
embedded model restored in 30-70 ms from a 20.5 MB file; the next request in the same process,
0.48 s). Logits after a restore are bit-identical to a full prefill of the same prompt (SmolLM2
with its adapter, the tiny Qwen3.5 in f16 and Q4_K_M: `tests/test_engine_state_cache.py`).

Where the prefix ends (`system_prefix_len`): botpsy's conversations open with a ChatML system turn
(`<|im_start|>system … <|im_end|>\\n`) rendered and tokenized on its own (`Agent._append`), so its
ids are the same in every run with the same tools and system text. The engine saves and restores
at that boundary only; the system text carries today's date, so the first request of a day misses.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import logging
import os
import struct
import tempfile
import time
import zlib
from pathlib import Path

import numpy as np

from botpsy.protocol.formats import IM_END, IM_START

log = logging.getLogger(__name__)

FORMAT = 1
TRAILER = struct.Struct("<II8s")  # meta length, CRC-32 of everything before the trailer, magic
MAGIC = b"BPSYSTC1"
SUFFIX = ".state"
DEFAULT_MAX_MB = 512
# Files one process writes into one folder at most. A `botpsy run` writes one; an evaluation whose
# every item brings its own tools (BFCL) would otherwise write a never-reused file per item.
MAX_SAVES = 8
_saves: dict[Path, int] = {}  # folder -> files this process wrote there
MIN_PREFIX_TOKENS = 32  # a shorter system block costs less to prefill than a file is worth
_SAMPLE = 1 << 20  # bytes hashed at each end of a model file

# Parameters that leave the saved numbers and their layout unchanged (thread counts: each row of a
# matrix product is summed by one thread whatever their number) or that are not numbers.
_NOT_STATE = {"n_threads", "n_threads_batch", "no_perf", "use_mmap", "use_mlock", "check_tensors"}


def default_folder() -> Path | None:
    """`$BOTPSY_STATE_CACHE` (a folder, or `off`), else `$BOTPSY_CACHE/state`, else ~/.cache/botpsy/state."""
    env = os.environ.get("BOTPSY_STATE_CACHE", "").strip()
    if env.lower() in ("off", "0", "none", "false"):
        return None
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("BOTPSY_CACHE") or Path.home() / ".cache" / "botpsy") / "state"


def default_max_bytes() -> int:
    try:
        return int(float(os.environ.get("BOTPSY_STATE_CACHE_MB", DEFAULT_MAX_MB)) * 2**20)
    except ValueError:
        return DEFAULT_MAX_MB * 2**20


def file_fingerprint(path: Path) -> str:
    """Size, mtime and the SHA-256 of the first and last MiB: a changed file changes it, in ~1 ms."""
    st = path.stat()
    h = hashlib.sha256(f"{st.st_size}:{st.st_mtime_ns}".encode())
    with open(path, "rb") as f:
        h.update(f.read(_SAMPLE))
        if st.st_size > 2 * _SAMPLE:
            f.seek(-_SAMPLE, os.SEEK_END)
            h.update(f.read(_SAMPLE))
    return h.hexdigest()


def _scalar_fields(params) -> dict:
    """The number and flag fields of a llama.cpp params struct (pointers and callbacks left out)."""
    out = {}
    for name, ctype in params._fields_:
        if name in _NOT_STATE or not issubclass(ctype, ctypes._SimpleCData) or ctype is ctypes.c_void_p:
            continue
        value = getattr(params, name)
        if isinstance(value, (bool, int, float)):
            out[name] = value
    return out


def engine_key(llm, model_path: Path, lora_path: Path | None, extra: dict | None = None) -> dict:
    """Everything besides the prefix ids that shapes the saved state, as a JSON-able dict."""
    import llama_cpp

    return {
        "format": FORMAT,
        "llama_cpp_python": llama_cpp.__version__,
        "model": file_fingerprint(model_path),
        "adapter": file_fingerprint(lora_path) if lora_path else None,
        "context": _scalar_fields(llm.context_params),
        "model_params": _scalar_fields(llm.model_params),
        **(extra or {}),
    }


def _find(ids: list[int], pattern: list[int], start: int = 0) -> int:
    """Index of the first occurrence of `pattern` in `ids` at or after `start`; -1 if none."""
    if not pattern:
        return -1
    first, n = pattern[0], len(pattern)
    for i in range(start, len(ids) - n + 1):
        if ids[i] == first and ids[i : i + n] == pattern:
            return i
    return -1


def system_prefix_len(ids: list[int], tokenize, detokenize) -> int:
    """Tokens of the system turn that opens `ids` (through `<|im_end|>\\n`); 0 when there is none.

    The boundary is the first `<|im_start|>` after the first `<|im_end|>`: the ids before it must
    decode to a system turn, so a conversation without one (or a vocabulary that merges the turn
    markers with the text around them) is never cached at a wrong place.
    """
    end, start = tokenize(IM_END), tokenize(IM_START)
    i = _find(ids, end)
    if i < 0:
        return 0
    j = _find(ids, start, i + len(end))
    if j < MIN_PREFIX_TOKENS:
        return 0
    text = detokenize(ids[:j])
    opening = text.find(IM_START)
    if (
        opening < 0
        or not text[opening:].startswith(IM_START + "system\n")
        or not text.endswith(IM_END + "\n")
    ):
        return 0
    return j


class StateCache:
    """A folder of saved prefix states, bounded to `max_bytes` (least recently used out first)."""

    def __init__(self, folder: str | Path, max_bytes: int | None = None, max_saves: int = MAX_SAVES):
        self.folder = Path(folder).expanduser()
        self.max_bytes = default_max_bytes() if max_bytes is None else max_bytes
        self.max_saves = max_saves
        self.disabled = False  # set after the folder turned out unwritable (logged once)

    @classmethod
    def default(cls) -> StateCache | None:
        folder = default_folder()
        return cls(folder) if folder is not None else None

    def path(self, key: dict, ids: list[int]) -> Path:
        h = hashlib.sha256(json.dumps(key, sort_keys=True).encode())
        h.update(np.asarray(ids, dtype=np.int32).tobytes())
        return self.folder / (h.hexdigest()[:40] + SUFFIX)

    # ---- reading ----------------------------------------------------------------------------

    def _meta(self, path: Path) -> dict:
        """The checked metadata of an entry; ValueError says what is wrong with the file."""
        size = path.stat().st_size
        if size < TRAILER.size:
            raise ValueError(f"{size} bytes, shorter than its trailer")
        crc = 0
        with open(path, "rb") as f:
            f.seek(size - TRAILER.size)
            meta_len, want, magic = TRAILER.unpack(f.read(TRAILER.size))
            if magic != MAGIC:
                raise ValueError("no botpsy trailer (truncated or not a state file)")
            if meta_len > size - TRAILER.size:
                raise ValueError("trailer names more metadata than the file holds")
            f.seek(0)
            left = size - TRAILER.size
            while left:
                chunk = f.read(min(left, 4 << 20))
                if not chunk:
                    raise ValueError("shorter than its trailer says")
                crc = zlib.crc32(chunk, crc)
                left -= len(chunk)
            if crc != want:
                raise ValueError("checksum mismatch")
            f.seek(size - TRAILER.size - meta_len)
            return json.loads(f.read(meta_len))

    def load(self, ctx, key: dict, ids: list[int]) -> bool:
        """Restore the state after `ids` into sequence 0 of the llama.cpp context `ctx`.

        False on a miss, and on a file that is damaged or does not match (logged, deleted, so this
        run writes it again). On False the context's memory may hold part of the file: clear it.
        """
        import llama_cpp

        if self.disabled:
            return False
        path = self.path(key, ids)
        try:
            meta = self._meta(path)
        except FileNotFoundError:
            return False
        except (OSError, ValueError) as e:
            return self._reject(path, str(e))
        if meta.get("key") != key or meta.get("n_tokens") != len(ids):
            return self._reject(path, "its key does not match this model and settings")
        tokens = (llama_cpp.llama_token * len(ids))()
        count = ctypes.c_size_t(0)
        read = llama_cpp.llama_state_seq_load_file(
            ctx, str(path).encode(), 0, tokens, len(ids), ctypes.byref(count)
        )
        if not read or count.value != len(ids) or list(tokens) != list(ids):
            return self._reject(path, "llama.cpp did not accept it")
        with contextlib.suppress(OSError):
            os.utime(path)  # most recently used
        return True

    def _reject(self, path: Path, why: str) -> bool:
        log.warning("prefix state cache: ignoring %s (%s); it will be rebuilt", path, why)
        with contextlib.suppress(OSError):
            path.unlink()
        return False

    # ---- writing ----------------------------------------------------------------------------

    def save(self, ctx, key: dict, ids: list[int]) -> Path | None:
        """Write the state of sequence 0 (which must hold exactly `ids`) atomically; None if not."""
        import llama_cpp

        if self.disabled or _saves.get(self.folder, 0) >= self.max_saves:
            return None
        _saves[self.folder] = _saves.get(self.folder, 0) + 1
        path = self.path(key, ids)
        tmp = None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=".tmp-", suffix=SUFFIX, dir=self.folder)
            os.close(fd)
            tmp = Path(name)
            arr = (llama_cpp.llama_token * len(ids))(*ids)
            if not llama_cpp.llama_state_seq_save_file(ctx, name.encode(), 0, arr, len(ids)):
                raise OSError(f"llama.cpp could not write {name}")
            meta = json.dumps({"key": key, "n_tokens": len(ids)}, sort_keys=True).encode()
            with open(tmp, "r+b") as f:
                crc = 0
                while chunk := f.read(4 << 20):
                    crc = zlib.crc32(chunk, crc)
                crc = zlib.crc32(meta, crc)
                f.write(meta + TRAILER.pack(len(meta), crc, MAGIC))
            if tmp.stat().st_size > self.max_bytes:
                tmp.unlink()
                return None
            os.replace(tmp, path)
            tmp = None
        except OSError as e:
            self.disabled = True
            log.warning("prefix state cache: cannot write to %s (%s); running without it", self.folder, e)
            return None
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    tmp.unlink()
        self.evict(keep=path)
        return path

    def entries(self) -> list[Path]:
        try:
            return [p for p in self.folder.iterdir() if p.suffix == SUFFIX and not p.name.startswith(".")]
        except OSError:
            return []

    def evict(self, keep: Path | None = None) -> list[Path]:
        """Delete the least recently used entries until the folder fits `max_bytes`; the deleted."""
        stats = []
        for p in self.entries():
            with contextlib.suppress(OSError):
                st = p.stat()
                stats.append((st.st_mtime, st.st_size, p))
        total = sum(size for _, size, _ in stats)
        gone = []
        for _, size, p in sorted(stats, key=lambda s: s[0]):
            if total <= self.max_bytes:
                break
            if p == keep:
                continue
            with contextlib.suppress(OSError):
                p.unlink()
                total -= size
                gone.append(p)
        # temporary files a killed process left behind (an hour is far past any write)
        with contextlib.suppress(OSError):
            for p in self.folder.glob(".tmp-*" + SUFFIX):
                with contextlib.suppress(OSError):
                    if time.time() - p.stat().st_mtime > 3600:
                        p.unlink()
        return gone


class PrefixStates:
    """The llama.cpp engine's side: restore the system block's state before a prefill, or save it.

    `prepare(prompt_ids)` runs before each generation. When llama.cpp's memory does not already
    hold the prompt's system block — a fresh process, or a new conversation on a hybrid model that
    cannot drop the previous one's tail — it loads the block's saved state (a hit), or prefills the
    block alone and saves it (a miss; the rest of the prompt follows as before). Either way the
    prompt then extends what is cached, and `Llama.generate` evaluates only the rest.
    """

    def __init__(self, engine, cache: StateCache, model_path: Path, lora_path: Path | None):
        self.engine, self.cache = engine, cache
        self.key = engine_key(engine.llm, Path(model_path), Path(lora_path) if lora_path else None)
        self.last: dict = {}  # the last restore or miss: {"tokens", "hit", "seconds"}
        self._held: list[int] | None = None  # the prefix llama.cpp's memory starts with, as far as known

    def _holds(self, prompt_ids: list[int]) -> bool:
        """Whether llama.cpp's memory already starts with this prompt's known prefix and keeps it."""
        llm, held = self.engine.llm, self._held
        if not held or llm.n_tokens < len(held) or prompt_ids[: len(held)] != held:
            return False
        if list(llm.input_ids[: len(held)]) != held:
            return False
        cached = self.engine.cached_prefix(prompt_ids)
        # A hybrid model cannot drop the tokens after the block: Llama would prefill from zero.
        return cached == llm.n_tokens or self.engine.cheap_rollback

    def prepare(self, prompt_ids: list[int]) -> int | None:
        """Make llama.cpp's memory start with the prompt's system block. Returns None if it did
        already (or there is none), else the prompt tokens reused: the block's length after a
        restore, after a miss what was kept of the last conversation (the rest prefilled here)."""
        if self.cache.disabled or self._holds(prompt_ids):
            return None
        n = system_prefix_len(prompt_ids, self.engine.tokenize, self.engine.detokenize)
        if not n or n >= len(prompt_ids):
            return None
        prefix = list(prompt_ids[:n])
        llm = self.engine.llm
        cached = self.engine.cached_prefix(prompt_ids)
        if cached >= n and (cached == llm.n_tokens or self.engine.cheap_rollback):
            self._held = prefix  # in memory already (this process prefilled it)
            return None
        t0 = time.perf_counter()
        hit = tried = False
        if self.cache.path(self.key, prefix).exists():
            tried = True
            llm.reset()
            hit = self.cache.load(llm.ctx, self.key, prefix)
        keep = n
        if hit:
            llm.input_ids[:n] = prefix
            llm.n_tokens = n
            llm._requires_eval = True  # the logits are not restored: the suffix's decode makes them
        else:
            # An attention model keeps the part of the block it shares with the last conversation
            # (two evaluation items with the same system text and other tools); a hybrid one, or a
            # context a rejected file may have half-written, starts over.
            keep = cached if self.engine.cheap_rollback and not tried else 0
            if keep and llm._ctx.kv_cache_seq_rm(-1, keep, -1):
                llm.n_tokens = keep
            else:
                keep = 0
                llm.reset()
            llm.eval(prefix[keep:])
            self.cache.save(llm.ctx, self.key, prefix)
        self._held = prefix
        self.last = {"tokens": n, "hit": hit, "seconds": time.perf_counter() - t0}
        return keep
