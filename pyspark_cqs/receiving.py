"""Receiving a bounded set of messages on the driver, with several ReceiveMessage calls in flight.

Owns the fill loop both readers share: keep up to `parallel_receivers` receives of up to 10
messages in flight until `limit` messages are held or a receive comes back empty (after its
long-poll wait), the rows and receipt handles that result, and the partitions that carry
the rows to the executors. Messages are received once on the driver and handed to
partitions as rows: receiving inside executors would receive again on every action and on
every task retry.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.datasource import InputPartition

from pyspark_cqs.options import MAX_RECEIVE_PER_CALL
from pyspark_cqs.queue import SqsQueue
from pyspark_cqs.rows import Row, message_row

log = logging.getLogger(__name__)


@dataclass
class Received:
    """Messages held invisible by this reader: rows in arrival order and their handles."""

    rows: list[Row] = field(default_factory=list)
    # message id -> latest receipt handle (a message received twice keeps one row).
    handles: dict[str, str] = field(default_factory=dict)

    def add(self, message: dict[str, Any]) -> None:
        message_id = str(message["MessageId"])
        if message_id not in self.handles:
            self.rows.append(message_row(message))
        self.handles[message_id] = str(message["ReceiptHandle"])

    def __len__(self) -> int:
        return len(self.rows)


class MessagesPartition(InputPartition):
    """Received rows, pickled to the executor that reads this partition."""

    def __init__(self, rows: list[Row]) -> None:
        super().__init__(len(rows))
        self.rows = rows


def split_rows(rows: Sequence[Row], partitions: int) -> list[MessagesPartition]:
    """Contiguous slices of about equal size, in arrival order."""
    if not rows or partitions <= 0:
        return []
    size = -(-len(rows) // partitions)
    return [MessagesPartition(list(rows[i : i + size])) for i in range(0, len(rows), size)]


def receive_up_to(
    queue: SqsQueue,
    limit: int,
    *,
    wait_seconds: int,
    visibility_timeout: int,
    parallel_receivers: int,
) -> Received:
    """Receive until `limit` messages are held or a receive comes back empty."""
    received = Received()
    if limit <= 0:
        return received
    lock = threading.Lock()
    state = {"reserved": 0, "done": False}
    failures: list[BaseException] = []
    queue.url  # resolve the URL once, before the threads race to do it  # noqa: B018

    def receiver() -> None:
        while True:
            with lock:
                room = limit - len(received) - state["reserved"]
                if state["done"] or room <= 0 or failures:
                    return
                count = min(MAX_RECEIVE_PER_CALL, room)
                state["reserved"] += count
            try:
                messages = queue.receive(count, wait_seconds, visibility_timeout)
            except BaseException as exc:
                with lock:
                    failures.append(exc)
                    state["reserved"] -= count
                return
            with lock:
                state["reserved"] -= count
                for message in messages:
                    received.add(message)
                if not messages:
                    state["done"] = True

    threads = max(1, min(parallel_receivers, -(-limit // MAX_RECEIVE_PER_CALL)))
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="cqs-receive") as pool:
        for _ in range(threads):
            pool.submit(receiver)
    if failures:
        # Nothing was handed to Spark: make what was received visible again, then fail.
        release(queue, received)
        raise failures[0]
    return received


def release(queue: SqsQueue, received: Received, parallelism: int = 1) -> None:
    """Best effort: make held messages visible at once (else they return after their timeout)."""
    handles = list(received.handles.values())
    if not handles:
        return
    try:
        failed = queue.change_visibility(handles, 0, parallelism)
    except Exception:
        log.warning("could not release %d messages of %s; they return after their visibility "
                    "timeout", len(handles), queue.connection.queue, exc_info=True)
        return
    if failed:
        log.info("%d of %d messages of %s were not released (%s); they return after their "
                 "visibility timeout", len(failed), len(handles), queue.connection.queue,
                 failed[0].code)
