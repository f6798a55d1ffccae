"""The options of `botpsy export shapes` (and `python -m botpsy.bench.shapes`), apart from the command.

`bench/shapes.py` imports the export and benchmark code at its top, and `export/shapes.py` the
whole worlds package (through the tiny model's corpus), which `botpsy --help` and `botpsy run`
would pay for on every start if the CLI's parser read the shape names from there. So the names
are written here once more; tests/test_shapes.py checks they are `export.shapes.SHAPES`'s keys.
"""

from __future__ import annotations

DEFAULT_SHAPE = "qwen3.5-0.8b"  # export.shapes.QWEN35_08B.name
SHAPE_NAMES = (DEFAULT_SHAPE,)  # sorted(export.shapes.SHAPES)


def add_arguments(p) -> None:
    p.add_argument("--shape", default=DEFAULT_SHAPE, choices=SHAPE_NAMES)
    p.add_argument("--out", help="folder for the weights (default runs/shapes/<shape>)")
    p.add_argument("--report-dir", default="reports")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts to bench")
    p.add_argument("--decode-tokens", type=int, default=64)
    p.add_argument("--parity", action="store_true", help="also compare next-token logits with transformers")
    p.add_argument("--no-bench", action="store_true")
    p.add_argument("--reuse", action="store_true", help="bench and report the files already in --out")
    p.add_argument(
        "--grammar", default="Q8_0", help="comma-separated files to measure grammar decode cost on"
    )
