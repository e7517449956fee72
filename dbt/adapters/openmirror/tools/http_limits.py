"""An HTTP server whose clients cannot hold it: each request has a deadline, and at most a fixed
number of connections (threads) are open at once.

`ThreadingHTTPServer` alone starts a thread per connection without limit, and the socket timeout
it relies on starts again with every byte received: a client sending one byte every few seconds
holds its thread for ever, and enough such clients hold any number of threads.
"""

import io
import logging
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import BaseRequestHandler
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

logger = logging.getLogger(__name__)

# How long a new connection waits for a slot when none can be freed (all are answering, which
# takes milliseconds) before it is closed unanswered.
_SLOT_WAIT_SECONDS = 1.0


class _Connection:
    """An admitted connection: its deadline, and whether it is still receiving its request."""

    def __init__(self, sock: socket.socket, deadline: float):
        self.sock = sock
        self.deadline = deadline
        self.receiving = True
        self.evicted = False

    def evict(self) -> None:
        self.evicted = True
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes its handler, blocked reading it
        except OSError:  # already closed by its handler
            pass


class ConnectionSlots:
    """At most `limit` connections at once, each with `request_seconds` to send its request.

    When all are taken, a new connection takes the place of the one that has been receiving its
    request longest: a genuine request arrives in milliseconds, so that one is the slowest client
    there is. Refusing the newcomer instead would let `limit` slow clients, reconnecting at each
    deadline, keep every genuine request out."""

    def __init__(self, limit: int, request_seconds: float):
        if limit < 1:
            raise ValueError("the connection limit must be at least 1")
        self._limit = limit
        self._request_seconds = request_seconds
        self._open: dict[socket.socket, _Connection] = {}
        self._changed = threading.Condition()

    def admit(self, sock: socket.socket) -> bool:
        """Whether `sock` may be served (now counted until `release`); may evict another."""
        with self._changed:
            if len(self._open) >= self._limit:
                receiving = [c for c in self._open.values() if c.receiving and not c.evicted]
                if receiving:
                    logger.warning(
                        "closing the oldest connection still sending its request: all %d are taken", self._limit
                    )
                    min(receiving, key=lambda c: c.deadline).evict()
                if not self._changed.wait_for(lambda: len(self._open) < self._limit, _SLOT_WAIT_SECONDS):
                    return False
            self._open[sock] = _Connection(sock, time.monotonic() + self._request_seconds)
            return True

    def connection(self, sock: socket.socket) -> _Connection:
        with self._changed:
            return self._open[sock]

    def received(self, sock: socket.socket) -> None:
        """The request is in: its connection no longer gives way to new ones."""
        with self._changed:
            self._open[sock].receiving = False

    def release(self, sock: socket.socket) -> None:
        with self._changed:
            del self._open[sock]
            self._changed.notify_all()

    def evict_receiving(self) -> None:
        """End every connection still sending its request (the server stops)."""
        with self._changed:
            for connection in self._open.values():
                if connection.receiving:
                    connection.evict()


class _DeadlineReader(io.RawIOBase):
    """A connection's input that ends in TimeoutError at its deadline or when it is evicted."""

    def __init__(self, connection: _Connection):
        super().__init__()
        self._connection = connection

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: "WriteableBuffer") -> int:
        connection = self._connection
        remaining = connection.deadline - time.monotonic()
        if remaining <= 0 or connection.evicted:
            raise TimeoutError("the request was not complete by its deadline")
        connection.sock.settimeout(remaining)
        try:
            count = connection.sock.recv_into(buffer)
        except OSError:
            if connection.evicted:
                raise TimeoutError("closed to make room for a new connection") from None
            raise
        if connection.evicted:  # woken by the eviction, with nothing or part of the request
            raise TimeoutError("closed to make room for a new connection")
        return count


class BoundedHTTPServer(ThreadingHTTPServer):
    """One thread per connection, for the connections `slots` admits."""

    # socketserver's 5 makes the kernel drop connection attempts during a burst, each then
    # retried by its client only after a second or more; `slots` decides who is served instead.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseRequestHandler], slots: ConnectionSlots) -> None:
        self.slots = slots
        # The host's own family: an IPv6 address (`::1`, `::`) fails to bind as IPv4.
        self.address_family = socket.getaddrinfo(*address, type=socket.SOCK_STREAM)[0][0]
        super().__init__(address, handler)

    # A TCP server is handed a socket per request (the base class also allows a datagram's tuple).
    def process_request(self, request: socket.socket, client_address: Any) -> None:  # type: ignore[override]
        if not self.slots.admit(request):
            logger.warning("closed a connection from %s unanswered: all connections are busy", client_address[0])
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release(request)
            raise

    def process_request_thread(self, request: socket.socket, client_address: Any) -> None:  # type: ignore[override]
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release(request)

    def handle_error(self, request: socket.socket, client_address: Any) -> None:  # type: ignore[override]
        """Into the log, not socketserver's traceback on stderr: a client gone before its answer
        is ordinary; anything else is a defect and keeps its traceback."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            logger.info("connection from %s lost: %s", client_address[0], type(error).__name__)
        else:
            logger.error("request from %s failed", client_address[0], exc_info=True)


class BoundedRequestHandler(BaseHTTPRequestHandler):
    """Reads one request (HTTP/1.0) through its connection's deadline; a subclass calls
    `request_received` once it has read all it will read."""

    server: BoundedHTTPServer
    # What http.server answers itself (a malformed request line, another HTTP version) in plain
    # text, as every other answer: not its HTML page, which echoes the request back.
    error_content_type = "text/plain; charset=utf-8"
    error_message_format = "%(code)d %(message)s\n"

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the socket's own file, replaced by one that keeps the deadline
        self.rfile = io.BufferedReader(_DeadlineReader(self.server.slots.connection(self.request)))

    def request_received(self) -> None:
        self.server.slots.received(self.request)
