"""The console's memory of the last hour: per-queue samples in a ring buffer, per process.

Owns sampling every queue's figures (depth, in flight, delayed from the queue statistics;
messages sent and received so far from the metrics' totals) every `interval_seconds`, and
answering a queue's series for the charts and sparklines. The samples live in this process
only: they start empty at every start, and each API process keeps its own. Imports the
standard library only; the sub-app feeds it.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_INTERVAL_SECONDS = 10.0
DEFAULT_SPAN_SECONDS = 3600.0
# Memory stays bounded however many queues exist: about 14 KB per remembered queue.
DEFAULT_MAX_QUEUES = 2000
MISSING = -1

# The figures kept per sample, in this order.
FIELDS = ("visible", "in_flight", "delayed", "sent", "received")


@dataclass(frozen=True, slots=True)
class Sample:
    """One queue's figures at one time; `sent` and `received` are running totals."""

    visible: int
    in_flight: int
    delayed: int
    sent: int
    received: int


class QueueHistory:
    """A ring of `span / interval` sample times, and per queue one array of figures aligned
    with it. Queues beyond `max_queues` (in name order) are not remembered."""

    def __init__(
        self,
        *,
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
        span_seconds: float = DEFAULT_SPAN_SECONDS,
        max_queues: int = DEFAULT_MAX_QUEUES,
    ) -> None:
        self.interval_seconds = interval_seconds
        self.slots = max(2, int(span_seconds // interval_seconds))
        self.max_queues = max_queues
        self._times = array("q", [MISSING] * self.slots)
        self._figures: dict[str, array[int]] = {}
        self._next = 0  # the slot the next sample goes into
        self.samples_taken = 0

    def record(self, taken_ms: int, samples: Mapping[str, Sample]) -> None:
        slot = self._next
        self._times[slot] = taken_ms
        width = len(FIELDS)
        for name in list(self._figures):
            if name not in samples:
                del self._figures[name]  # deleted queue
        for name in sorted(samples)[: self.max_queues]:
            figures = self._figures.get(name)
            if figures is None:
                figures = array("q", [MISSING] * (self.slots * width))
                self._figures[name] = figures
            sample = samples[name]
            figures[slot * width : slot * width + width] = array(
                "q", (sample.visible, sample.in_flight, sample.delayed, sample.sent,
                      sample.received)
            )
        for name in sorted(samples)[self.max_queues :]:
            self._figures.pop(name, None)
        self._next = (slot + 1) % self.slots
        self.samples_taken += 1

    def series(self, name: str) -> dict[str, list[float | None]]:
        """Oldest first: `t` (ms), the three depths, and `sent_per_second` /
        `received_per_second` between each sample and the one before it (None where unknown,
        e.g. the queue did not exist yet or the process had just started)."""
        width = len(FIELDS)
        figures = self._figures.get(name)
        order = [(self._next + offset) % self.slots for offset in range(self.slots)]
        order = [slot for slot in order if self._times[slot] != MISSING]
        result: dict[str, list[float | None]] = {
            "t": [], "visible": [], "in_flight": [], "delayed": [],
            "sent_per_second": [], "received_per_second": [],
        }
        previous: tuple[int, int, int] | None = None  # time, sent, received
        for slot in order:
            taken = self._times[slot]
            result["t"].append(taken)
            values = None if figures is None else figures[slot * width : slot * width + width]
            if values is None or values[0] == MISSING:
                for key in ("visible", "in_flight", "delayed", "sent_per_second",
                            "received_per_second"):
                    result[key].append(None)
                previous = None
                continue
            result["visible"].append(values[0])
            result["in_flight"].append(values[1])
            result["delayed"].append(values[2])
            if previous is None or taken <= previous[0]:
                result["sent_per_second"].append(None)
                result["received_per_second"].append(None)
            else:
                seconds = (taken - previous[0]) / 1000
                # A counter that went down was reset (a worker restarted): no rate for it.
                sent = values[3] - previous[1]
                received = values[4] - previous[2]
                result["sent_per_second"].append(
                    round(sent / seconds, 3) if sent >= 0 else None
                )
                result["received_per_second"].append(
                    round(received / seconds, 3) if received >= 0 else None
                )
            previous = (taken, values[3], values[4])
        return result
