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
from typing import Self, TypeVar

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


def _query_entries(
    params: QueryParams, prefix: str, read_entry: Callable[[QueryParams], Entry]
) -> tuple[Entry, ...]:
    """The `prefix.1.*`, `prefix.2.*`... entries in index order, each read by `read_entry`.

    A query request cannot tell no entries from an empty list: either is EmptyBatchRequest
    (the service's to raise), as SQS answers it; JSON without `Entries` is MissingParameter.
    """
    return tuple(read_entry(entry) for entry in query_groups(params, prefix))


def _json_entries(body: JsonBody, read_entry: Callable[[JsonBody], Entry]) -> tuple[Entry, ...]:
    """The objects of `Entries` in the client's order, each read by `read_entry`."""
    return tuple(read_entry(entry) for entry in json_required_objects(body, "Entries"))


def _send_entry_from_query(entry: QueryParams) -> tuple[str, SendRequest]:
    return query_required(entry, "Id"), send_request_from_query(entry)


def _send_entry_from_json(entry: JsonBody) -> tuple[str, SendRequest]:
    return json_required_str(entry, "Id"), send_request_from_json(entry)


def _receipt_entry_from_query(entry: QueryParams) -> tuple[str, str]:
    return query_required(entry, "Id"), query_required(entry, "ReceiptHandle")


def _receipt_entry_from_json(entry: JsonBody) -> tuple[str, str]:
    return json_required_str(entry, "Id"), json_required_str(entry, "ReceiptHandle")


def _visibility_entry_from_query(entry: QueryParams) -> tuple[str, str, int]:
    return (*_receipt_entry_from_query(entry), query_required_int(entry, "VisibilityTimeout"))


def _visibility_entry_from_json(entry: JsonBody) -> tuple[str, str, int]:
    return (*_receipt_entry_from_json(entry), json_required_int(entry, "VisibilityTimeout"))


@dataclass(frozen=True, slots=True)
class SendMessageBatchRequest:
    queue_url: str
    entries: tuple[tuple[str, SendRequest], ...]  # (entry id, message)

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            query_required(params, "QueueUrl"),
            _query_entries(params, "SendMessageBatchRequestEntry", _send_entry_from_query),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            json_required_str(body, "QueueUrl"), _json_entries(body, _send_entry_from_json)
        )


@dataclass(frozen=True, slots=True)
class DeleteMessageBatchRequest:
    queue_url: str
    entries: tuple[tuple[str, str], ...]  # (entry id, receipt handle)

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            query_required(params, "QueueUrl"),
            _query_entries(params, "DeleteMessageBatchRequestEntry", _receipt_entry_from_query),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            json_required_str(body, "QueueUrl"), _json_entries(body, _receipt_entry_from_json)
        )


@dataclass(frozen=True, slots=True)
class ChangeMessageVisibilityBatchRequest:
    queue_url: str
    entries: tuple[tuple[str, str, int], ...]  # (entry id, receipt handle, timeout)

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            query_required(params, "QueueUrl"),
            _query_entries(
                params, "ChangeMessageVisibilityBatchRequestEntry", _visibility_entry_from_query
            ),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            json_required_str(body, "QueueUrl"), _json_entries(body, _visibility_entry_from_json)
        )
