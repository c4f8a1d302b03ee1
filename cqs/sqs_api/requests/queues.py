"""The request types of the queue actions: create, find, list, delete, purge, attributes,
tags and permissions.

Owns how those actions' parameters are spelled on the wire: the JSON members of the SQS
model (`Attributes`, `tags`, `TagKeys`, `AWSAccountIds`...) and the query protocol's
flattened names (`Attribute.1.Name`, `Tag.1.Key`, `TagKey.1`, `AttributeName.1`...).
SQS limits are the service's to check.

Imports `cqs.sqs_api.requests.fields` only: never aiohttp, the service or storage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self

from cqs.sqs_api.requests.fields import (
    JsonBody,
    QueryParams,
    json_page,
    json_required_str,
    json_required_str_list,
    json_required_str_map,
    json_str,
    json_str_list,
    json_str_map,
    query_list,
    query_page,
    query_required,
    query_required_list,
    query_required_string_map,
    query_string_map,
)


@dataclass(frozen=True, slots=True)
class CreateQueueRequest:
    queue_name: str
    attributes: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            queue_name=query_required(params, "QueueName"),
            attributes=query_string_map(params, "Attribute", "Name", "Value"),
            tags=query_string_map(params, "Tag", "Key", "Value"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            queue_name=json_required_str(body, "QueueName"),
            attributes=json_str_map(body, "Attributes"),
            tags=json_str_map(body, "tags"),  # lower-case in the SQS model
        )


@dataclass(frozen=True, slots=True)
class GetQueueUrlRequest:
    queue_name: str
    queue_owner_account_id: str | None = None

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(query_required(params, "QueueName"), params.get("QueueOwnerAWSAccountId"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_required_str(body, "QueueName"), json_str(body, "QueueOwnerAWSAccountId"))


@dataclass(frozen=True, slots=True)
class ListQueuesRequest:
    queue_name_prefix: str | None = None
    max_results: int | None = None
    next_token: str | None = None

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(params.get("QueueNamePrefix"), **query_page(params))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_str(body, "QueueNamePrefix"), **json_page(body))


@dataclass(frozen=True, slots=True)
class QueueUrlRequest:
    """The actions whose only parameter is the queue: DeleteQueue, PurgeQueue, ListQueueTags."""

    queue_url: str

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(query_required(params, "QueueUrl"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_required_str(body, "QueueUrl"))


@dataclass(frozen=True, slots=True)
class DeleteQueueRequest(QueueUrlRequest):
    pass


@dataclass(frozen=True, slots=True)
class PurgeQueueRequest(QueueUrlRequest):
    pass


@dataclass(frozen=True, slots=True)
class ListQueueTagsRequest(QueueUrlRequest):
    pass


@dataclass(frozen=True, slots=True)
class GetQueueAttributesRequest:
    queue_url: str
    attribute_names: tuple[str, ...] = ()

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(query_required(params, "QueueUrl"), query_list(params, "AttributeName"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_required_str(body, "QueueUrl"), json_str_list(body, "AttributeNames"))


@dataclass(frozen=True, slots=True)
class SetQueueAttributesRequest:
    queue_url: str
    attributes: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            query_required(params, "QueueUrl"),
            query_required_string_map(params, "Attribute", "Name", "Value"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_required_str(body, "QueueUrl"), json_required_str_map(body, "Attributes"))


@dataclass(frozen=True, slots=True)
class TagQueueRequest:
    queue_url: str
    tags: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            query_required(params, "QueueUrl"),
            query_required_string_map(params, "Tag", "Key", "Value"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_required_str(body, "QueueUrl"), json_required_str_map(body, "Tags"))


@dataclass(frozen=True, slots=True)
class UntagQueueRequest:
    queue_url: str
    tag_keys: tuple[str, ...] = ()

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(query_required(params, "QueueUrl"), query_required_list(params, "TagKey"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_required_str(body, "QueueUrl"), json_required_str_list(body, "TagKeys"))


@dataclass(frozen=True, slots=True)
class AddPermissionRequest:
    queue_url: str
    label: str
    account_ids: tuple[str, ...]
    actions: tuple[str, ...]

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            query_required(params, "QueueUrl"),
            query_required(params, "Label"),
            query_required_list(params, "AWSAccountId"),
            query_required_list(params, "ActionName"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            json_required_str(body, "QueueUrl"),
            json_required_str(body, "Label"),
            json_required_str_list(body, "AWSAccountIds"),
            json_required_str_list(body, "Actions"),
        )


@dataclass(frozen=True, slots=True)
class RemovePermissionRequest:
    queue_url: str
    label: str

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(query_required(params, "QueueUrl"), query_required(params, "Label"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_required_str(body, "QueueUrl"), json_required_str(body, "Label"))
