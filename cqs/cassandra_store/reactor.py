"""The driver's connection class for cqs: libev, with request timers that wake it less,
and protocol v5 segments read whole however the network splits them.

Every statement starts a timer for its timeout. The driver's libev connection wakes its
event thread for each new timer "in case this timer is earlier" than the ones it has,
which is a cross-thread wake-up per statement: profiled at a fifth of the API process's
Python time under single sends. cqs's timers all have the same length, so a new one is
almost never the earliest; it is queued without a wake-up when the thread will wake up
for an earlier timer anyway, and serviced then.

On protocol v5 (Cassandra 4.0+) every frame travels in checksummed segments. When a read
from the socket ends inside the 6-byte header of the next segment, the driver (3.30.1)
drops those bytes, reads the following ones as a header and closes the connection with
"CRC mismatch on header": a schema refresh or a large result over a loaded machine's
network failed that way. The connection here keeps a partial header for the next read.
Imports the driver only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cassandra.cluster import DefaultConnection
from cassandra.connection import Timer

try:
    from cassandra.io import libevreactor
    from cassandra.io.libevreactor import LibevConnection
except ImportError:  # the driver was built without its libev extension
    libevreactor = None
    LibevConnection = None


class WholeSegmentConnection(DefaultConnection):  # type: ignore[misc]
    """The driver's default connection, keeping a segment header split across reads."""

    def _process_segment_buffer(self) -> None:
        keep_partial_header(self)
        super()._process_segment_buffer()


def keep_partial_header(connection: Any) -> None:
    """Rewind the read buffer when it holds less than a segment header.

    The driver then rebuilds the buffer from its read position: at the end, that would
    throw the partial header away (with a whole header it rewinds itself)."""
    buffer = connection._io_buffer.io_buffer
    if buffer.tell() < connection._segment_codec.header_length_with_crc:
        buffer.seek(0)


def connection_class() -> type[Any]:
    """The class to give `Cluster(connection_class=...)`: libev's when the driver has it."""
    return QuietTimerLibevConnection if LibevConnection is not None else WholeSegmentConnection


if LibevConnection is not None:

    class QuietTimerLibevConnection(LibevConnection):  # type: ignore[misc]
        def _process_segment_buffer(self) -> None:
            keep_partial_header(self)
            super()._process_segment_buffer()

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
