"""Every required member of every SQS operation, left out of an otherwise valid request,
gives MissingParameter (HTTP 400), over JSON and over the query protocol.

Generated from the installed botocore's SQS model: the operations, and the members it marks
required at the top level, in list entries (a batch entry's Id, MessageBody, ReceiptHandle)
and in map values (a message attribute's DataType). SQS checks required members before it
reads the rest of the request, so a batch entry without its Id fails the whole call.

One exception, from the query protocol itself: it cannot tell a batch without entries from an
empty batch, and SQS answers both with EmptyBatchRequest (a documented error of the three
batch actions), as it always has for query clients.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.wire.model.baselines import (
    Placeholder,
    operation_names,
    path_name,
    required_paths,
    valid_request,
    without,
)
from tests.wire.model.wire import PROTOCOLS, Scene, query_error_code, send

_BATCHES = ("SendMessageBatch", "DeleteMessageBatch", "ChangeMessageVisibilityBatch")
# (protocol, action, path) -> the code SQS answers instead of MissingParameter.
_NOT_MISSING_PARAMETER = {
    ("query", action, ("Entries",)): query_error_code("EmptyBatchRequest") for action in _BATCHES
}


def _cases() -> list[Any]:
    cases = []
    for action in operation_names():
        for path in required_paths(action, valid_request(action, Placeholder())):
            for protocol in PROTOCOLS:
                cases.append(pytest.param(
                    protocol, action, path, id=f"{protocol}-{path_name(action, path)}"
                ))
    return cases


def test_the_model_declares_required_members_for_every_operation_but_list_queues() -> None:
    with_required = {case.values[1] for case in _cases()}
    assert set(operation_names()) - with_required == {"ListQueues"}
    assert len(operation_names()) == 23


@pytest.mark.parametrize(("wire", "action", "path"), _cases())
def test_a_required_member_left_out_is_missing_parameter(
    scene: Scene, wire: str, action: str, path: tuple[Any, ...]
) -> None:
    answer = send(scene.endpoint, wire, action, without(valid_request(action, scene), path))

    expected = _NOT_MISSING_PARAMETER.get((wire, action, path), "MissingParameter")
    assert (answer.status, answer.code) == (400, expected), str(answer)
    if wire == "json":
        assert answer.exception_class == "ClientError", str(answer)  # not a modelled error
