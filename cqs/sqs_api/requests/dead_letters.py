"""The request types of the dead-letter actions: ListDeadLetterSourceQueues and the message
move tasks (start, list, cancel).

Owns those actions' parameter spellings. ARNs and task handles are read as text; what they
name is the service's to work out.

Imports `cqs.sqs_api.requests.fields` only: never aiohttp, the service or storage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from cqs.sqs_api.requests.fields import (
    JsonBody,
    QueryParams,
    json_int,
    json_page,
    json_required_str,
    json_str,
    query_int,
    query_page,
    query_required,
)


@dataclass(frozen=True, slots=True)
class ListDeadLetterSourceQueuesRequest:
    queue_url: str
    max_results: int | None = None
    next_token: str | None = None

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(query_required(params, "QueueUrl"), **query_page(params))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_required_str(body, "QueueUrl"), **json_page(body))


@dataclass(frozen=True, slots=True)
class StartMessageMoveTaskRequest:
    source_arn: str
    destination_arn: str | None = None
    max_number_of_messages_per_second: int | None = None

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            query_required(params, "SourceArn"),
            params.get("DestinationArn") or None,
            query_int(params, "MaxNumberOfMessagesPerSecond"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            json_required_str(body, "SourceArn"),
            json_str(body, "DestinationArn") or None,
            json_int(body, "MaxNumberOfMessagesPerSecond"),
        )


@dataclass(frozen=True, slots=True)
class ListMessageMoveTasksRequest:
    source_arn: str
    max_results: int | None = None

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(query_required(params, "SourceArn"), query_int(params, "MaxResults"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_required_str(body, "SourceArn"), json_int(body, "MaxResults"))


@dataclass(frozen=True, slots=True)
class CancelMessageMoveTaskRequest:
    task_handle: str

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(query_required(params, "TaskHandle"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_required_str(body, "TaskHandle"))
