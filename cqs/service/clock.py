"""OffsetClock: the wall clock the server's queue semantics read, which tests may advance.

Owns the one clock that QueueService, the revisibility worker and the queue statistics
share (retention, delays, visibility timeouts, message ages). In production its offset stays
zero, so it reads `time.time()`. With the test-only `test_clock` setting, the route in
`cqs/sqs_api/clock_route.py` moves it forward, so wire tests observe a 60 s retention period without
sleeping through it. Imports only the standard library.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class OffsetClock:
    """`source()` plus an offset that only grows: the clock never runs backwards."""

    def __init__(self, source: Callable[[], float] = time.time) -> None:
        self._source = source
        self._offset = 0.0

    def time(self) -> float:
        """Seconds since the epoch, as the server's queue semantics see them."""
        return self._source() + self._offset

    @property
    def offset_seconds(self) -> float:
        return self._offset

    def advance(self, seconds: float) -> None:
        """Move the clock forward by `seconds` (0 or more)."""
        if not seconds >= 0:  # also refuses NaN
            raise ValueError(f"a clock only moves forward, not by {seconds!r} s")
        self._offset += seconds
