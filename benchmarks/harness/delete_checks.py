"""Every message of benchmarks/cassandra_deletes.py, checked: the timed phases' loops and
the untimed checks between and after them.

Owns `run_phase` (concurrent loops over a list, with each call's outcome and duration),
`read_back` (every acknowledged write read back by id, before its delete), `final_check`
(every acknowledged delete read again, and the queue scanned, after the last interval) and
`Tally` (one interval's counts: written, lost, resurrected, read twice, errors). Imports
the layouts' protocol and the model; the benchmark script imports this module.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from benchmarks.harness.delete_layouts import Layout
from cqs.domain.model import Message

T = TypeVar("T")


@dataclass
class Tally:
    """One interval's messages, each checked."""

    written: int = 0  # writes acknowledged
    lost: int = 0  # acknowledged, not read back with its body before its delete
    resurrected: int = 0  # delete acknowledged, still readable or scanned at the end
    read_twice: int = 0  # ids on more than one row of the final scan
    errors: int = 0  # writes or deletes that raised, check reads that failed every attempt
    deleted_ids: list[str] = field(default_factory=list)  # deletes acknowledged

    def add(self, other: Tally) -> None:
        self.written += other.written
        self.lost += other.lost
        self.resurrected += other.resurrected
        self.read_twice += other.read_twice
        self.errors += other.errors

    @property
    def clean(self) -> bool:
        return not (self.lost or self.resurrected or self.read_twice or self.errors)

    def problems(self) -> str:
        named = [("lost", self.lost), ("resurrected", self.resurrected),
                 ("read twice", self.read_twice), ("errors", self.errors)]
        return ", ".join(f"{count} {name}" for name, count in named if count)


@dataclass
class Phase:
    """What concurrent loops over a list did: which items went through, how long each
    call took, how many raised, and the phase's wall time."""

    done: list[Message] = field(default_factory=list)
    call_ms: list[float] = field(default_factory=list)
    errors: int = 0
    seconds: float = 0.0


async def run_phase(items: Sequence[Message], action: Callable[[Message], Awaitable[None]],
                    workers: int) -> Phase:
    phase = Phase()
    pending = iter(items)  # shared: each loop takes the next item

    async def loop() -> None:
        for item in pending:
            began = time.perf_counter()
            try:
                await action(item)
            except Exception:  # counted and reported; the run goes on
                phase.errors += 1
                continue
            phase.call_ms.append((time.perf_counter() - began) * 1000)
            phase.done.append(item)

    started = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(workers)))
    phase.seconds = time.perf_counter() - started
    return phase


async def bounded(calls: Iterable[Awaitable[T]], workers: int) -> list[T]:
    limit = asyncio.Semaphore(workers)

    async def one(call: Awaitable[T]) -> T:
        async with limit:
            return await call

    return await asyncio.gather(*(one(call) for call in calls))


class Unread:
    """A check read that failed every attempt: the id is not verified (counted as an error)."""


UNREAD = Unread()
READ_ATTEMPTS = 5


async def read_body(layout: Layout, message_id: str) -> str | Unread | None:
    """The id's body (None: no row), retried: a read timing out is no verdict on the id."""
    for attempt in range(READ_ATTEMPTS):
        try:
            return await layout.body(message_id)
        except Exception:  # a timeout under load; tried again, then reported
            await asyncio.sleep(0.5 * (attempt + 1))
    return UNREAD


async def read_back(layout: Layout, written: Sequence[Message], workers: int
                    ) -> tuple[int, int]:
    """Of the acknowledged writes, how many do not read back with the body they were
    written with (lost), and how many could not be read at all (unverified)."""
    bodies = await bounded((read_body(layout, m.message_id) for m in written), workers)
    unread = sum(body is UNREAD for body in bodies)
    lost = sum(body is not UNREAD and body != message.body
               for body, message in zip(bodies, written, strict=True))
    return lost, unread


async def scan_ids(layout: Layout) -> Counter[str] | None:
    """Every id the queue's rows hold, counted; None when the scan failed every attempt (on
    regular tables on 1.2 a scan over many range tombstones can time out)."""
    for attempt in range(READ_ATTEMPTS):
        try:
            return Counter(await layout.ids())
        except Exception as exc:  # tried again, then reported
            print(f"final scan failed ({type(exc).__name__}), attempt {attempt + 1}",
                  flush=True)
            await asyncio.sleep(2.0 * (attempt + 1))
    return None


async def final_check(layout: Layout, tallies: Sequence[Tally], workers: int,
                      by_id: bool) -> int:
    """After the last interval: the whole queue scanned (every row of every bucket; a
    deleted id found counts as resurrected, an id found twice as read twice, against its
    interval) and, with `by_id`, each acknowledged delete read again by id as well (slow
    on regular tables on 1.2, where each read steps over the partition's range
    tombstones). Returns the rows the scan found, -1 when it failed (then every deleted id
    is unverified and counts as an error)."""
    interval_of = {mid: n for n, tally in enumerate(tallies) for mid in tally.deleted_ids}
    scanned = await scan_ids(layout)
    if scanned is None:  # no verdict on any deleted id: each counts as an error
        for tally in tallies:
            tally.errors += len(tally.deleted_ids)
        return -1
    resurrected = {mid for mid in scanned if mid in interval_of}
    if by_id:
        ids = list(interval_of)
        bodies = await bounded((read_body(layout, mid) for mid in ids), workers)
        for mid, body in zip(ids, bodies, strict=True):
            if body is UNREAD:
                tallies[interval_of[mid]].errors += 1
            elif body is not None:
                resurrected.add(mid)
    for mid in resurrected:
        tallies[interval_of[mid]].resurrected += 1
    for mid, count in scanned.items():
        if count > 1 and mid in interval_of:
            tallies[interval_of[mid]].read_twice += 1
    return sum(scanned.values())
