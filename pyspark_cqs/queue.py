"""One queue reached over the SQS API with boto3: the calls the data sources make.

Owns the boto3 client and the queue URL. Both are created on first use, in the process
that uses them: readers and writers are pickled from the driver to the planner and to the
executors, and a boto3 client does not survive pickling (nor should it be shared across
processes). Batch calls are split into the 10-entry requests SQS accepts; per-entry
failures come back to the caller. boto3 is imported lazily, so an executor that only
deserializes received rows does not need it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pyspark_cqs.options import MAX_BATCH_ENTRIES, Connection

log = logging.getLogger(__name__)

ALL = ["All"]


@dataclass(frozen=True)
class EntryFailure:
    """One entry of a batch call that SQS refused."""

    index: int
    code: str
    message: str
    sender_fault: bool


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class SqsQueue:
    """A queue and the boto3 client that reaches it, both created lazily."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._client: Any = None
        self._extensions: Any = None
        self._url: str | None = connection.queue_url
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # The client and the lock stay behind; the other side makes its own.
        return {"connection": self.connection, "url": self._url}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.connection = state["connection"]
        self._url = state["url"]
        self._client = None
        self._extensions = None
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        return self._made_once("_client", self._make_client)

    def _made_once(self, attribute: str, make: Callable[[], Any]) -> Any:
        """The object kept in `attribute`, made by `make` on first use; the lock keeps
        threads racing for it (parallel batch calls) from making two."""
        with self._lock:
            if getattr(self, attribute) is None:
                setattr(self, attribute, make())
            return getattr(self, attribute)

    def _session(self) -> Any:
        """A boto3 session with the connection's credentials and region."""
        import boto3

        c = self.connection
        return boto3.session.Session(
            aws_access_key_id=c.access_key_id,
            aws_secret_access_key=c.secret_access_key,
            aws_session_token=c.session_token,
            region_name=c.region,
        )

    def _make_client(self) -> Any:
        from botocore.config import Config

        c = self.connection
        return self._session().client(
            "sqs",
            endpoint_url=c.endpoint,
            config=Config(
                retries={"mode": "standard", "total_max_attempts": c.max_attempts},
                # Long polls last up to 20 s; the read timeout must outlast them.
                read_timeout=max(c.read_timeout_seconds, 25),
                max_pool_connections=64,
            ),
        )

    @property
    def extensions(self) -> Any:
        """cqs's client for its actions beyond SQS (`cqs.client`), on the same
        endpoint and credentials as the boto3 client."""
        return self._made_once("_extensions", self._make_extensions)

    def _make_extensions(self) -> Any:
        from cqs.client import ExtensionClient

        c = self.connection
        credentials = self._session().get_credentials()
        if credentials is None:
            raise RuntimeError(f"no AWS credentials to sign requests to {c.queue} with")
        frozen = credentials.get_frozen_credentials()
        return ExtensionClient(
            c.endpoint or f"https://sqs.{c.region}.amazonaws.com", c.region,
            frozen.access_key, frozen.secret_key, session_token=frozen.token,
            timeout_seconds=max(c.read_timeout_seconds, 25),
        )

    @property
    def url(self) -> str:
        if self._url is None:
            name = self.connection.queue_name
            assert name is not None  # Connection.parse guarantees a name or a URL
            self._url = str(self.client.get_queue_url(QueueName=name)["QueueUrl"])
        return self._url

    # --- reading --------------------------------------------------------------------------

    def receive(
        self, count: int, wait_seconds: int, visibility_timeout: int
    ) -> list[dict[str, Any]]:
        """Up to `count` (1..10) messages with every system and message attribute."""
        answer = self.client.receive_message(
            QueueUrl=self.url,
            MaxNumberOfMessages=count,
            WaitTimeSeconds=wait_seconds,
            VisibilityTimeout=visibility_timeout,
            # Older endpoints know only AttributeNames, newer ones prefer the other name.
            AttributeNames=ALL,
            MessageSystemAttributeNames=ALL,
            MessageAttributeNames=ALL,
        )
        return list(answer.get("Messages", []))

    def peek(self, count: int, next_token: str | None) -> tuple[list[dict[str, Any]], str | None]:
        """A page of up to `count` (1..100) visible messages, looked at without being
        received (cqs's PeekMessages), and the token of the next page."""
        answer = self.extensions.peek_messages(self.url, count, next_token)
        return list(answer.get("Messages", [])), answer.get("NextToken")

    def peek_consumed(
        self, start_time: float, end_time: float, count: int, next_token: str | None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """A page of the messages consumed in [start_time, end_time) (cqs's
        PeekConsumedMessages), and the token of the next page."""
        answer = self.extensions.peek_consumed_messages(
            self.url, start_time, end_time, count, next_token
        )
        return list(answer.get("Messages", [])), answer.get("NextToken")

    def delete(self, receipt_handles: Sequence[str], parallelism: int = 1) -> list[EntryFailure]:
        """DeleteMessageBatch over all handles; failures (e.g. stale handles) are returned."""
        return self._batched(
            "delete_message_batch",
            [{"ReceiptHandle": handle} for handle in receipt_handles],
            parallelism,
        )

    def change_visibility(
        self, receipt_handles: Sequence[str], timeout: int, parallelism: int = 1
    ) -> list[EntryFailure]:
        """ChangeMessageVisibilityBatch; timeout 0 makes the messages visible again at once."""
        return self._batched(
            "change_message_visibility_batch",
            [{"ReceiptHandle": handle, "VisibilityTimeout": timeout} for handle in receipt_handles],
            parallelism,
        )

    def visible_count(self) -> int:
        attributes = self.client.get_queue_attributes(
            QueueUrl=self.url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attributes.get("ApproximateNumberOfMessages", 0))

    # --- writing --------------------------------------------------------------------------

    def send_batch(self, entries: Sequence[dict[str, Any]]) -> list[EntryFailure]:
        """One SendMessageBatch of at most 10 entries (without Ids; they are added here)."""
        assert len(entries) <= MAX_BATCH_ENTRIES
        return self._call_batch("send_message_batch", entries, offset=0)

    # --- batch plumbing -------------------------------------------------------------------

    def _batched(
        self, operation: str, entries: Sequence[dict[str, Any]], parallelism: int
    ) -> list[EntryFailure]:
        """All entries in calls of 10, up to `parallelism` calls in flight at once."""
        calls = list(zip(range(0, len(entries), MAX_BATCH_ENTRIES),
                         _chunks(entries, MAX_BATCH_ENTRIES), strict=True))
        self.url  # resolve the URL once, before threads race to do it  # noqa: B018
        if parallelism <= 1 or len(calls) <= 1:
            answers = [self._call_batch(operation, chunk, offset) for offset, chunk in calls]
        else:
            with ThreadPoolExecutor(max_workers=min(parallelism, len(calls)),
                                    thread_name_prefix="cqs-batch") as pool:
                answers = list(pool.map(
                    lambda call: self._call_batch(operation, call[1], call[0]), calls
                ))
        return [failure for answer in answers for failure in answer]

    def _call_batch(
        self, operation: str, entries: Sequence[dict[str, Any]], offset: int
    ) -> list[EntryFailure]:
        if not entries:
            return []
        answer = getattr(self.client, operation)(
            QueueUrl=self.url,
            Entries=[{"Id": str(n), **entry} for n, entry in enumerate(entries)],
        )
        return [
            EntryFailure(
                index=offset + int(failed["Id"]),
                code=str(failed.get("Code", "")),
                message=str(failed.get("Message", "")),
                sender_fault=bool(failed.get("SenderFault", False)),
            )
            for failed in answer.get("Failed", [])
        ]
