"""RevisibilityWorker: a loop over the DueSweeper cache port that makes due messages visible.

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

from cqs.domain.model import QueueIdentity
from cqs.ports import DueSweeper, NullTelemetry, Telemetry

log = logging.getLogger(__name__)


class RevisibilityWorker:
    def __init__(
        self,
        cache: DueSweeper,
        on_available: Callable[[Sequence[QueueIdentity]], None],
        *,
        interval_seconds: float = 0.1,
        batch_limit: int = 1000,
        lease_seconds: float = 2.0,
        sweeper_id: str | None = None,
        clock: Callable[[], float] = time.time,
        telemetry: Telemetry | None = None,
    ) -> None:
        self._cache = cache
        self._telemetry: Telemetry = telemetry or NullTelemetry()
        self._previous_sweep_ms: int | None = None
        # One sweeper per Redis server at a time; a survivor takes over within a lease.
        self.sweeper_id = sweeper_id or uuid.uuid4().hex
        self._lease_ms = int(max(lease_seconds, 3 * interval_seconds) * 1000)
        self._on_available = on_available
        self._interval = interval_seconds
        self._batch_limit = batch_limit
        self._clock = clock

    async def sweep(self) -> list[QueueIdentity]:
        """One pass: make every due message visible; return the queues that got some."""
        started_ms = int(self._clock() * 1000)
        queues = await self._cache.release_due(
            started_ms, self._batch_limit, self.sweeper_id, self._lease_ms
        )
        # A message due just after the previous pass began waited for this pass to end.
        finished_ms = int(self._clock() * 1000)
        previous_ms, self._previous_sweep_ms = self._previous_sweep_ms, started_ms
        lag_ms = finished_ms - (previous_ms if previous_ms is not None else started_ms)
        self._telemetry.sweep((finished_ms - started_ms) / 1000, len(queues), lag_ms)
        if queues:
            self._on_available(queues)
        return queues

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
