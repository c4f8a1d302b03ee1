"""Auto-pipelining of the Lua script calls to one Redis server.

Owns how concurrent EVALSHA calls share a connection: the calls made in one event-loop turn
are queued, and one flush sends them with one socket write on the pipeline's own connection
and reads the replies in order, handing each caller its own result or its own error. A flush
is bounded (`max_commands`, `max_bytes`); what is left waits for the next one, which starts
as soon as the previous one is read. Each caller keeps the semantics of a call of its own:
- a script error (a Lua error, OOM) fails only its caller;
- NOSCRIPT (server restarted or flushed): only the affected calls are sent again, as EVAL
  with the script's text, which also caches the script for the next EVALSHA;
- a connection failure or timeout fails every caller of the flush, and every call queued
  behind it, with that error and disconnects the connection, so no half-read reply is left
  for the next flush and a dead server costs one connect timeout, not one per batch;
- a caller that gives up (cancelled) does not stop the flush: its reply is read and dropped.

The connection is the pipeline's own (one per server, beside the command pool): taking it
from the pool for each flush cost a lock, telemetry hooks and a readiness probe that waits
a loop turn. The write and the idle check reach into redis-py's connection (its stream
writer and reader); tests/contract/test_script_pipelining.py covers both. Only scripts come
here: blocking and plain commands use the pool. Imports asyncio and redis; never the service.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redis.asyncio.connection import AbstractConnection
from redis.commands.core import AsyncScript
from redis.exceptions import NoScriptError, ResponseError

MAX_COMMANDS = 64
MAX_BYTES = 512 * 1024


@dataclass(slots=True)
class _Call:
    script: AsyncScript
    keys: Sequence[str]
    args: Sequence[str | int]
    reply: asyncio.Future[Any]


class ScriptPipeline:
    """Queues one server's EVALSHA calls and flushes them in batches on one connection."""

    def __init__(
        self,
        connection: AbstractConnection,
        *,
        max_commands: int = MAX_COMMANDS,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self._connection: Any = connection
        self._max_commands = max_commands
        self._max_bytes = max_bytes
        self._pending: deque[_Call] = deque()
        self._flusher: asyncio.Task[None] | None = None
        self.flushes = 0  # batches written, for tests and operators

    async def run(self, script: AsyncScript, keys: Sequence[str], args: Sequence[str | int]) -> Any:
        """EVALSHA `script` with `keys` and `args` in the next flush; its reply or its error."""
        reply: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append(_Call(script, keys, args, reply))
        if self._flusher is None or self._flusher.done():
            # A task's first step runs on the loop's next turn: every call made in this
            # turn is queued by then and goes out in the same write.
            self._flusher = asyncio.ensure_future(self._flush_pending())
        return await reply

    async def close(self) -> None:
        """Stop flushing; calls still queued or unanswered are cancelled."""
        flusher, self._flusher = self._flusher, None
        if flusher is not None:
            flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await flusher
        _fail(list(self._pending), asyncio.CancelledError())
        self._pending.clear()
        await self._connection.disconnect()

    async def _flush_pending(self) -> None:
        """Flush batches until nothing is queued."""
        connection = self._connection
        try:
            if connection.is_connected and _closed_by_server(connection):
                await connection.disconnect()  # idle while the server went away: reconnect
            while self._pending:
                batch, packed = self._take(connection)
                if not batch:
                    continue  # every call taken had been cancelled
                try:
                    await self._flush(connection, batch, packed)
                except BaseException as error:
                    # The calls still queued would meet the same dead connection one flush
                    # (and one connect timeout) after another: they fail with this one.
                    _fail(batch + list(self._pending), error)
                    self._pending.clear()
                    await connection.disconnect(nowait=True)  # never leave half a reply behind
                    if not isinstance(error, Exception):
                        raise
        except Exception as error:  # unforeseen: no queued caller may wait for ever
            _fail(list(self._pending), error)
            self._pending.clear()
            raise
        finally:
            if self._flusher is asyncio.current_task():
                self._flusher = None

    def _take(self, connection: Any) -> tuple[list[_Call], list[bytes]]:
        """The next batch (calls whose caller still waits) and its packed commands."""
        batch: list[_Call] = []
        packed: list[bytes] = []
        size = 0
        while self._pending and len(batch) < self._max_commands and size < self._max_bytes:
            call = self._pending.popleft()
            if call.reply.done():
                continue  # cancelled before it was sent: never run it
            try:
                chunks = _pack(connection, call)
            except Exception as error:  # an argument Redis cannot take: this caller's error
                _settle(call, error=error)
                continue
            batch.append(call)
            packed.extend(chunks)
            size += sum(map(len, chunks))
        return batch, packed

    async def _flush(self, connection: Any, batch: list[_Call], packed: list[bytes]) -> None:
        """One write, then every reply in order; NOSCRIPT calls are sent again once, as EVAL."""
        self.flushes += 1
        await _write(connection, packed)
        forgotten: list[_Call] = []
        for call in batch:
            try:
                reply = await connection.read_response()
            except NoScriptError:
                forgotten.append(call)
                continue
            except ResponseError as error:  # read whole: the connection is fine
                _settle(call, error=error)
                continue
            _settle(call, result=reply)
        if forgotten:
            await self._retry_forgotten(connection, forgotten)

    async def _retry_forgotten(self, connection: Any, forgotten: list[_Call]) -> None:
        """Send the forgotten calls again as EVAL with the script's text: Redis caches the
        script under the same sha for the next EVALSHA, and a flush landing meanwhile (a
        SCRIPT LOAD then EVALSHA could meet it) cannot make them fail."""
        packed = [chunk for call in forgotten for chunk in connection.pack_command(
            "EVAL", call.script.script, len(call.keys), *call.keys, *call.args
        )]  # fmt: skip
        await connection.send_packed_command(packed, check_health=False)
        for call in forgotten:
            try:
                reply = await connection.read_response()
            except ResponseError as error:
                _settle(call, error=error)
                continue
            _settle(call, result=reply)


async def _write(connection: Any, packed: list[bytes]) -> None:
    """Write the batch; wait (with redis-py's write timeout and errors) only when the socket
    did not take it all at once. redis-py's own write wraps every write in a task with a
    timeout, which costs more than a small batch."""
    if not connection.is_connected:
        await connection.connect()  # a Sentinel-managed connection asks for the primary here
    writer = connection._writer
    writer.writelines(packed)
    if writer.transport.get_write_buffer_size():
        await connection.send_packed_command([], check_health=False)


def _closed_by_server(connection: Any) -> bool:
    """Whether the server closed the connection (its end seen) since the last flush."""
    reader = getattr(connection, "_reader", None)
    return reader is None or reader.at_eof()


def _pack(connection: Any, call: _Call) -> list[bytes]:
    packed: list[bytes] = connection.pack_command(
        "EVALSHA", call.script.sha, len(call.keys), *call.keys, *call.args
    )
    return packed


def _settle(call: _Call, *, result: Any = None, error: BaseException | None = None) -> None:
    if call.reply.done():
        return  # its caller gave up (cancelled): the reply is read and dropped
    if error is None:
        call.reply.set_result(result)
    else:
        call.reply.set_exception(error)


def _fail(calls: list[_Call], error: BaseException) -> None:
    for call in calls:
        if call.reply.done():
            continue
        if isinstance(error, asyncio.CancelledError):
            call.reply.cancel()
        else:
            call.reply.set_exception(error)
