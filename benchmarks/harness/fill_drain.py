"""The per-message check of benchmarks/cache_fill.py: numbered bodies, one ledger for the
deliveries during the fill and after it, and the drain of the big queue through SQS.

Owns the body of message n (`<run>-<n>-<padding>`, 100 bytes) and its inverse, `Checked`
(a CompactLedger of every written message plus the count of deliveries whose body this run
did not write), `drain` (asyncio tasks on one aiohttp session, each a ReceiveMessage of 10
followed by a DeleteMessageBatch of what it got, until every written id was delivered and
the queue stayed quiet a little while, or until its time is up) and `delete_held` (the
messages the fill probe kept in flight, deleted by their receipt handles), and what makes
a run not a result (`problems`, `rate_text`). Imports the
compact ledger and benchmarks/harness/sqs_wire.py; never cqs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.harness.compact_ledger import CompactLedger, CompactVerdict, id_bytes
from benchmarks.harness.sqs_wire import (
    CALL_ERRORS,
    PAUSE_AFTER_ERROR_SECONDS,
    SqsJsonClient,
    client_session,
    error_code,
)

BODY_BYTES = 100
BATCH = 10
# After the last written id was delivered, the drain goes on this long: a repeat delivery
# (an early duplicate) would show up here.
QUIET_SECONDS = 5.0


def body_of(run_id: str, n: int) -> str:
    head = f"{run_id}-{n}-"
    return head + "x" * max(0, BODY_BYTES - len(head))


@dataclass
class Checked:
    """Every written message by number, and what came back."""

    run_id: str
    ledger: CompactLedger
    unknown_bodies: int = 0  # deliveries whose body this run did not write
    errors: dict[str, int] = field(default_factory=dict)

    def number_of(self, body: str) -> int:
        """The number a body was written with, or -1 for a body this run did not write."""
        parts = body.split("-", 2)
        if len(parts) != 3 or parts[0] != self.run_id or not parts[1].isdigit():
            return -1
        n = int(parts[1])
        return n if n < self.ledger.capacity and body == body_of(self.run_id, n) else -1

    def record_delivery(self, message: Mapping[str, Any], requested: float,
                        answered: float) -> int:
        """One delivered message (times from time.time()); its number, or -1."""
        n = self.number_of(str(message["Body"]))
        if n < 0:
            self.unknown_bodies += 1
        else:
            self.ledger.record_delivery(n, id_bytes(str(message["MessageId"])), requested,
                                        answered)
        return n

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1

    def verdict(self) -> CompactVerdict:
        return self.ledger.verdict()


@dataclass
class Drain:
    seconds: float = 0.0
    finished: bool = False  # every written id delivered, then QUIET_SECONDS without one
    deliveries: int = 0
    deleted: int = 0
    all_delivered_seconds: float = 0.0  # when the last written id was first delivered
    progress: list[tuple[float, int]] = field(default_factory=list)  # (s, ids delivered)


async def drain(endpoint: str, queue_url: str, checked: Checked, tasks: int, timeout: float,
                visibility_seconds: int) -> Drain:
    result = Drain()
    ledger = checked.ledger
    started = time.perf_counter()
    stop = asyncio.Event()
    async with client_session() as session:
        client = SqsJsonClient(session, endpoint)

        async def poll() -> None:
            while not stop.is_set():
                requested = time.time()
                try:
                    messages = await client.receive_message(queue_url, BATCH, 1,
                                                            visibility_seconds)
                except CALL_ERRORS as exc:
                    checked.error(f"ReceiveMessage {error_code(exc)}")
                    await asyncio.sleep(PAUSE_AFTER_ERROR_SECONDS)
                    continue
                answered = time.time()
                numbers = [checked.record_delivery(m, requested, answered) for m in messages]
                result.deliveries += len(messages)
                if messages:
                    await delete(client, checked, queue_url,
                                 [str(m["ReceiptHandle"]) for m in messages], numbers)

        async def watch() -> None:
            quiet_since: float | None = None
            next_report = started + 15
            while (now := time.perf_counter()) - started < timeout:
                if ledger.delivered_total >= ledger.acknowledged_total:
                    if quiet_since is None:
                        quiet_since = now
                        result.all_delivered_seconds = now - started
                    if now - quiet_since >= QUIET_SECONDS:
                        result.finished = True
                        break
                if now >= next_report:
                    next_report += 15
                    result.progress.append((now - started, ledger.delivered_total))
                    print(f"  drain: {ledger.delivered_total:,} of "
                          f"{ledger.acknowledged_total:,} ids delivered in "
                          f"{now - started:.0f} s", flush=True)
                await asyncio.sleep(0.2)
            stop.set()

        await asyncio.gather(watch(), *(poll() for _ in range(tasks)))
    result.seconds = time.perf_counter() - started
    result.deleted = ledger.deleted_total
    return result


async def delete(client: SqsJsonClient, checked: Checked, queue_url: str,
                 handles: Sequence[str], numbers: Sequence[int]) -> None:
    """DeleteMessageBatch of these handles, each outcome recorded for its number."""
    try:
        outcome = await client.delete_message_batch(queue_url, handles)
    except CALL_ERRORS as exc:
        checked.error(f"DeleteMessageBatch {error_code(exc)}")
        answered = time.time()
        for n in numbers:
            if n >= 0:
                checked.ledger.record_delete(n, answered, False)
        return
    answered = time.time()
    for position, n in enumerate(numbers):
        error = outcome.get(position, "NoEntryInAnswer")
        if error is not None:
            checked.error(f"DeleteMessageBatch entry {error}")
        if n >= 0:
            checked.ledger.record_delete(n, answered, error is None)


async def delete_held(endpoint: str, queue_url: str, checked: Checked,
                      held: Sequence[tuple[int, str]]) -> None:
    """Delete the messages the fill probe received and kept, by their receipt handles."""
    async with client_session() as session:
        client = SqsJsonClient(session, endpoint)
        for start in range(0, len(held), BATCH):
            chunk = held[start:start + BATCH]
            await delete(client, checked, queue_url, [h for _, h in chunk],
                         [n for n, _ in chunk])


def problems(verdict: CompactVerdict, checked: Checked, drained: Drain) -> list[str]:
    """What makes this run's rates not a result (empty when every message id checked out)."""
    found = []
    if not drained.finished:
        found.append("the drain stopped at its time limit, so not every id was checked")
    if verdict.lost:  # before the drain's end, an undelivered id may still be in the queue
        found.append(f"{verdict.lost:,} {'lost' if drained.finished else 'never delivered'}")
    if verdict.early_duplicates:
        found.append(f"{verdict.early_duplicates:,} early duplicates")
    if verdict.deliveries_after_delete:
        found.append(f"{verdict.deliveries_after_delete:,} deliveries after delete")
    if verdict.wrong_ids or checked.unknown_bodies:
        found.append(f"{verdict.wrong_ids + checked.unknown_bodies:,} wrong or unknown ids")
    return found


def rate_text(rate: float, unit: str, failed: list[str]) -> str:
    if not failed:
        return f"{rate:,.0f} {unit}"
    return f"~~{rate:,.0f} {unit}~~ **not a result: {'; '.join(failed)}**"
