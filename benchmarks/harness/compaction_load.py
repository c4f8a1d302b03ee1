"""The simulated queue of benchmarks/compaction_strategies.py, and the check of every message.

Owns the steady load (sends paced to a rate; each message deleted soon after, or late, or
not within the run, by a seeded draw) on a real CassandraMessageStore, and the ledger of
every id: when its write was acknowledged, when its delete began and was acknowledged. A
message is read back by id just before its delete (lost: acknowledged, not read back with
its body); every scan of the queue (each sample's fill and the final one) is checked
against the ledger: lost (acknowledged before the scan began, not deleted before it ended,
not scanned), resurrected (delete acknowledged before the scan began, still scanned) and
read twice (an id on two rows). Imports the store and the model.
"""

from __future__ import annotations

import asyncio
import heapq
import random
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from cqs.cassandra_store import CassandraMessageStore
from cqs.domain.model import Message, Queue

TICK_SECONDS = 0.05


@dataclass(frozen=True)
class Consumption:
    """When messages are deleted, in real seconds after their send: most soon (uniform up
    to `soon`), `late_fraction` late (uniform between `late_min` and `late_max`) and
    `never_fraction` not within the run (the backlog a run ends with)."""

    soon: float
    late_min: float
    late_max: float
    late_fraction: float
    never_fraction: float

    def delay(self, rng: random.Random) -> float | None:
        draw = rng.random()
        if draw < self.never_fraction:
            return None
        if draw < self.never_fraction + self.late_fraction:
            return rng.uniform(self.late_min, self.late_max)
        return rng.uniform(0.0, self.soon)


@dataclass
class Verdict:
    lost: set[str] = field(default_factory=set)
    resurrected: set[str] = field(default_factory=set)
    read_twice: set[str] = field(default_factory=set)
    errors: int = 0  # writes, reads or deletes that raised

    @property
    def clean(self) -> bool:
        return not (self.lost or self.resurrected or self.read_twice or self.errors)

    def problems(self) -> str:
        named = [("lost", len(self.lost)), ("resurrected", len(self.resurrected)),
                 ("read twice", len(self.read_twice)), ("errors", self.errors)]
        return ", ".join(f"{count} {name}" for name, count in named if count) or "none"


class Ledger:
    """Every id's acknowledged write and delete (monotonic seconds), and the verdict."""

    def __init__(self, body_bytes: int) -> None:
        self.body_bytes = body_bytes
        self.written: dict[str, float] = {}
        self.delete_began: dict[str, float] = {}
        self.deleted: dict[str, float] = {}
        self.verdict = Verdict()

    def body_of(self, message_id: str) -> str:
        """A message's body starts with its own id, so a read-back shows whose body it got."""
        return f"{message_id}-".ljust(self.body_bytes, "x")

    def new_message(self) -> Message:
        sent_ms = int(time.time() * 1000)
        message_id = str(uuid.uuid1())
        return Message(message_id=message_id, body=self.body_of(message_id),
                       md5_of_body="0" * 32, sent_timestamp_ms=sent_ms,
                       visible_at_ms=sent_ms, sender_id="bench")

    @property
    def live(self) -> int:
        return len(self.written) - len(self.deleted)

    def check_scan(self, scanned: Counter[str], began: float, ended: float) -> None:
        """Judge one scan of the whole queue that ran from `began` to `ended`."""
        for message_id, acknowledged in self.written.items():
            delete_began = self.delete_began.get(message_id)
            expected = acknowledged < began and (delete_began is None or delete_began > ended)
            if expected and message_id not in scanned:
                self.verdict.lost.add(message_id)
        for message_id, count in scanned.items():
            if self.deleted.get(message_id, ended) < began:
                self.verdict.resurrected.add(message_id)
            if count > 1:
                self.verdict.read_twice.add(message_id)


async def scan_ids(store: CassandraMessageStore, queue: Queue, page_size: int) -> Counter[str]:
    found: Counter[str] = Counter()
    async for page in store.scan(queue, page_size):
        found.update(message.message_id for message in page)
    return found


class SimulatedQueue:
    """Sends at `rate` a real second and deletes on `consumption`'s schedule until
    `stop()`; `sent` counts acknowledged writes (for CPU per message)."""

    def __init__(self, store: CassandraMessageStore, queue: Queue, ledger: Ledger,
                 rate: float, consumption: Consumption, seed: int) -> None:
        self._store = store
        self._queue = queue
        self._ledger = ledger
        self._rate = rate
        self._consumption = consumption
        self._rng = random.Random(seed)
        self._due: list[tuple[float, str]] = []  # (real time to delete, id)
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        self.sent = 0
        self.deleted = 0

    def stop(self) -> None:
        self._stopping.set()

    async def run(self) -> None:
        started = time.monotonic()
        offered = 0
        while not self._stopping.is_set():
            now = time.monotonic()
            owed = int(self._rate * (now - started)) - offered
            for _ in range(max(0, owed)):
                self._spawn(self._send(self._ledger.new_message()))
            offered += max(0, owed)
            while self._due and self._due[0][0] <= now:
                self._spawn(self._consume(heapq.heappop(self._due)[1]))
            try:
                await asyncio.wait_for(self._stopping.wait(), TICK_SECONDS)
            except TimeoutError:
                pass
        if self._tasks:
            await asyncio.gather(*self._tasks)

    def _spawn(self, work: object) -> None:
        task = asyncio.ensure_future(work)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, message: Message) -> None:
        try:
            await self._store.put(self._queue, [message])
        except Exception:  # counted; the run goes on and is not a result
            self._ledger.verdict.errors += 1
            return
        acknowledged = time.monotonic()
        self._ledger.written[message.message_id] = acknowledged
        self.sent += 1
        delay = self._consumption.delay(self._rng)
        if delay is not None:
            heapq.heappush(self._due, (acknowledged + delay, message.message_id))

    async def _consume(self, message_id: str) -> None:
        """Read the message back (its consumer got it), then delete it."""
        ledger = self._ledger
        try:
            found = await self._store.get(self._queue, message_id)
        except Exception:  # unverified: an error, not a guess
            ledger.verdict.errors += 1
            found = None
        else:
            if found is None or found.body != ledger.body_of(message_id):
                ledger.verdict.lost.add(message_id)
        ledger.delete_began[message_id] = time.monotonic()
        try:
            await self._store.delete(self._queue, message_id)
        except Exception:
            ledger.verdict.errors += 1
            return
        ledger.deleted[message_id] = time.monotonic()
        self.deleted += 1
