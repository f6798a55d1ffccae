"""The connection cap of `botpsy serve` (`serve.ServeConfig.max_connections`).

`http.server`'s threading server starts a thread for every connection it accepts, and each
request then waits for the one engine, so before this cap a flood of connections grew threads
and a queue without bound. `CappedServer` serves at most `max_connections` connections at once;
the next ones go to a second pool of the same size whose handler (`make_handler`'s `Busy`)
reads the request under a short deadline and answers 503 with `Retry-After`; past both pools
the accepting thread answers 503 itself, without reading and without blocking. Threads stay
under 2 × max_connections (plus one read-deadline timer each).

`peer_gone` is the other half of not letting one connection hold the server: a request whose
client left stops generating (issue 36, item 10), so the engine is free for the next one.
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections.abc import Callable
from http.server import ThreadingHTTPServer


class CappedServer(ThreadingHTTPServer):
    """A thread per connection, for at most `max_connections` served and as many refused at once
    (module doc); past both, a connection is answered 503 from the accepting thread itself."""

    daemon_threads = True  # a stuck connection must not keep the process alive at Ctrl-C

    def __init__(self, address, handler, config):
        self.config = config
        self.connections = 0  # served connections open, each with its thread
        self.refusing = 0  # connections past the cap whose request is read, to answer it 503
        self._busy: set[socket.socket] = set()
        self._slots = threading.Lock()
        super().__init__(address, handler)

    def handle_error(self, request, client_address):  # one bad connection is not worth a traceback
        pass

    def process_request(self, request, client_address):
        cap = self.config.max_connections
        with self._slots:
            if self.connections < cap:
                self.connections += 1
            elif self.refusing < cap:
                self.refusing += 1
                self._busy.add(request)
            else:
                return self._refuse_now(request)
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started (the system is out of them): free the slot
            self._release(request)
            self.shutdown_request(request)
            raise

    def finish_request(self, request, client_address):
        busy = request in self._busy
        (self.RequestHandlerClass.Busy if busy else self.RequestHandlerClass)(request, client_address, self)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(request)

    def _release(self, request) -> None:
        with self._slots:
            if request in self._busy:
                self._busy.discard(request)
                self.refusing -= 1
            else:
                self.connections -= 1

    def _refuse_now(self, sock: socket.socket) -> None:
        """503 without reading the request, for a flood past both caps: nothing here may block.
        A client that sends its request in one piece still reads the answer."""
        body = json.dumps(
            {"error": {"message": "the server is busy; retry in a moment", "type": "server_error"}}
        ).encode()
        head = (
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: {self.config.retry_after_s}\r\n"
            "Connection: close\r\n\r\n"
        )
        try:
            sock.setblocking(False)
            self._drain(sock)
            sock.send(head.encode() + body)  # fits a fresh socket's send buffer whole
            self._drain(sock)
        except OSError:
            pass  # the client left, or its buffer is full: it loses the answer, never the server
        finally:
            self.shutdown_request(sock)

    @staticmethod
    def _drain(sock: socket.socket, most: int = 16) -> None:
        """Read what already arrived, so the close sends FIN: closing with unread data sends RST,
        and a client that gets RST may drop the 503 it had not read yet."""
        try:
            for _ in range(most):
                if not sock.recv(65536):
                    return
        except (BlockingIOError, InterruptedError):
            pass


def peer_gone(sock: socket.socket, poll_s: float = 0.05) -> Callable[[], bool]:
    """A check, cheap enough to call between tokens, that the client closed its side.

    A readable socket that reads nothing (EOF) or fails is a client that left; data waiting is a
    pipelined request, not a departure. The socket is polled at most every `poll_s`, with
    `poll()` where there is one (`select()` fails on descriptors past 1023). A client that
    half-closes (shuts its writing side down) while it still waits for the answer counts as
    gone: HTTP clients do not do that.
    """
    state = {"next": 0.0, "gone": False}
    poller = None
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock, select.POLLIN)

    def gone() -> bool:
        now = time.monotonic()
        if state["gone"] or now < state["next"]:
            return state["gone"]
        state["next"] = now + poll_s
        try:
            if poller is not None:
                readable = bool(poller.poll(0))
            else:
                readable = bool(select.select([sock], [], [], 0)[0])
            # Readable and nothing to read is EOF. (On a socket with a timeout recv first waits
            # until it is readable, so it is only asked once poll said it will not wait.)
            state["gone"] = readable and not sock.recv(1, socket.MSG_PEEK)
        except (BlockingIOError, InterruptedError):
            pass  # nothing to read after all: the client is still there, waiting
        except (OSError, ValueError):
            state["gone"] = True  # reset by the peer, or the socket is closed
        return state["gone"]

    return gone
