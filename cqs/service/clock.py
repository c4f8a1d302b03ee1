"""OffsetClock: the wall clock the server's queue semantics read, which tests may advance.

Owns the one clock that QueueService, the revisibility worker and the queue statistics
share (retention, delays, visibility timeouts, message ages). In production its offset stays
zero, so it reads `time.time()`. With the test-only `test_clock` setting, the route in
`cqs/sqs_api/clock_route.py` moves it forward, so wire tests observe a 60 s retention period without
sleeping through it. A move may be set to take effect at a later reading of the source clock, so
that several server processes on one machine move together (the machine's clock is shared; the
moment each process is told is not). Also owns reading any such clock in milliseconds
(`epoch_ms`), the unit of the cache's and the store's times. Imports only the standard library.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable


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
