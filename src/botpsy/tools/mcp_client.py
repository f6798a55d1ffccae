"""Tools of an external MCP server, as botpsy `Tool`s the agent can call (`botpsy chat --mcp "CMD"`).

`McpConnection(command)` starts the server as a subprocess, speaks MCP over its stdio with the
official SDK's client, and keeps the session open on a private event loop thread, so the
synchronous agent loop can call tools like local ones. `connection.tools()` turns the server's
tool list into `Tool`s whose schema is the server's input schema.

Labels, because policies and confirmation read them: an external tool is *mutating and egress*
unless the server says otherwise — through botpsy's exact `_meta["botpsy/labels"]`, or the standard
annotations (`read_only_hint: true` → not mutating; `open_world_hint: false` → no egress;
`destructive_hint`, default true per the MCP spec, → sensitive when mutating). Annotations are
hints from code we do not control: they can only make a tool look *safer* when the server
states it explicitly; absent information always means "ask first".

Environment: the SDK starts a server with a handful of variables (PATH, HOME, …) unless told
otherwise, so a server that reads an API key from the environment could not start under
`chat --mcp` (issue 36, item 13). The user names the command, as in a shell, so by default the
server gets the user's environment, as a shell would give it; `pass_env` narrows that to named
variables (or to the SDK's minimal set), and `env` adds or overrides variables.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import sys
import threading
from collections.abc import Iterable
from typing import Any, TextIO

import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client

from botpsy.tools.base import Labels, Tool, ToolError

LABELS_META = "botpsy/labels"


class McpStartError(RuntimeError):
    """The external MCP server did not start or did not complete the handshake."""


def _leaf(e: BaseException) -> BaseException:
    """The first real error inside (nested) exception groups, which anyio task groups raise."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return e


def labels_for(spec: types.Tool) -> Labels:
    meta = spec.meta or {}
    exact = meta.get(LABELS_META)
    if isinstance(exact, dict) and all(
        isinstance(exact.get(k), bool) for k in ("mutates", "egress", "sensitive")
    ):
        return Labels(mutates=exact["mutates"], egress=exact["egress"], sensitive=exact["sensitive"])
    ann = spec.annotations
    mutates = not (ann is not None and ann.read_only_hint is True)
    egress = not (ann is not None and ann.open_world_hint is False)
    sensitive = mutates and not (ann is not None and ann.destructive_hint is False)
    return Labels(mutates=mutates, egress=egress, sensitive=sensitive)


def _result_value(result: types.CallToolResult) -> Any:
    text = "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
    if result.is_error:
        try:
            message = json.loads(text).get("error", text)
        except (ValueError, AttributeError):
            message = text
        raise ToolError(str(message) or "the MCP tool reported an error")
    if result.structured_content is not None:
        return result.structured_content
    try:
        return json.loads(text)
    except ValueError:
        return {"text": text}


def server_env(pass_env: bool | Iterable[str] = True, env: dict[str, str] | None = None) -> dict[str, str]:
    """The variables a server gets on top of the SDK's minimal set (module doc): all of the
    user's (`True`), none (`False`) or the named ones that are set; then `env`."""
    if pass_env is True:
        out = dict(os.environ)
    elif pass_env is False:
        out = {}
    else:
        out = {name: os.environ[name] for name in pass_env if name in os.environ}
    return {**out, **(env or {})}


class McpConnection:
    """A live MCP session with one stdio server, callable from synchronous code."""

    def __init__(
        self,
        command: str | list[str],
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        timeout: float = 30.0,
        errlog: TextIO | None = None,
        pass_env: bool | Iterable[str] = True,
    ):
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ValueError("MCP server command is empty")
        self.command = " ".join(argv)
        self.params = StdioServerParameters(
            command=argv[0], args=argv[1:], env=server_env(pass_env, env), cwd=cwd
        )
        self.timeout = timeout
        self.errlog = errlog or sys.stderr
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="botpsy-mcp", daemon=True)
        self._thread.start()
        self._session: ClientSession | None = None
        self._stop: asyncio.Event | None = None
        self._runner: asyncio.Task | None = None
        try:
            self.specs: list[types.Tool] = self._submit(self._open(), timeout)
        except BaseException as e:
            self._shutdown_loop()
            if isinstance(e, Exception):
                leaf = _leaf(e)
                raise McpStartError(
                    f"could not start MCP server {self.command!r}: {type(leaf).__name__}: {leaf}"
                ) from e
            raise

    # ---- event-loop side ---------------------------------------------------------------------
    def _submit(self, coro: Any, timeout: float) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _open(self) -> list[types.Tool]:
        self._stop = asyncio.Event()
        ready: asyncio.Future = asyncio.get_running_loop().create_future()
        self._runner = asyncio.ensure_future(self._run(ready))
        return await ready

    async def _run(self, ready: asyncio.Future) -> None:
        try:
            async with stdio_client(self.params, errlog=self.errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    listed = await session.list_tools()
                    self._session = session
                    ready.set_result(list(listed.tools))
                    await self._stop.wait()
        except BaseException as e:  # noqa: BLE001 - reported to whoever waits on `ready`
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else RuntimeError(str(e)))
            elif not isinstance(e, asyncio.CancelledError):
                raise

    async def _close(self) -> None:
        if self._stop is not None:
            self._stop.set()
        if self._runner is not None:
            try:
                await asyncio.wait_for(self._runner, 5)
            except (TimeoutError, asyncio.CancelledError, Exception):  # noqa: BLE001 - closing anyway
                pass

    # ---- caller side -------------------------------------------------------------------------
    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool; returns its structured (or parsed) result, raises ToolError on a tool error."""
        if self._session is None:
            raise ToolError(f"the MCP server {self.command!r} is not connected")
        try:
            result = self._submit(self._session.call_tool(name, arguments), self.timeout)
        except ToolError:
            raise
        except Exception as e:  # protocol or transport failure: the model sees a clear error
            raise ToolError(
                f"MCP server {self.command!r} failed on {name}: {type(e).__name__}: {e}"
            ) from None
        return _result_value(result)

    def tools(self, prefix: str = "") -> list[Tool]:
        """The server's tools as botpsy Tools (named `prefix + name`), labelled as described above."""
        out = []
        for spec in self.specs:
            schema = dict(spec.input_schema or {})
            schema.setdefault("type", "object")
            schema.setdefault("properties", {})
            schema.setdefault("required", [])

            def fn(state: Any, _remote: str = spec.name, **kwargs: Any) -> Any:
                return self.call(_remote, kwargs)

            out.append(
                Tool(
                    name=prefix + spec.name,
                    fn=fn,
                    description=spec.description or spec.name,
                    parameters=schema,
                    labels=labels_for(spec),
                    suite=f"mcp:{argv0(self.command)}",
                )
            )
        return out

    def close(self) -> None:
        if self._loop.is_running():
            try:
                self._submit(self._close(), 10)
            except Exception:  # noqa: BLE001 - the server may already be gone
                pass
        self._shutdown_loop()

    def _shutdown_loop(self) -> None:
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        if not self._loop.is_running():
            self._loop.close()

    def __enter__(self) -> McpConnection:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def argv0(command: str) -> str:
    first = command.split()[0] if command.split() else command
    return first.rsplit("/", 1)[-1]


def connect(command: str, prefix: str = "", **kwargs: Any) -> tuple[McpConnection, list[Tool]]:
    """Start an MCP server and return the connection and its tools (close the connection when done)."""
    conn = McpConnection(command, **kwargs)
    return conn, conn.tools(prefix)
