"""The durable store of consumed messages, in queue language: `ConsumedMessageStore`.

A queue whose `cqs.ConsumedRetentionSeconds` is above 0 keeps a copy of every message a
DeleteMessage consumes, for that long, so that `CqsExtensions.ReplayMessages` can send the
messages of a time range again and Spark can read them. A replay's progress and the ids of
the copies it sent are kept here too, so that an interrupted replay resumes without sending
a message twice. No buckets, shards or driver types
appear here; `cqs/cassandra_store/consumed.py` implements it. Imports only `cqs.domain.model`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from cqs.domain.extension_model import ConsumedMessage, ConsumedRange, Replay
from cqs.domain.model import Queue


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

    # --- replays: progress and the copy ledger ----------------------------------------------

    async def replay(self, queue: Queue, replay_id: str) -> Replay | None:
        """The replay of that id on the queue, or None (never started, or expired)."""

    async def save_replay(self, queue: Queue, replay: Replay, keep_seconds: int) -> None:
        """Write the whole replay record durably; it expires `keep_seconds` after."""

    async def replay_copies(
        self, queue: Queue, replay_id: str, source_ids: Sequence[str]
    ) -> dict[str, str]:
        """The copy message id recorded for each of the source message ids that has one."""

    async def record_replay_copies(
        self, queue: Queue, replay_id: str, copies: Mapping[str, str], keep_seconds: int
    ) -> None:
        """Record source message id -> copy message id, before the copies are stored."""
