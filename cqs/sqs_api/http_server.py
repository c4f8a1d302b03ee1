"""Read timeouts for the HTTP server: how long a client may take to send its request.

aiohttp has no header read timeout: a client trickling its request line and headers a byte at
a time holds a connection (and a file descriptor) for as long as it likes, and so does one
that stops half way through a body. This module owns the remedy, and serving the app with it:

- `RequestFraming` follows the HTTP/1.1 framing of the bytes a client sends (the header block
  up to its blank line, then Content-Length bytes or a chunked body) to tell which part of
  which request is being read, across keep-alive and pipelined requests.
- `ReadTimeoutProtocol` wraps aiohttp's request handler (an asyncio Protocol) and closes the
  connection when a request's headers take longer than the header timeout, or its body longer
  than the body timeout. Only reading is timed: once a request is read, its handler may take
  as long as it needs (a 20 s long poll), and an idle keep-alive connection is left to
  aiohttp's keep-alive timeout.
- `ReadTimeoutSite` listens through that protocol as a `Listener` says: its address, its read
  timeouts, and TLS when given an `ssl.SSLContext`
  (the protocol then sees the decrypted bytes, and aiohttp's `request.secure` is true);
  `run_app` is `aiohttp.web.run_app` for one such site.

Connections upgraded to another protocol (WebSocket) are not supported: cqs serves none, and
their frames would be timed as request headers. Imports aiohttp and the standard library
only: nothing of cqs.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import re
import resource
import ssl
from dataclasses import dataclass
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)

# More than aiohttp accepts in a header block (128 fields of 8 KiB): past it the block is no
# longer kept, only its end looked for, and aiohttp refuses the request anyway.
_MAX_HEAD_BYTES = 1 << 20
_MAX_CHUNK_LINE_BYTES = 4096
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")
# Connections the kernel may queue before the server accepts them (it caps this at
# net.core.somaxconn): thousands of long-poll clients connect at once; at aiohttp's 128 the
# rest wait for SYN retries.
LISTEN_BACKLOG = 4096


@dataclass(frozen=True, slots=True)
class ReadTimeouts:
    """Seconds a client has for a request's headers, then for its body; 0 or less: no limit."""

    header_seconds: float = 10.0
    body_seconds: float = 30.0


@dataclass(frozen=True, slots=True)
class Listener:
    """Where the server listens and how: the address (port 0: any free port), the read
    timeouts, and TLS when given an `ssl.SSLContext`."""

    host: str
    port: int
    timeouts: ReadTimeouts
    reuse_port: bool = False
    ssl_context: ssl.SSLContext | None = None


class Phase(enum.Enum):
    IDLE = "idle"  # between requests: nothing of the next one has arrived
    HEADERS = "headers"  # reading a request line and header fields
    BODY = "body"  # reading a body (Content-Length bytes or chunks)


class RequestFraming:
    """Which part of which request a connection is reading, from the bytes it receives.

    A new connection starts in HEADERS: it is expected to send a request. When the framing
    cannot be understood (a malformed chunk size), the body never ends here, so the body
    timeout closes the connection rather than leaving it untimed; aiohttp refuses such a
    request first anyway.
    """

    def __init__(self) -> None:
        self.phase = Phase.HEADERS
        self.requests_started = 1
        self._head = bytearray()
        self._head_overflowed = False
        self._body_left = 0
        self._chunks: _ChunkedBody | None = None

    def feed(self, data: bytes) -> None:
        position = 0
        while position < len(data):
            if self.phase is Phase.IDLE:
                # Blank lines before a request line are allowed (RFC 9112, 2.2).
                while position < len(data) and data[position] in b"\r\n":
                    position += 1
                if position == len(data):
                    return
                self.phase = Phase.HEADERS
                self.requests_started += 1
            if self.phase is Phase.HEADERS:
                position = self._read_head(data, position)
            elif self._chunks is not None:
                position = self._chunks.feed(data, position)
                if self._chunks.done:
                    self._end_request()
            else:
                taken = min(self._body_left, len(data) - position)
                self._body_left -= taken
                position += taken
                if self._body_left == 0:
                    self._end_request()

    def _read_head(self, data: bytes, position: int) -> int:
        """Bytes of the header block up to its blank line; returns where the body starts."""
        kept = len(self._head)
        self._head += data[position:]
        end = self._head.find(b"\r\n\r\n", max(0, kept - 3))
        if end < 0:
            if len(self._head) > _MAX_HEAD_BYTES:
                self._head_overflowed = True
                del self._head[:-3]  # only the end of the block is still of interest
            return len(data)
        head = bytes(self._head[:end])
        body_start = position + end + 4 - kept
        self._head.clear()
        length, chunked = (0, False) if self._head_overflowed else _body_framing(head)
        self._head_overflowed = False
        if chunked:
            self._chunks = _ChunkedBody()
            self.phase = Phase.BODY
        elif length > 0:
            self._body_left = length
            self.phase = Phase.BODY
        else:
            self._end_request()
        return body_start

    def _end_request(self) -> None:
        self.phase = Phase.IDLE
        self._chunks = None
        self._body_left = 0


