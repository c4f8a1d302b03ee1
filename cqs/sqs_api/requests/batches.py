"""The request types of the batch actions: SendMessageBatch, DeleteMessageBatch and
ChangeMessageVisibilityBatch, each a tuple of entries led by the entry id, in the client's
order.

Owns the entry spellings (`SendMessageBatchRequestEntry.1.Id` in the query protocol,
`Entries` in JSON). How many entries and whether their ids are distinct is the service's to
check.

Imports `cqs.domain.model`, `cqs.sqs_api.requests.fields` and `.messages` (a send entry is read as
a SendMessage is): never aiohttp, the service or storage.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Self, TypeVar

from cqs.domain.model import SendRequest
from cqs.sqs_api.requests.fields import (
    JsonBody,
    QueryParams,
    json_required_int,
    json_required_objects,
    json_required_str,
    query_groups,
    query_required,
    query_required_int,
)
from cqs.sqs_api.requests.messages import send_request_from_json, send_request_from_query

Entry = TypeVar("Entry")


@dataclass(frozen=True, slots=True)
class _EntrySpelling(Generic[Entry]):
    """How one batch action spells its entries: the query protocol's `prefix.1.*`,
    `prefix.2.*`... groups and JSON's `Entries` objects, each read by the protocol's reader.

    A query request cannot tell no entries from an empty list: either is EmptyBatchRequest
    (the service's to raise), as SQS answers it; JSON without `Entries` is MissingParameter.
    """

    query_prefix: str
    read_query_entry: Callable[[QueryParams], Entry]
    read_json_entry: Callable[[JsonBody], Entry]


@dataclass(frozen=True, slots=True)
class _BatchRequest(Generic[Entry]):
    """A batch action's request: the queue and its entries in the client's order; each
    action's type names its `entry_spelling`."""

    queue_url: str
    entries: tuple[Entry, ...]
    entry_spelling: ClassVar[_EntrySpelling[Any]]

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        spelling = cls.entry_spelling
        groups = query_groups(params, spelling.query_prefix)
        return cls(
            query_required(params, "QueueUrl"),
            tuple(spelling.read_query_entry(group) for group in groups),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            json_required_str(body, "QueueUrl"),
            tuple(cls.entry_spelling.read_json_entry(entry)
                  for entry in json_required_objects(body, "Entries")),
        )


def _send_entry_from_query(entry: QueryParams) -> tuple[str, SendRequest]:
    return query_required(entry, "Id"), send_request_from_query(entry)


def _send_entry_from_json(entry: JsonBody) -> tuple[str, SendRequest]:
    return json_required_str(entry, "Id"), send_request_from_json(entry)


@dataclass(frozen=True, slots=True)
class SendMessageBatchRequest(_BatchRequest[tuple[str, SendRequest]]):
    """Entries: (entry id, message)."""

    entry_spelling = _EntrySpelling(
        "SendMessageBatchRequestEntry", _send_entry_from_query, _send_entry_from_json
    )


def _receipt_entry_from_query(entry: QueryParams) -> tuple[str, str]:
    return query_required(entry, "Id"), query_required(entry, "ReceiptHandle")


def _receipt_entry_from_json(entry: JsonBody) -> tuple[str, str]:
    return json_required_str(entry, "Id"), json_required_str(entry, "ReceiptHandle")


@dataclass(frozen=True, slots=True)
class DeleteMessageBatchRequest(_BatchRequest[tuple[str, str]]):
    """Entries: (entry id, receipt handle)."""

    entry_spelling = _EntrySpelling(
        "DeleteMessageBatchRequestEntry", _receipt_entry_from_query, _receipt_entry_from_json
    )


def _visibility_entry_from_query(entry: QueryParams) -> tuple[str, str, int]:
    return (*_receipt_entry_from_query(entry), query_required_int(entry, "VisibilityTimeout"))


def _visibility_entry_from_json(entry: JsonBody) -> tuple[str, str, int]:
    return (*_receipt_entry_from_json(entry), json_required_int(entry, "VisibilityTimeout"))


@dataclass(frozen=True, slots=True)
class ChangeMessageVisibilityBatchRequest(_BatchRequest[tuple[str, str, int]]):
    """Entries: (entry id, receipt handle, visibility timeout)."""

    entry_spelling = _EntrySpelling(
        "ChangeMessageVisibilityBatchRequestEntry",
        _visibility_entry_from_query,
        _visibility_entry_from_json,
    )
