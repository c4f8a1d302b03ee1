"""The long polls of one process that wait for messages, and the rules for waking them.

Owns the waiting receives (one future each, per queue, oldest first) and whom a wake-up
reaches:
- a wake-up (a send through this process, an arrival another process announced over
  pub/sub, a finished cache fill) wakes the oldest waiter of the queue;
- a receive that got a full batch while others wait wakes the next one (`pass_on`), so a
  burst drains through the waiters one Redis call at a time instead of every waiter calling
  Redis at once for the same few messages;
- one recheck task per process wakes the oldest waiter of every queue that has waiters every
  `recheck_seconds`, in case an announcement was missed (say, during a pub/sub reconnect).
A waiting poll holds no Redis connection and makes no Redis call until it is woken: it is a
future in a dict and a timer handle. Imports asyncio and `cqs.domain.model` only.
"""

from __future__ import annotations

import asyncio
import contextlib

from cqs.domain.model import QueueIdentity


class LongPollWaiters:
    """Waiting long polls by queue, woken one at a time."""

    def __init__(self, recheck_seconds: float) -> None:
        self._recheck_seconds = recheck_seconds
        # queue -> its waiters, oldest first (dicts keep insertion order)
        self._waiting: dict[QueueIdentity, dict[asyncio.Future[None], None]] = {}
        self._rechecks: asyncio.Task[None] | None = None

    def waiting_on(self, queue: QueueIdentity) -> int:
        return len(self._waiting.get(queue, ()))

    @property
    def waiting(self) -> int:
        return sum(len(waiters) for waiters in self._waiting.values())

    async def wait(self, queue: QueueIdentity, seconds: float) -> bool:
        """Wait until woken (True) or until `seconds` pass (False)."""
        loop = asyncio.get_running_loop()
        self._start_rechecks()
        future: asyncio.Future[None] = loop.create_future()
        waiters = self._waiting.setdefault(queue, {})
        waiters[future] = None
        try:
            async with asyncio.timeout(seconds):
                await future
            return True
        except TimeoutError:
            return future.done() and not future.cancelled()  # woken as time ran out
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.wake(queue)  # woken, then its client left: the next waiter takes it
            raise
        finally:
            waiters.pop(future, None)
            if not waiters and self._waiting.get(queue) is waiters:
                del self._waiting[queue]

    def wake(self, queue: QueueIdentity) -> None:
        """Wake the oldest waiter of the queue, if any."""
        waiters = self._waiting.get(queue)
        while waiters:
            future = next(iter(waiters))
            del waiters[future]
            if not future.done():
                future.set_result(None)
                return

    def pass_on(self, queue: QueueIdentity, delivered: int, asked: int) -> None:
        """After a receive of the queue got `delivered` of `asked` messages: a full batch means
        more may be waiting, so the next waiter looks."""
        if delivered >= asked and delivered > 0:
            self.wake(queue)

    def _start_rechecks(self) -> None:
        if self._rechecks is None or self._rechecks.done():
            self._rechecks = asyncio.get_running_loop().create_task(
                self._recheck_forever(), name="cqs-long-poll-rechecks"
            )

    async def _recheck_forever(self) -> None:
        while True:
            await asyncio.sleep(self._recheck_seconds)
            for queue in list(self._waiting):
                self.wake(queue)

    async def close(self) -> None:
        if self._rechecks is not None:
            self._rechecks.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._rechecks