def _body_framing(head: bytes) -> tuple[int, bool]:
    """(Content-Length, whether the body is chunked) from a header block."""
    length = 0
    chunked = False
    for line in head.split(b"\r\n")[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            continue
        name = name.strip().lower()
        value = value.strip()
        if name == b"content-length" and value.isdigit() and len(value) <= 18:
            length = int(value)
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    return length, chunked


class _ChunkedBody:
    """Where a chunked body ends: size lines, chunk data each followed by CRLF, the last
    (zero-size) chunk, then trailer lines up to a blank one."""

    def __init__(self) -> None:
        self.done = False
        self._state = "size"  # size | data | data-end | trailer | broken
        self._line = bytearray()
        self._left = 0

    def feed(self, data: bytes, position: int) -> int:
        while position < len(data) and not self.done:
            if self._state in ("size", "trailer"):
                end = data.find(b"\n", position)
                if end < 0:
                    self._line += data[position:]
                    if len(self._line) > _MAX_CHUNK_LINE_BYTES:
                        self._state = "broken"
                    return len(data)
                self._line += data[position:end]
                position = end + 1
                line = bytes(self._line).rstrip(b"\r")
                self._line.clear()
                if self._state == "trailer":
                    self.done = not line
                    continue
                size = line.split(b";", 1)[0].strip()
                if _CHUNK_SIZE.fullmatch(size) is None:
                    self._state = "broken"
                elif int(size, 16) == 0:
                    self._state = "trailer"
                else:
                    self._state, self._left = "data", int(size, 16)
            elif self._state in ("data", "data-end"):
                taken = min(self._left, len(data) - position)
                self._left -= taken
                position += taken
                if self._left == 0:  # after the data, its CRLF; after that, the next size
                    self._state, self._left = ("data-end", 2) if self._state == "data" else (
                        "size", 0
                    )
            else:  # broken: never ends, so the body timeout closes the connection
                return len(data)
        return position


class ReadTimeoutProtocol(asyncio.Protocol):
    """aiohttp's request handler behind a deadline for reading each request.

    Every call is passed on to the handler; the framing of the received bytes arms the
    header deadline when a request begins, the body deadline when its headers are complete,
    and nothing once it is read.
    """

    def __init__(
        self, handler: asyncio.Protocol, timeouts: ReadTimeouts, loop: asyncio.AbstractEventLoop
    ) -> None:
        self._handler = handler
        self._timeouts = timeouts
        self._loop = loop
        self._framing = RequestFraming()
        self._transport: asyncio.BaseTransport | None = None
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport
        self._handler.connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        before = (self._framing.phase, self._framing.requests_started)
        self._framing.feed(data)
        if (self._framing.phase, self._framing.requests_started) != before:
            self._arm()
        self._handler.data_received(data)

    def eof_received(self) -> bool | None:
        return self._handler.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._transport = None
        self._handler.connection_lost(exc)

    def pause_writing(self) -> None:
        self._handler.pause_writing()

    def resume_writing(self) -> None:
        self._handler.resume_writing()

    def _arm(self) -> None:
        self._disarm()
        phase = self._framing.phase
        if phase is Phase.HEADERS:
            seconds = self._timeouts.header_seconds
        elif phase is Phase.BODY:
            seconds = self._timeouts.body_seconds
        else:
            return
        if seconds > 0:
            self._deadline = self._loop.call_later(seconds, self._expire, phase)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self, phase: Phase) -> None:
        self._deadline = None
        transport = self._transport
        if transport is None or transport.is_closing():
            return
        log.debug(
            "closing the connection from %s: request %s not received in time",
            transport.get_extra_info("peername"), phase.value,
        )
        # abort, not close: close would first flush to a client that may not be reading
        if isinstance(transport, asyncio.WriteTransport):
            transport.abort()
        else:
            transport.close()


