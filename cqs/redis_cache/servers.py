"""The Redis servers behind the cache: one per ring node, each with its limits and its breaker.

Owns how one call reaches one server and what its failure means:
- admission: at most `max_connections` calls in flight per server (the size of the command
  pool); a call that finds them all busy waits up to `pool_wait_seconds`, then fails with
  `StorageBusy`. A full pool is back-pressure, never an outage;
- failure: a connection error or timeout is an outage only when a probe on a fresh
  connection also fails (one probe at a time per server). Then the breaker opens and the call
  raises `StorageUnavailable` when the server is gone with its data (a standalone server
  refusing connections: it keeps nothing across a restart), which lets the service serve
  from Cassandra, and `CacheUnreachable` when it may live on with its data (a timeout, a
  cut link, a replicated topology), which does not. If the probe
  answers, the server is up and the process was merely slow: a call whose connection was
  never made runs once more (its command never left), any other raises `StorageBusy`;
- the breaker (`ServerBreaker`), which makes calls fail fast for a moment after an outage;
- (the pool of servers, which one holds a queue, is `pool.py`'s).

Pub/sub connections come from a client of their own, so the arrivals feed never takes a
command slot. A server is named in logs and metrics by its label (`host:port/db`) and on the
ring by its URL without credentials (`ring_node`), so neither ever shows a password, and
adding a password or TLS to a URL moves no queue; `rediss://` URLs connect over TLS,
verified with the files of `RedisTls`. Script calls go through the server's
`ScriptPipeline`. Imports redis, the errors, the scripts and the pipeline; never
the service or aiohttp.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar
from urllib.parse import urlsplit, urlunsplit

from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, ReadOnlyError
from redis.exceptions import TimeoutError as RedisTimeoutError

from cqs.domain.errors import CacheUnreachable, StorageBusy, StorageUnavailable
from cqs.redis_cache.pipelining import ScriptPipeline
from cqs.redis_cache.scripts import QueueScripts, register_scripts

log = logging.getLogger(__name__)

T = TypeVar("T")
P = ParamSpec("P")

# The server did not answer, or not in time: an outage if a probe confirms it.
_UNANSWERED: tuple[type[BaseException], ...] = (
    RedisConnectionError,  # includes BusyLoadingError (server still starting)
    RedisTimeoutError,
    OSError,  # includes the builtin TimeoutError that asyncio timeouts raise
)
# The server answered but cannot take writes now: the client may retry, the server is up.
_REFUSING: tuple[type[BaseException], ...] = (OutOfMemoryError, ReadOnlyError)

UNAVAILABLE_MESSAGE = "The message cache is temporarily unavailable; retry the request."


def command_never_sent(error: BaseException) -> bool:
    """Whether redis-py failed to open the connection, so the command was never written
    ("Timeout connecting to server", "Error 111 connecting to host:port")."""
    return isinstance(error, RedisConnectionError | RedisTimeoutError) and (
        "connecting to" in str(error)
    )
BUSY_MESSAGE = "The server is busy; retry the request."


def connection_refused(error: BaseException | None) -> bool:
    """Whether connecting was refused: nothing listens on the server's port (redis-py
    raises its own ConnectionError from the socket's ConnectionRefusedError)."""
    seen = 0
    while error is not None and seen < 5:
        if isinstance(error, ConnectionRefusedError):
            return True
        error, seen = error.__cause__ or error.__context__, seen + 1
    return False


def closed_transport(error: BaseException) -> bool:
    """Whether uvloop refused a write to a connection already closed (a node killed while
    redis-py opened or used it): uvloop raises RuntimeError there, where asyncio's own
    loop drops the write and redis-py sees the connection error that follows."""
    return isinstance(error, RuntimeError) and "handler is closed" in str(error)


async def _run_translated(
    operation: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs
) -> T:
    """`operation`, with a write to a closed connection raised as the connection error
    it is, so it fails like any lost connection (never as an unexpected error)."""
    try:
        return await operation(*args, **kwargs)
    except RuntimeError as exc:
        if not closed_transport(exc):
            raise
        raise RedisConnectionError(f"Connection closed under the call: {exc}") from exc

# Told about every Redis call: (backend, server label, operation, seconds, ok).
BackendObserver = Callable[[str, str, str, float, bool], None]
# Told about every call that had to wait for a slot: (backend, server label, seconds waited,
# admitted). Not admitted: it gave up after the pool wait and failed with StorageBusy.
PoolObserver = Callable[[str, str, float, bool], None]


