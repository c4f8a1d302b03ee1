"""One valid request per SQS operation, in the model's member names, and the required
members the model declares in it (top level, in list entries and in map values).

Owns `valid_request` (23 operations; a test fails if the model gains one without a request
here) and `required_paths`, read from the installed botocore's model. Must not import cqs.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

from botocore.model import Shape

from tests.wire.model.wire import Members, Scene, operation, service_model, unique

TRACE_HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"
_ATTRIBUTES = {"colour": {"DataType": "String", "StringValue": "blue"}}
_SYSTEM = {"AWSTraceHeader": {"DataType": "String", "StringValue": TRACE_HEADER}}


def valid_request(action: str, scene: Scene) -> Members:
    """A request SQS would accept (given the scene), with every required member present."""
    url, arn = scene.queue_url, scene.queue_arn
    handle = "AQEBplaceholderreceipthandle"  # never used: each test leaves a member out
    message = {"MessageBody": "hello", "MessageAttributes": _ATTRIBUTES,
               "MessageSystemAttributes": _SYSTEM}
    requests: dict[str, Members] = {
        "AddPermission": {"QueueUrl": url, "Label": unique("l"),
                          "AWSAccountIds": ["111122223333"], "Actions": ["SendMessage"]},
        "CancelMessageMoveTask": {"TaskHandle": "handle"},
        "ChangeMessageVisibility": {"QueueUrl": url, "ReceiptHandle": handle,
                                    "VisibilityTimeout": 10},
        "ChangeMessageVisibilityBatch": {"QueueUrl": url, "Entries": [
            {"Id": "a", "ReceiptHandle": handle, "VisibilityTimeout": 10}]},
        "CreateQueue": {"QueueName": unique()},
        "DeleteMessage": {"QueueUrl": url, "ReceiptHandle": handle},
        "DeleteMessageBatch": {"QueueUrl": url, "Entries": [{"Id": "a", "ReceiptHandle": handle}]},
        "DeleteQueue": {"QueueUrl": url},
        "GetQueueAttributes": {"QueueUrl": url, "AttributeNames": ["All"]},
        "GetQueueUrl": {"QueueName": url.rsplit("/", 1)[1]},
        "ListDeadLetterSourceQueues": {"QueueUrl": url},
        "ListMessageMoveTasks": {"SourceArn": arn},
        "ListQueueTags": {"QueueUrl": url},
        "ListQueues": {},
        "PurgeQueue": {"QueueUrl": url},
        "ReceiveMessage": {"QueueUrl": url},
        "RemovePermission": {"QueueUrl": url, "Label": "label"},
        "SendMessage": {"QueueUrl": url, **message},
        "SendMessageBatch": {"QueueUrl": url, "Entries": [{"Id": "a", **message}]},
        "SetQueueAttributes": {"QueueUrl": url, "Attributes": {"VisibilityTimeout": "30"}},
        "StartMessageMoveTask": {"SourceArn": arn},
        "TagQueue": {"QueueUrl": url, "Tags": {"team": "a"}},
        "UntagQueue": {"QueueUrl": url, "TagKeys": ["team"]},
    }
    return copy.deepcopy(requests[action])


class Placeholder(Scene):
    """Names only, for collecting the cases before any server runs."""

    def __init__(self) -> None:
        self.endpoint = "http://placeholder"
        self.queue_url = "http://placeholder/000000000000/q"
        self.queue_arn = "arn:aws:sqs:us-east-1:000000000000:q"


def operation_names() -> list[str]:
    return list(service_model("json").operation_names)


def _required(shape: Shape, value: Any, path: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """Paths (member names, list indexes, map keys) of the required members present in
    `value`, a value of `shape`."""
    if shape.type_name == "structure" and isinstance(value, dict):
        for name, member in shape.members.items():
            if name not in value:
                continue
            if name in shape.required_members:
                yield (*path, name)
            yield from _required(member, value[name], (*path, name))
    elif shape.type_name == "list" and isinstance(value, list) and value:
        yield from _required(shape.member, value[0], (*path, 0))
    elif shape.type_name == "map" and isinstance(value, dict):
        for key, item in value.items():
            yield from _required(shape.value, item, (*path, key))


def required_paths(action: str, request: Members) -> list[tuple[Any, ...]]:
    return list(_required(operation("json", action).input_shape, request, ()))


def without(request: Members, path: tuple[Any, ...]) -> Members:
    """A copy of `request` with the member at `path` left out."""
    copied = copy.deepcopy(request)
    holder: Any = copied
    for step in path[:-1]:
        holder = holder[step]
    del holder[path[-1]]
    return copied


def path_name(action: str, path: tuple[Any, ...]) -> str:
    shown = ".".join("N" if isinstance(step, int) else str(step) for step in path)
    return f"{action}.{shown}"
