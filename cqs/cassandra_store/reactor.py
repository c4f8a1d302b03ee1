"""The driver's connection class for cqs: libev, with request timers that wake it less.

Every statement starts a timer for its timeout. The driver's libev connection wakes its
event thread for each new timer "in case this timer is earlier" than the ones it has,
which is a cross-thread wake-up per statement: profiled at a fifth of the API process's
Python time under single sends. cqs's timers all have the same length, so a new one is
almost never the earliest; it is queued without a wake-up when the thread will wake up
for an earlier timer anyway, and serviced then. Imports the driver only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cassandra.connection import Timer

try:
    from cassandra.io import libevreactor
    from cassandra.io.libevreactor import LibevConnection
except ImportError:  # the driver was built without its libev extension
    libevreactor = None
    LibevConnection = None


def connection_class() -> type[Any] | None:
    """The class to give `Cluster(connection_class=...)`, or None for the driver's default
    (when libev is not available)."""
    return QuietTimerLibevConnection if LibevConnection is not None else None


if LibevConnection is not None:

    class QuietTimerLibevConnection(LibevConnection):  # type: ignore[misc]
        @classmethod
        def create_timer(cls, timeout: float, callback: Callable[[], Any]) -> Timer:
            timer = Timer(timeout, callback)
            loop = libevreactor._global_loop
            manager = loop._timers
            try:
                # The loop's own timer is set for the earliest queued timer's end: it
                # wakes by then and takes in the new timers (TimerManager.service_timeouts).
                earlier_wake = manager._queue[0][0] <= timer.end
            except (IndexError, AttributeError):  # nothing queued (or a changed driver)
                earlier_wake = False
            if earlier_wake:
                manager.add_timer(timer)
            else:
                loop.add_timer(timer)
            return timer
