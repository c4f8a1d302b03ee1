"""OffsetClock: the wall clock the server's queue semantics read, which tests may advance;
ReferenceClock: this host's clock set to a reference's (the first Redis server's).

Owns the one clock that QueueService, the revisibility worker and the queue statistics
share (retention, delays, visibility timeouts, message ages). In production its offset stays
zero, so it reads its source, the ReferenceClock below. With the test-only `test_clock` setting, the route in
`cqs/sqs_api/clock_route.py` moves it forward, so wire tests observe a 60 s retention period without
sleeping through it. A move may be set to take effect at a later reading of the source clock, so
that several server processes on one machine move together (the machine's clock is shared; the
moment each process is told is not). Also owns reading any such clock in milliseconds
(`epoch_ms`), the unit of the cache's and the store's times.

Visibility timeouts, delays and retention are decided by comparing times that different
API processes wrote; a host whose clock is off by seconds would hand out messages others
hold (a receiver 30 s ahead repeated 665 of 1,200 messages early in the multi-host test).
So every process reads `ReferenceClock`: `time.time()` moved by the offset to the first
Redis server's clock, measured at start and every `REFERENCE_INTERVAL_SECONDS` by
`follow_reference`. Imports only the standard library.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

REFERENCE_INTERVAL_SECONDS = 30.0
# An offset this large is worth an operator's attention: the host's clock is not synced.
NOTABLE_OFFSET_SECONDS = 1.0


class ReferenceClock:
    """`source()` plus the last measured offset to the reference clock (0 until measured)."""

    def __init__(self, source: Callable[[], float] = time.time) -> None:
        self._source = source
        self.offset_seconds = 0.0

    def time(self) -> float:
        return self._source() + self.offset_seconds


async def follow_reference(
    clock: ReferenceClock,
    measure: Callable[[], Awaitable[float | None]],
    interval_seconds: float = REFERENCE_INTERVAL_SECONDS,
    *,
    once: bool = False,
) -> None:
    """Set `clock`'s offset from `measure()` (None: the reference did not answer; the last
    offset stays), now and then every `interval_seconds` unless `once`."""
    while True:
        offset = await measure()
        if offset is not None:
            if abs(offset) >= NOTABLE_OFFSET_SECONDS and (
                abs(offset - clock.offset_seconds) >= NOTABLE_OFFSET_SECONDS
            ):
                log.warning(
                    "this host's clock is %.1f s %s Redis's; cqs follows Redis's clock",
                    abs(offset), "behind" if offset > 0 else "ahead of",
                )
            clock.offset_seconds = offset
        if once:
            return
        await asyncio.sleep(interval_seconds)


class OffsetClock:
    """`source()` plus an offset that only grows: the clock never runs backwards."""

    def __init__(self, source: Callable[[], float] = time.time) -> None:
        self._source = source
        self._offset = 0.0
        self._pending: list[tuple[float, float]] = []  # (source reading it applies at, seconds)

    def time(self) -> float:
        """Seconds since the epoch, as the server's queue semantics see them."""
        now = self._source()
        if self._pending:
            self._apply_pending(now)
        return now + self._offset

    @property
    def offset_seconds(self) -> float:
        """The moves applied so far (a pending one counts once its moment has come)."""
        if self._pending:
            self._apply_pending(self._source())
        return self._offset

    def advance(self, seconds: float, at: float | None = None) -> None:
        """Move the clock forward by `seconds` (0 or more): now, or once the source reads `at`."""
        if not seconds >= 0:  # also refuses NaN
            raise ValueError(f"a clock only moves forward, not by {seconds!r} s")
        if at is not None and not math.isfinite(at):
            raise ValueError(f"a move applies at a finite moment, not at {at!r}")
        if at is None or self._source() >= at:
            self._offset += seconds
        else:
            self._pending.append((at, seconds))

    def _apply_pending(self, now: float) -> None:
        due = [step for step in self._pending if step[0] <= now]
        if due:
            self._pending = [step for step in self._pending if step[0] > now]
            self._offset += sum(seconds for _, seconds in due)


def epoch_ms(clock: Callable[[], float]) -> int:
    """What `clock` reads (seconds since the epoch), in whole milliseconds."""
    return int(clock() * 1000)
