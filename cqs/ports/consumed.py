"""The durable store of consumed messages, in queue language: `ConsumedMessageStore`.

A queue whose `cqs.ConsumedRetentionSeconds` is above 0 keeps a copy of every message a
DeleteMessage consumes, for that long, so that `CqsExtensions.ReplayMessages` can send the
messages of a time range again and Spark can read them. No buckets, shards or driver types
appear here; `cqs/cassandra_store/consumed.py` implements it. Imports only `cqs.model`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from cqs.extension_model import ConsumedMessage, ConsumedRange
from cqs.model import Queue


class ConsumedMessageStore(Protocol):
    """Consumed messages by the time they were consumed, each kept for its own window."""

    async def keep(
        self, queue: Queue, consumed: Sequence[ConsumedMessage], keep_seconds: int
    ) -> None:
        """Write the copies durably; they expire `keep_seconds` after being written.
        Keeping a message twice (two deletes racing) keeps one copy per delete time."""

    async def read(
        self, queue: Queue, span: ConsumedRange, after: str | None, limit: int
    ) -> tuple[list[ConsumedMessage], str | None]:
        """Up to `limit` messages consumed within `span`, resuming after the position
        `after` (None: from the start), and the position after them (None: nothing
        follows). Within a FIFO message group, in the order they were consumed. A position
        the store did not give out for this span raises ValueError."""
