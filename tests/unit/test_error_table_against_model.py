"""The error table against botocore's SQS model: every modelled error cqs can raise has the
model's query code, HTTP status and fault, and its JSON `__type` names the model's shape.

Codes, statuses and faults come from the `error` traits of botocore's query-protocol model
(the vendored copy in tests/wire/botocore_query: the JSON model as installed no longer
carries them); the shape names from the installed JSON model.
"""

from __future__ import annotations

import json
from pathlib import Path

import botocore.session
import pytest

from cqs.domain import errors
from cqs.sqs_api.errors import ERROR_TABLE, render_json_error, render_query_error

QUERY_MODEL = (
    Path(__file__).parents[1] / "wire" / "botocore_query" / "sqs" / "2012-11-05"
    / "service-2.json"
)
_SHAPES = json.loads(QUERY_MODEL.read_text())["shapes"]
_JSON_EXCEPTIONS = {
    shape.name for shape in botocore.session.get_session().get_service_model("sqs").error_shapes
}
# Every cqs error class named as a modelled SQS exception (the shape's name).
MODELLED = {
    cls: cls.__name__ for cls in ERROR_TABLE
    if isinstance(cls, type) and cls.__name__ in _JSON_EXCEPTIONS
}
MODELLED[errors.ResourceNotFound] = "ResourceNotFoundException"


def test_every_modelled_exception_cqs_raises_is_in_the_table() -> None:
    assert set(MODELLED.values()) >= {
        "QueueDoesNotExist", "ReceiptHandleIsInvalid", "MessageNotInflight", "OverLimit",
        "PurgeQueueInProgress", "QueueNameExists", "QueueDeletedRecently",
        "ResourceNotFoundException", "InvalidAddress", "InvalidAttributeName",
    }


@pytest.mark.parametrize(
    "error_class", sorted(MODELLED, key=lambda cls: cls.__name__), ids=lambda c: c.__name__
)
def test_the_wire_error_is_the_models(error_class: type[errors.CqsError]) -> None:
    shape = MODELLED[error_class]
    wire = ERROR_TABLE[error_class]
    assert wire.json_type == f"com.amazonaws.sqs#{shape}"
    trait = _SHAPES.get(shape, {}).get("error")
    if trait is None:  # no trait in the model: the code is the shape's name, 400, Sender
        expected = (shape, 400, True)
        if shape in _UNTRAITED_BUT_DOCUMENTED:
            expected = _UNTRAITED_BUT_DOCUMENTED[shape]
    else:
        expected = (trait["code"], trait["httpStatusCode"], trait["senderFault"])
    assert (wire.query_code, wire.status, wire.sender_fault) == expected


# Modelled shapes without an `error` trait in that model, whose code and status the SQS API
# reference gives (ReceiptHandleIsInvalid: 404; InvalidAddress: 404).
_UNTRAITED_BUT_DOCUMENTED = {
    "ReceiptHandleIsInvalid": ("ReceiptHandleIsInvalid", 404, True),
    "InvalidAddress": ("InvalidAddress", 404, True),
}


def test_a_missing_queue_is_worded_as_aws_words_it_in_each_protocol() -> None:
    missing = errors.QueueDoesNotExist("The specified queue does not exist.")
    as_json = render_json_error(missing, "r")
    assert json.loads(as_json.body)["message"] == "The specified queue does not exist."
    assert as_json.headers["x-amzn-query-error"] == (
        "AWS.SimpleQueueService.NonExistentQueue;Sender"
    )
    as_query = render_query_error(missing, "r")
    assert (
        b"<Message>The specified queue does not exist for this wsdl version.</Message>"
        in as_query.body
    )
    assert b"<Code>AWS.SimpleQueueService.NonExistentQueue</Code>" in as_query.body
    assert as_query.status == as_json.status == 400
