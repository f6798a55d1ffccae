"""Report files: the one writer every report goes through (JSON, markdown and PNG side by side).

The recipe, the scale smoke run, `eval report`, the device benchmark and the shapes benchmark each
build their own figures and text; this module only puts them on disk, the same way for all:

* the folder is created on the way (parents too);
* every file is written atomically (`botpsy.atomic.write_atomic`, the stores' mechanism too):
  into a temporary file beside it, flushed and synced, then `os.replace`d over the name. A run
  killed or failing mid-write leaves the report that was there before (or none), never half a
  JSON file that `botpsy recipe --report-only`, `eval compare` or a person then reads as the
  result. The temporary file is removed when the write raises;
* plots use matplotlib's non-interactive backend (Agg: no display on a server or in CI) and every
  figure is closed, drawn or not, so a long run that reports after each stage holds no figures;
* the paths written come back in the order they were written (`ReportWriter.paths`).

JSON keeps each report's format as it was when each module wrote its own (`JsonFormat`): a report
re-written from the same figures has the same bytes, so a committed report's diff shows only
figures that changed. `eval report` keeps non-ASCII text and writes anything JSON cannot hold as
its `str` (paths); the recipe and device reports end without a newline, as they always have.

Rejected: `Path.write_text` per file (what each writer did) truncates the file first, so an
interruption leaves it partial; `tempfile.NamedTemporaryFile` creates the file mode 0600, so reports
would stop being readable by the other users of a shared machine.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from botpsy.atomic import write_atomic


@dataclass(frozen=True)
class JsonFormat:
    """How a report's JSON is laid out (the arguments of `json.dumps`, and the final newline)."""

    indent: int = 2
    ensure_ascii: bool = True  # False keeps "é", "→" as they are (UTF-8) instead of \\u escapes
    default: Callable[[Any], Any] | None = None  # str: write a Path or a date as its text
    newline: bool = True  # end the file with "\n"

    def dumps(self, obj: Any) -> str:
        text = json.dumps(obj, indent=self.indent, ensure_ascii=self.ensure_ascii, default=self.default)
        return text + "\n" if self.newline else text


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (raises ImportError without matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


class ReportWriter:
    """One report folder and the files written into it, in order (`paths`)."""

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.paths: list[Path] = []

    def _written(self, path: Path) -> Path:
        self.paths.append(path)
        return path

    def text(self, name: str, text: str) -> Path:
        """A text file (the markdown) in UTF-8, newlines as given."""
        data = text.encode("utf-8")
        return self._written(write_atomic(self.folder / name, lambda f: f.write(data), parents=True))

    def json(self, name: str, obj: Any, fmt: JsonFormat = JsonFormat()) -> Path:
        """`obj` as JSON in `fmt`; an object JSON cannot hold fails before anything is written."""
        return self.text(name, fmt.dumps(obj))

    @contextmanager
    def figure(self, name: str, *subplots: int, dpi: int, **kwargs: Any) -> Iterator[tuple[Any, Any]]:
        """`plt.subplots(*subplots, **kwargs)` to draw on; saved to `name` (format from its suffix)
        when the block ends, closed however it ends. A block that raises writes nothing."""
        plt = pyplot()
        fig, axes = plt.subplots(*subplots, **kwargs)
        try:
            yield fig, axes
            fmt = Path(name).suffix.lstrip(".") or "png"
            self._written(
                write_atomic(self.folder / name, lambda f: fig.savefig(f, format=fmt, dpi=dpi), parents=True)
            )
        finally:
            plt.close(fig)

    def copy(self, source: Path | str, name: str | None = None) -> Path:
        """The bytes of `source` as `name` (its own name by default) in this folder."""
        source = Path(source)

        def write(f: IO[bytes]) -> None:
            with source.open("rb") as src:
                shutil.copyfileobj(src, f)

        return self._written(write_atomic(self.folder / (name or source.name), write, parents=True))
