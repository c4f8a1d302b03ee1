"""The request types of the single-message actions: send, receive, delete, change visibility.

Owns how a message to send is read in each protocol (`send_request_from_query`,
`send_request_from_json`, which the send batch reuses per entry) and the receive
parameters, with the spellings older clients use for the system attribute names.
SQS limits are the service's to check.

Imports `cqs.domain.model` and `cqs.sqs_api.requests.fields` only: never aiohttp, the service or
storage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Self

from cqs.domain.model import ReceiveRequest, SendRequest
from cqs.sqs_api.requests.fields import (
    JsonBody,
    QueryParams,
    json_attribute_names,
    json_int,
    json_message_attributes,
    json_required_int,
    json_required_str,
    json_str,
    query_int,
    query_list,
    query_message_attributes,
    query_required,
    query_required_int,
)


def send_request_from_query(params: QueryParams) -> SendRequest:
    """The message a SendMessage (or one send batch entry's parameters) describes."""
    return SendRequest(
        body=query_required(params, "MessageBody"),
        delay_seconds=query_int(params, "DelaySeconds"),
        message_attributes=query_message_attributes(params, "MessageAttribute"),
        system_attributes=query_message_attributes(params, "MessageSystemAttribute"),
        message_group_id=params.get("MessageGroupId"),
        message_deduplication_id=params.get("MessageDeduplicationId"),
    )


def send_request_from_json(body: JsonBody) -> SendRequest:
    """The message a SendMessage body (or one send batch entry) describes."""
    return SendRequest(
        body=json_required_str(body, "MessageBody"),
        delay_seconds=json_int(body, "DelaySeconds"),
        message_attributes=json_message_attributes(body, "MessageAttributes"),
        system_attributes=json_message_attributes(body, "MessageSystemAttributes"),
        message_group_id=json_str(body, "MessageGroupId"),
        message_deduplication_id=json_str(body, "MessageDeduplicationId"),
    )


@dataclass(frozen=True, slots=True)
class SendMessageRequest:
    queue_url: str
    message: SendRequest

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(query_required(params, "QueueUrl"), send_request_from_query(params))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_required_str(body, "QueueUrl"), send_request_from_json(body))


@dataclass(frozen=True, slots=True)
class ReceiveMessageRequest:
    queue_url: str
    receive: ReceiveRequest

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        max_number = query_int(params, "MaxNumberOfMessages")
        return cls(
            query_required(params, "QueueUrl"),
            ReceiveRequest(
                max_number_of_messages=1 if max_number is None else max_number,
                visibility_timeout=query_int(params, "VisibilityTimeout"),
                wait_time_seconds=query_int(params, "WaitTimeSeconds"),
                # The model gives both lists the XML name AttributeName; accept the
                # member-named spelling as well.
                system_attribute_names=query_list(
                    params, "AttributeName", "MessageSystemAttributeName"
                ),
                message_attribute_names=query_list(params, "MessageAttributeName"),
                receive_request_attempt_id=params.get("ReceiveRequestAttemptId"),
            ),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        max_number = json_int(body, "MaxNumberOfMessages")
        return cls(
            json_required_str(body, "QueueUrl"),
            ReceiveRequest(
                max_number_of_messages=1 if max_number is None else max_number,
                visibility_timeout=json_int(body, "VisibilityTimeout"),
                wait_time_seconds=json_int(body, "WaitTimeSeconds"),
                **json_attribute_names(body),
                receive_request_attempt_id=json_str(body, "ReceiveRequestAttemptId"),
            ),
        )


@dataclass(frozen=True, slots=True)
class DeleteMessageRequest:
    queue_url: str
    receipt_handle: str

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(query_required(params, "QueueUrl"), query_required(params, "ReceiptHandle"))

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(json_required_str(body, "QueueUrl"), json_required_str(body, "ReceiptHandle"))


@dataclass(frozen=True, slots=True)
class ChangeMessageVisibilityRequest:
    queue_url: str
    receipt_handle: str
    visibility_timeout: int

    @classmethod
    def from_query(cls, params: QueryParams) -> Self:
        return cls(
            query_required(params, "QueueUrl"),
            query_required(params, "ReceiptHandle"),
            query_required_int(params, "VisibilityTimeout"),
        )

    @classmethod
    def from_json(cls, body: JsonBody) -> Self:
        return cls(
            json_required_str(body, "QueueUrl"),
            json_required_str(body, "ReceiptHandle"),
            json_required_int(body, "VisibilityTimeout"),
        )
