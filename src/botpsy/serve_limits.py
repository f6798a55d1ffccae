"""The connection cap of `botpsy serve` (`serve.ServeConfig.max_connections`).

`http.server`'s threading server starts a thread for every connection it accepts, and each
request then waits for the one engine, so before this cap a flood of connections grew threads
and a queue without bound. `CappedServer` serves at most `max_connections` connections at once;
the next ones go to a second pool of the same size whose handler (`make_handler`'s `Busy`)
reads the request under a short deadline and answers 503 with `Retry-After`; past both pools
the accepting thread answers 503 itself, without reading and without blocking. Threads stay
under 2 × max_connections (plus one read-deadline timer each).
"""

from __future__ import annotations

import json
import socket
import threading
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
