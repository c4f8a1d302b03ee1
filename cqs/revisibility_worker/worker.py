"""RevisibilityWorker: a loop over the MessageCache port that makes due messages visible.

Owns the sweep cadence and what happens after a sweep (waking long polls). The cache does
the work atomically per queue, and a per-server lease lets one process at a time sweep each
Redis server, so any number of processes may run this loop: the others stand by and take
over when the sweeper dies. Imports only ports and the standard
library; never redis.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Sequence

from cqs.ports import MessageCache

log = logging.getLogger(__name__)


class RevisibilityWorker:
    def __init__(
        self,
        cache: MessageCache,
        on_available: Callable[[Sequence[str]], None],
        *,
        interval_seconds: float = 0.1,
        batch_limit: int = 1000,
        lease_seconds: float = 2.0,
        sweeper_id: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._cache = cache
        # One sweeper per Redis server at a time; a survivor takes over within a lease.
        self.sweeper_id = sweeper_id or uuid.uuid4().hex
        self._lease_ms = int(max(lease_seconds, 3 * interval_seconds) * 1000)
        self._on_available = on_available
        self._interval = interval_seconds
        self._batch_limit = batch_limit
        self._clock = clock

    async def sweep(self) -> list[str]:
        """One pass: make every due message visible; return the queues that got some."""
        names = await self._cache.release_due(
            int(self._clock() * 1000), self._batch_limit, self.sweeper_id, self._lease_ms
        )
        if names:
            self._on_available(names)
        return names

    async def run(self) -> None:
        """Sweep forever at the configured interval; errors are logged, never fatal."""
        while True:
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception:  # a sweep must never kill the worker
                log.exception("revisibility sweep failed")
            await asyncio.sleep(self._interval)
