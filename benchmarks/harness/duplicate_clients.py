"""The client processes of benchmarks/duplicate_rate.py (spawned: module-level functions,
picklable arguments), and the message numbering they share with the parent.

Owns `Plan` (endpoint, queues, run id, how many messages, the call parameters), the body
of message n (`<run>-<n>-<padding>`) and its inverse, the `Outbox` that ships compact
records to the parent every FLUSH_SECONDS (acknowledged sends, deliveries with their
message id in 16 bytes, deletes, error counts), the producer (asyncio tasks, each a
SendMessageBatch of 10 at a time, pausing while the parent's `paused` event is set) and the
consumer (long polls, each followed by a DeleteMessageBatch of what it got; every body is
checked against the one its number was sent with). Imports aiohttp through
benchmarks/harness/sqs_wire.py and the compact ledger's id encoding; never cqs.
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing.queues
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.harness.compact_ledger import id_bytes
from benchmarks.harness.sqs_wire import (
    CALL_ERRORS,
    PAUSE_AFTER_ERROR_SECONDS,
    SqsJsonClient,
    client_session,
    error_code,
    run_client,
)

FLUSH_SECONDS = 0.5
BATCH = 10
Records = list[tuple[Any, ...]]

@dataclass(frozen=True)
class Plan:
    endpoint: str
    queue_urls: tuple[str, ...]
    run_id: str
    messages: int
    body_bytes: int
    wait_seconds: int
    visibility_seconds: int


def body_of(plan: Plan, n: int) -> str:
    head = f"{plan.run_id}-{n}-"
    return head + "x" * max(0, plan.body_bytes - len(head))


def number_of(plan: Plan, body: str) -> int:
    """The message number a body was sent with, or -1 for a body this run did not send."""
    parts = body.split("-", 2)
    if len(parts) != 3 or parts[0] != plan.run_id or not parts[1].isdigit():
        return -1
    n = int(parts[1])
    return n if n < plan.messages and body == body_of(plan, n) else -1


# --- client processes (spawned) ------------------------------------------------------------


class Outbox:
    """Records bound for the parent, shipped every FLUSH_SECONDS as one message."""

    def __init__(self, channel: multiprocessing.queues.Queue[Any]) -> None:
        self.channel = channel
        self.acks: Records = []  # (n, id bytes, requested)
        self.attempts: list[int] = []
        self.deliveries: Records = []  # (n, id bytes, requested, answered)
        self.deletes: Records = []  # (n, answered, ok)
        self.errors: dict[str, int] = {}

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1

    def ship(self) -> None:
        self.channel.put(("records", self.attempts, self.acks, self.deliveries, self.deletes,
                          self.errors))
        self.acks, self.attempts, self.deliveries, self.deletes, self.errors = \
            [], [], [], [], {}

    async def ship_until(self, done: asyncio.Event) -> None:
        while not done.is_set():
            await asyncio.sleep(FLUSH_SECONDS)
            self.ship()


def producer_process(plan: Plan, tasks: int, channel: Any, paused: Any, stop: Any) -> None:
    run_client(produce(plan, tasks, channel, paused, stop))


async def produce(plan: Plan, tasks: int, channel: Any, paused: Any, stop: Any) -> None:
    outbox, done = Outbox(channel), asyncio.Event()
    numbers = iter(range(plan.messages))
    async with client_session() as session:
        client = SqsJsonClient(session, plan.endpoint)

        async def send(task: int) -> None:
            queue_url = plan.queue_urls[task % len(plan.queue_urls)]
            while not stop.is_set():
                if paused.is_set():
                    await asyncio.sleep(0.05)
                    continue
                chunk = list(itertools.islice(numbers, BATCH))
                if not chunk:
                    return
                outbox.attempts.extend(chunk)
                bodies = [body_of(plan, n) for n in chunk]
                requested = time.time()
                try:
                    stored, refused = await client.send_message_batch(queue_url, bodies)
                except CALL_ERRORS as exc:
                    outbox.error(f"SendMessageBatch {error_code(exc)}")
                    await asyncio.sleep(PAUSE_AFTER_ERROR_SECONDS)
                    continue
                for n, body in zip(chunk, bodies, strict=True):
                    if body in stored:
                        outbox.acks.append((n, id_bytes(stored[body]), requested))
                for code in refused.values():
                    outbox.error(f"SendMessageBatch entry {code}")

        shipper = asyncio.create_task(outbox.ship_until(done))
        await asyncio.gather(*(send(task) for task in range(tasks)))
        done.set()
        await shipper
    outbox.ship()
    channel.put(("producer-done",))


def consumer_process(plan: Plan, polls: int, index: int, channel: Any, stop: Any) -> None:
    run_client(consume(plan, polls, index, channel, stop))


async def consume(plan: Plan, polls: int, index: int, channel: Any, stop: Any) -> None:
    outbox, done = Outbox(channel), asyncio.Event()
    async with client_session() as session:
        client = SqsJsonClient(session, plan.endpoint)

        async def poll(task: int) -> None:
            queue_url = plan.queue_urls[(index + task) % len(plan.queue_urls)]
            while not stop.is_set():
                requested = time.time()
                try:
                    messages = await client.receive_message(
                        queue_url, BATCH, plan.wait_seconds, plan.visibility_seconds)
                except CALL_ERRORS as exc:
                    outbox.error(f"ReceiveMessage {error_code(exc)}")
                    await asyncio.sleep(PAUSE_AFTER_ERROR_SECONDS)
                    continue
                answered = time.time()
                numbers = []
                for message in messages:
                    body = str(message["Body"])
                    n = number_of(plan, body)
                    if n < 0:
                        outbox.error("changed or foreign body")
                    else:
                        outbox.deliveries.append(
                            (n, id_bytes(message["MessageId"]), requested, answered))
                    numbers.append(n)
                if messages:
                    await delete(client, outbox, queue_url, messages, numbers)

        shipper = asyncio.create_task(outbox.ship_until(done))
        await asyncio.gather(*(poll(task) for task in range(polls)))
        done.set()
        await shipper
    outbox.ship()
    channel.put(("consumer-done", index))


async def delete(client: SqsJsonClient, outbox: Outbox, queue_url: str,
                 messages: Sequence[dict[str, Any]], numbers: Sequence[int]) -> None:
    try:
        outcome = await client.delete_message_batch(
            queue_url, [m["ReceiptHandle"] for m in messages])
    except CALL_ERRORS as exc:
        outbox.error(f"DeleteMessageBatch {error_code(exc)}")
        answered = time.time()
        outbox.deletes.extend((n, answered, False) for n in numbers if n >= 0)
        return
    answered = time.time()
    for position, n in enumerate(numbers):
        error = outcome.get(position, "NoEntryInAnswer")
        if error is not None:
            outbox.error(f"DeleteMessageBatch entry {error}")
        if n >= 0:
            outbox.deletes.append((n, answered, error is None))
