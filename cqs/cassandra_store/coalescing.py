"""Group commit: calls for the same key made within one event-loop turn share one flush.

Under load, requests for one queue arrive together: SendMessage from many clients each
writes one message. Handing each one to the store or the cache on its own costs a request
(a thread hand-off, a round trip, a server-side request) per message; `Coalescer` collects
the items submitted for a key until the loop's next turn and flushes them in one call,
then answers every caller with that call's outcome. A lone call waits one loop turn more
than it would have, no longer: nothing waits on a timer.

Pure asyncio; imports nothing of cqs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class _Group(Generic[T]):
    __slots__ = ("done", "items")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.items: list[T] = []
        self.done: asyncio.Future[None] = loop.create_future()


class Coalescer(Generic[K, T]):
    """Items for the same key submitted before the loop's next turn go to one `flush(key,
    items)`; each `submit` returns (or raises) as that flush does. A group is closed at
    `max_items`, so one flush never grows without bound."""

    def __init__(
        self, flush: Callable[[K, list[T]], Awaitable[None]], *, max_items: int = 200
    ) -> None:
        self._flush = flush
        self._max_items = max_items
        self._open: dict[K, _Group[T]] = {}
        self._running: set[asyncio.Task[None]] = set()

    async def submit(self, key: K, items: Sequence[T]) -> None:
        group = self._open.get(key)
        if group is None or len(group.items) + len(items) > self._max_items:
            loop = asyncio.get_running_loop()
            group = _Group(loop)
            self._open[key] = group
            loop.call_soon(self._close, key, group)
        group.items.extend(items)
        # Shielded: a caller that gives up must not cancel the others' write.
        await asyncio.shield(group.done)

    def _close(self, key: K, group: _Group[T]) -> None:
        if self._open.get(key) is group:
            del self._open[key]
        task = asyncio.ensure_future(self._run(key, group))
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def _run(self, key: K, group: _Group[T]) -> None:
        try:
            await self._flush(key, group.items)
        except BaseException as failure:  # every caller sees the flush's own error
            if not group.done.cancelled():
                group.done.set_exception(failure)
                group.done.exception()  # retrieved here: callers that gave up may not
            if not isinstance(failure, Exception):
                raise
        else:
            if not group.done.cancelled():
                group.done.set_result(None)