def server_label(url: str) -> str:
    """`host:port/db` of a Redis URL: names the server in logs and metrics without its
    user name and password."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or 6379}{parts.path or '/0'}"


def ring_node(url: str) -> str:
    """The server's name on the hash ring: its URL without user name and password, and
    `rediss` read as `redis`. A plain URL is its own name, so rings of plain URLs place
    queues as before; securing a server changes no queue's place."""
    parts = urlsplit(url)
    scheme = "redis" if parts.scheme == "rediss" else parts.scheme
    return urlunsplit((scheme, parts.netloc.rpartition("@")[2], parts.path, parts.query, ""))


@dataclass(frozen=True, slots=True)
class RedisTls:
    """How `rediss://` servers are verified: a CA bundle (None: the system's CAs), and a
    client certificate and key for servers that ask for one. Plain URLs ignore it."""

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None

    def client_options(self, url: str) -> dict[str, Any]:
        if urlsplit(url).scheme != "rediss":
            return {}
        return {
            "ssl_cert_reqs": "required",
            "ssl_check_hostname": True,
            "ssl_ca_certs": self.ca_file,
            "ssl_certfile": self.cert_file,
            "ssl_keyfile": self.key_file,
        }


class ServerBreaker:
    """Remembers a server as down for a while after an outage, so requests fail fast.

    Closed: calls go through. After a failure: open for `down_seconds` (calls raise at
    once). Then the next call tries the server again; success closes the breaker.
    """

    def __init__(
        self,
        server: str,
        down_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._server = server
        self._down_seconds = down_seconds
        self._clock = clock
        self._down_until: float | None = None
        self._outage: type[StorageUnavailable] = CacheUnreachable

    @property
    def is_down(self) -> bool:
        return self._down_until is not None and self._clock() < self._down_until

    def check(self) -> None:
        """Raise the outage's error while the server is remembered as down."""
        if self.is_down:
            raise self._outage(UNAVAILABLE_MESSAGE)

    def record_failure(
        self, error: BaseException, outage: type[StorageUnavailable] = CacheUnreachable
    ) -> None:
        if self._down_until is None:
            log.warning("Redis server %s is unreachable: %r", self._server, error)
        self._down_until = self._clock() + self._down_seconds
        self._outage = outage

    def record_success(self) -> None:
        if self._down_until is not None:
            log.warning("Redis server %s is reachable again", self._server)
        self._down_until = None


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """How calls reach one server: timeouts, pool size and how long a call may queue."""

    socket_timeout: float = 1.0
    connect_timeout: float = 0.5
    down_seconds: float = 1.0
    max_connections: int = 64
    pool_wait_seconds: float = 5.0


@dataclass(frozen=True, slots=True)
class PoolFigures:
    """One server's command pool right now, for operators (the console's cluster view)."""

    in_use: int
    waiting: int
    size: int


class RedisServer:
    """One Redis server: its command client, arrivals client, scripts, limits and breaker."""

    # Answers that mean "up, but not taking this call now": the service uses Cassandra.
    refusing: tuple[type[BaseException], ...] = _REFUSING
    # Whether the data outlive a node that is down (replicas): then no failure says the
    # cache is gone, and none lets the service hand messages out from Cassandra.
    replicated = False

    def __init__(
        self,
        url: str,
        limits: ServerLimits,
        *,
        observe: BackendObserver | None = None,
        observe_pool: PoolObserver | None = None,
        tls: RedisTls | None = None,
        label: str | None = None,
    ) -> None:
        self.url = url
        self.label = label or server_label(url)
        self._limits = limits
        self._tls = tls or RedisTls()
        self._observe = observe
        self._observe_pool = observe_pool
        self.client: Redis = self._new_client(max_connections=limits.max_connections)
        self.feed_client: Redis = self._new_client(max_connections=None)
        self.scripts: QueueScripts = register_scripts(self.client)
        self._scripts = self._new_script_pipeline()
        self.breaker = ServerBreaker(self.label, limits.down_seconds)
        self._slots = asyncio.Semaphore(limits.max_connections)
        self._in_use = 0
        self._waiting = 0
        self._probe: asyncio.Future[bool] | None = None
        self._probe_error: BaseException | None = None  # why the last probe failed

    def _new_script_pipeline(self) -> ScriptPipeline:
        return ScriptPipeline(
            self.client.connection_pool.make_connection()  # type: ignore[no-untyped-call]
        )

    def _new_client(self, *, max_connections: int | None, socket_timeout: float | None = None) -> Redis:
        return Redis.from_url(
            self.url,
            socket_timeout=socket_timeout or self._limits.socket_timeout,
            socket_connect_timeout=self._limits.connect_timeout,
            health_check_interval=0,
            retry=Retry(NoBackoff(), 0),  # no retries: the service decides what to do
            decode_responses=True,
            client_name="cqs",
            max_connections=max_connections,
            **self._tls.client_options(self.url),
        )

    @property
    def script_flushes(self) -> int:
        """How many batched writes of script calls this server got so far."""
        return self._scripts.flushes

    def pool_figures(self) -> PoolFigures:
        return PoolFigures(self._in_use, self._waiting, self._limits.max_connections)

    async def call(
        self,
        operation_name: str,
        operation: Callable[P, Awaitable[T]],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Run one Redis operation here, within the pool's limit, translating its failures."""
        self.breaker.check()
        await self._admit()
        started = time.perf_counter()
        ok = False
        try:
            try:
                result = await _run_translated(operation, *args, **kwargs)
            except _UNANSWERED as exc:
                # The pool's idle connections may have died with the server: drop them, so
                # that once it is back every call gets a fresh connection instead of failing
                # once per stale one.
                await self._drop_idle_connections()
                if not await self._answers_probe():
                    outage = self._outage_of(self._probe_error)
                    self.breaker.record_failure(exc, outage)
                    raise outage(UNAVAILABLE_MESSAGE) from exc
                if not command_never_sent(exc):
                    raise StorageBusy(BUSY_MESSAGE) from exc
                # The server is up and the command never left (its connection was not made
                # in time, as on a starved event loop): once more is safe.
                try:
                    result = await _run_translated(operation, *args, **kwargs)
                except _UNANSWERED as again:
                    raise StorageBusy(BUSY_MESSAGE) from again
            ok = True
        except self.refusing as exc:
            # A full server (out of memory) refuses every script that writes, receives too;
            # a read-only one is a replica, or a primary demoted with its data.
            gone = isinstance(exc, OutOfMemoryError) and not self.replicated
            raise (StorageUnavailable if gone else CacheUnreachable)(UNAVAILABLE_MESSAGE) from exc
        finally:
            self._in_use -= 1
            self._slots.release()
            if self._observe is not None:
                self._observe(
                    "redis", self.label, operation_name, time.perf_counter() - started, ok
                )
        self.breaker.record_success()
        return result

    async def eval_script(
        self, script: AsyncScript, keys: Sequence[str], args: Sequence[str | int]
    ) -> Any:
        """EVALSHA through the server's script pipeline: the scripts of concurrent requests
        share one write and one read on one connection (redis-py's command path, with its
        retry wrapper, telemetry hooks and per-call options, is bypassed). Loads the script
        when the server does not know it (restarted, flushed)."""
        return await self._scripts.run(script, keys, args)

    async def _admit(self) -> None:
        """Take a command slot; wait up to the pool wait when all are busy (back-pressure)."""
        if not self._slots.locked():
            await self._slots.acquire()  # free at once: no suspension in practice
        else:
            self._waiting += 1
            started = time.perf_counter()
            try:
                async with asyncio.timeout(self._limits.pool_wait_seconds):
                    await self._slots.acquire()
            except TimeoutError:
                self._report_wait(started, admitted=False)
                raise StorageBusy(BUSY_MESSAGE) from None
            finally:
                self._waiting -= 1
            self._report_wait(started, admitted=True)
        self._in_use += 1

    def _report_wait(self, started: float, *, admitted: bool) -> None:
        if self._observe_pool is not None:
            self._observe_pool("redis", self.label, time.perf_counter() - started, admitted)

    async def _drop_idle_connections(self) -> None:
        with contextlib.suppress(Exception):
            await self.client.connection_pool.disconnect(inuse_connections=False)

    def _outage_of(self, probe_error: BaseException | None) -> type[StorageUnavailable]:
        """StorageUnavailable when the server is gone with its data, else CacheUnreachable."""
        if not self.replicated and connection_refused(probe_error):
            return StorageUnavailable
        return CacheUnreachable

    async def _answers_probe(self) -> bool:
        """Whether the server answers a PING on a fresh connection; one probe at a time."""
        if self._probe is None or self._probe.done():
            self._probe = asyncio.ensure_future(self._ping_on_fresh_connection())
        return await asyncio.shield(self._probe)

    async def _ping_on_fresh_connection(self) -> bool:
        client = self._new_client(max_connections=1, socket_timeout=2 * self._limits.socket_timeout)
        try:
            await client.ping()
            return True
        except Exception as exc:
            self._probe_error = exc
            return False
        finally:
            with contextlib.suppress(Exception):
                await client.aclose()

    async def close(self) -> None:
        await self._scripts.close()
        await self.client.aclose()
        await self.feed_client.aclose()
