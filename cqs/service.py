"""QueueService: one async method per SQS action, over the storage ports.

Owns SQS semantics (validation, defaults, visibility, delays, retention, receipt handles)
and the cache-fill / Return-From-Cassandra decisions. Takes and returns queue names and
model values, never URLs or wire formats. Imports model, errors, ports and pure helpers;
never an adapter, aiohttp, redis or cassandra.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from cqs.model import (
    BatchResult,
    MessageAttributeValue,
    ReceivedMessage,
    ReceiveRequest,
    SendRequest,
    SendResult,
)


class QueueService:
    # --- queues ---------------------------------------------------------------------------
    async def create_queue(
        self, name: str, attributes: Mapping[str, str], tags: Mapping[str, str]
    ) -> None:
        raise NotImplementedError

    async def get_queue_url(self, name: str) -> None:
        """Raises QueueDoesNotExist; the API layer builds the URL from the name."""
        raise NotImplementedError

    async def list_queues(
        self, prefix: str | None, max_results: int | None, next_token: str | None
    ) -> tuple[list[str], str | None]:
        raise NotImplementedError

    async def delete_queue(self, name: str) -> None:
        raise NotImplementedError

    async def get_queue_attributes(self, name: str, names: Sequence[str]) -> dict[str, str]:
        raise NotImplementedError

    async def set_queue_attributes(self, name: str, attributes: Mapping[str, str]) -> None:
        raise NotImplementedError

    async def purge_queue(self, name: str) -> None:
        raise NotImplementedError

    async def tag_queue(self, name: str, tags: Mapping[str, str]) -> None:
        raise NotImplementedError

    async def untag_queue(self, name: str, tag_keys: Sequence[str]) -> None:
        raise NotImplementedError

    async def list_queue_tags(self, name: str) -> dict[str, str]:
        raise NotImplementedError

    # --- messages -------------------------------------------------------------------------
    async def send_message(self, name: str, request: SendRequest) -> SendResult:
        raise NotImplementedError

    async def send_message_batch(
        self, name: str, entries: Sequence[tuple[str, SendRequest]]
    ) -> BatchResult[SendResult]:
        raise NotImplementedError

    async def receive_message(self, name: str, request: ReceiveRequest) -> list[ReceivedMessage]:
        raise NotImplementedError

    async def delete_message(self, name: str, receipt_handle: str) -> None:
        raise NotImplementedError

    async def delete_message_batch(
        self, name: str, entries: Sequence[tuple[str, str]]
    ) -> BatchResult[None]:
        """entries: (entry id, receipt handle)."""
        raise NotImplementedError

    async def change_message_visibility(
        self, name: str, receipt_handle: str, visibility_timeout: int
    ) -> None:
        raise NotImplementedError

    async def change_message_visibility_batch(
        self, name: str, entries: Sequence[tuple[str, str, int]]
    ) -> BatchResult[None]:
        """entries: (entry id, receipt handle, visibility timeout)."""
        raise NotImplementedError


__all__ = ["QueueService", "MessageAttributeValue"]