class ReadTimeoutSite(web.BaseSite):
    """A TCP site like `aiohttp.web.TCPSite`, whose connections go through ReadTimeoutProtocol."""

    __slots__ = ("_bound_port", "_listener")

    def __init__(self, runner: web.BaseRunner, listener: Listener, *, backlog: int = 128) -> None:
        super().__init__(runner, ssl_context=listener.ssl_context, backlog=backlog)
        self._listener = listener
        self._bound_port: int | None = None

    @property
    def port(self) -> int:
        """The port listened on: the one asked for, or once started the one bound (for 0)."""
        return self._listener.port if self._bound_port is None else self._bound_port

    @property
    def name(self) -> str:
        scheme = "https" if self._ssl_context is not None else "http"
        return f"{scheme}://{self._listener.host}:{self.port}"

    async def start(self) -> None:
        await super().start()
        loop = asyncio.get_running_loop()
        server = self._runner.server
        if server is None:
            raise RuntimeError("Call runner.setup() before starting a site")
        timeouts = self._listener.timeouts

        def connection() -> ReadTimeoutProtocol:
            return ReadTimeoutProtocol(server(), timeouts, loop)

        tls: dict[str, Any] = {}
        if self._ssl_context is not None:
            # A handshake is read like headers: a client stalling it holds a connection too.
            handshake = timeouts.header_seconds if timeouts.header_seconds > 0 else None
            tls = {"ssl": self._ssl_context, "ssl_handshake_timeout": handshake}
        listening = await loop.create_server(
            connection, self._listener.host, self._listener.port,
            backlog=self._backlog, reuse_port=self._listener.reuse_port or None, **tls,
        )
        self._server = listening
        if listening.sockets:
            self._bound_port = int(listening.sockets[0].getsockname()[1])


def run_app(
    app: web.Application, listener: Listener, *, keepalive_timeout: float = 75.0
) -> None:
    """Serve `app` until SIGINT or SIGTERM, as `aiohttp.web.run_app` does (the same event loop
    handling and shutdown), through one ReadTimeoutSite (HTTPS with the listener's
    `ssl_context`); no banner, no access log."""
    raise_open_file_limit()
    loop = asyncio.new_event_loop()
    serving = loop.create_task(_serve(app, listener, keepalive_timeout))
    try:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(serving)
    except (web.GracefulExit, KeyboardInterrupt):
        pass
    finally:
        try:
            if not serving.done():
                serving.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    loop.run_until_complete(serving)
        finally:
            _cancel_remaining_tasks(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()


def raise_open_file_limit() -> int:
    """Raise this process's soft limit of open files to its hard limit: each waiting long
    poll holds a connection, and a soft limit of 1024 (a common default) would refuse
    connections long before memory or CPU run short. Returns the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as error:
            log.warning("could not raise the open files limit from %d: %s", soft, error)
    return soft


async def _serve(app: web.Application, listener: Listener, keepalive_timeout: float) -> None:
    runner = web.AppRunner(
        app, handle_signals=True, access_log=None, keepalive_timeout=keepalive_timeout
    )
    await runner.setup()
    try:
        await ReadTimeoutSite(runner, listener, backlog=LISTEN_BACKLOG).start()
        await asyncio.Event().wait()  # until cancelled
    finally:
        await runner.cleanup()


def _cancel_remaining_tasks(loop: asyncio.AbstractEventLoop) -> None:
    tasks: set[asyncio.Task[Any]] = asyncio.all_tasks(loop)
    if not tasks:
        return
    for task in tasks:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    for task in tasks:
        if not task.cancelled() and task.exception() is not None:
            loop.call_exception_handler({
                "message": "unhandled exception while stopping the server",
                "exception": task.exception(),
                "task": task,
            })
