"""Every error the SQS model documents for an operation, produced by a request, over JSON and
over the query protocol: the code a user sees (the query code: `<Code>`, or for JSON the
`x-amzn-query-error` header botocore shows), the HTTP status where the model gives one, and
for JSON the modelled exception class botocore raises (e.g. `QueueDoesNotExist`).

`RECIPES` holds a request for each (operation, error) cqs can produce; `NOT_PRODUCIBLE` the
errors cqs never answers, each with its reason. Together they must cover the model's
`errors` lists exactly, so a new error in a future botocore fails here until it is placed.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable

import pytest

from tests.fixtures.cqs_server import CqsProcess, StartServer
from tests.wire.model.baselines import operation_names, valid_request
from tests.wire.model.wire import (
    PROTOCOLS,
    Members,
    Scene,
    call_ok,
    modelled_status,
    operation,
    query_error_code,
    send,
    unique,
)

Recipe = Callable[[Scene, str], Members]  # (scene, action) -> the request's members

_KMS = ("KmsAccessDenied", "KmsDisabled", "KmsInvalidKeyUsage", "KmsInvalidState",
        "KmsNotFound", "KmsOptInRequired", "KmsThrottled")
_WITHOUT_QUEUE_URL = ("CreateQueue", "GetQueueUrl", "ListQueues", "StartMessageMoveTask",
                      "ListMessageMoveTasks", "CancelMessageMoveTask")


def _documented() -> set[tuple[str, str]]:
    return {(action, error.name) for action in operation_names()
            for error in operation("json", action).error_shapes}


def _not_producible() -> dict[tuple[str, str], str]:
    reasons: dict[tuple[str, str], str] = {}
    for action in operation_names():
        reasons[(action, "RequestThrottled")] = "cqs does not throttle requests"
        reasons[(action, "InvalidSecurity")] = (
            "cqs never refuses a request for not using HTTPS or SigV4 this way: with"
            " authentication on it answers the signature errors of the authentication tests")
        reasons[(action, "UnsupportedOperation")] = (
            "cqs serves every action for every queue it has")
        for kms in _KMS:
            reasons[(action, kms)] = "cqs calls no KMS: SSE-KMS attributes are stored only"
    for action in operation_names():
        reasons[(action, "InvalidAddress")] = (
            "a QueueUrl that names no queue, even one that is no URL, is answered"
            " AWS.SimpleQueueService.NonExistentQueue (400), as SQS is observed to answer it"
            " (docs/compatibility.md); an address cqs does not serve is a plain HTTP 404")
    reasons[("ReceiveMessage", "OverLimit")] = (
        "needs 120,000 messages in flight (20,000 on a FIFO queue): too slow for this test")
    reasons[("SetQueueAttributes", "OverLimit")] = (
        "SQS gives no limit of SetQueueAttributes that cqs counts (a Policy's size is"
        " InvalidAttributeValue)")
    reasons[("DeleteMessage", "InvalidIdFormat")] = (
        "a legacy code: cqs, like SQS today, answers any malformed receipt handle with"
        " ReceiptHandleIsInvalid")
    documented = _documented()
    return {key: reason for key, reason in reasons.items() if key in documented}


NOT_PRODUCIBLE = _not_producible()


def _queue_url_is(url: Callable[[Scene], str]) -> Recipe:
    def recipe(scene: Scene, action: str) -> Members:
        return {**valid_request(action, scene), "QueueUrl": url(scene)}
    return recipe


def _entries(count: int, *, same_id: bool = False, bad_id: bool = False) -> Recipe:
    def recipe(scene: Scene, action: str) -> Members:
        request = valid_request(action, scene)
        entry = request["Entries"][0]
        request["Entries"] = [
            {**entry, "Id": "bad id!" if bad_id else "same" if same_id else f"e{n}"}
            for n in range(count)
        ]
        return request
    return recipe


def _in_flight_nowhere(scene: Scene, action: str) -> Members:
    url = scene.fresh_queue()
    handle = scene.receipt_handle(url, visibility=0)  # visible again at once...
    call_ok(scene.endpoint, "ReceiveMessage",  # ...and handed out since, visible again
            {"QueueUrl": url, "VisibilityTimeout": 0, "WaitTimeSeconds": 1})
    return {"QueueUrl": url, "ReceiptHandle": handle, "VisibilityTimeout": 10}


def _purged_just_now(scene: Scene, action: str) -> Members:
    url = scene.fresh_queue()
    call_ok(scene.endpoint, "PurgeQueue", {"QueueUrl": url})
    return {"QueueUrl": url}


def _existing_name_other_attributes(scene: Scene, action: str) -> Members:
    name = scene.queue_url.rsplit("/", 1)[1]
    return {"QueueName": name, "Attributes": {"VisibilityTimeout": "99"}}


def _too_long_batch(scene: Scene, action: str) -> Members:
    body = "x" * 250_000  # five of them: over the 1 MiB a batch may carry
    return {"QueueUrl": scene.queue_url,
            "Entries": [{"Id": f"e{n}", "MessageBody": body} for n in range(5)]}


def _task_handle(source_arn: str, task_id: str) -> str:
    """A well-formed handle (base64 JSON, as SQS's) of a task that does not exist."""
    document = json.dumps({"taskId": task_id, "sourceArn": source_arn})
    return base64.b64encode(document.encode()).decode()


def _missing_source_arn(scene: Scene, action: str) -> Members:
    return {"SourceArn": scene.queue_arn.rsplit(":", 1)[0] + ":" + unique("gone-")}


RECIPES: dict[tuple[str, str], Recipe] = {
    ("AddPermission", "OverLimit"): lambda scene, action: {
        **valid_request(action, scene),
        "Actions": ["SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility",
                    "GetQueueAttributes", "GetQueueUrl", "ListDeadLetterSourceQueues",
                    "PurgeQueue"]},
    ("CancelMessageMoveTask", "ResourceNotFoundException"): lambda scene, action: {
        "TaskHandle": _task_handle(scene.queue_arn, unique("task-"))},
    ("ChangeMessageVisibility", "MessageNotInflight"): _in_flight_nowhere,
    ("ChangeMessageVisibility", "ReceiptHandleIsInvalid"): lambda scene, action: {
        **valid_request(action, scene), "ReceiptHandle": "not-a-receipt-handle"},
    ("DeleteMessage", "ReceiptHandleIsInvalid"): lambda scene, action: {
        **valid_request(action, scene), "ReceiptHandle": "not-a-receipt-handle"},
    ("CreateQueue", "QueueNameExists"): _existing_name_other_attributes,
    ("CreateQueue", "InvalidAttributeName"): lambda scene, action: {
        "QueueName": unique(), "Attributes": {"NoSuchName": "1"}},
    ("CreateQueue", "InvalidAttributeValue"): lambda scene, action: {
        "QueueName": unique(), "Attributes": {"VisibilityTimeout": "43201"}},
    ("GetQueueAttributes", "InvalidAttributeName"): lambda scene, action: {
        "QueueUrl": scene.queue_url, "AttributeNames": ["NoSuchName"]},
    ("SetQueueAttributes", "InvalidAttributeName"): lambda scene, action: {
        "QueueUrl": scene.queue_url, "Attributes": {"NoSuchName": "1"}},
    ("SetQueueAttributes", "InvalidAttributeValue"): lambda scene, action: {
        "QueueUrl": scene.queue_url, "Attributes": {"VisibilityTimeout": "43201"}},
    ("ListMessageMoveTasks", "ResourceNotFoundException"): _missing_source_arn,
    ("StartMessageMoveTask", "ResourceNotFoundException"): _missing_source_arn,
    ("PurgeQueue", "PurgeQueueInProgress"): _purged_just_now,
    ("SendMessage", "InvalidMessageContents"): lambda scene, action: {
        "QueueUrl": scene.queue_url, "MessageBody": "nul \x00 here"},
    ("SendMessageBatch", "BatchRequestTooLong"): _too_long_batch,
    # GetQueueUrl names a queue by name, not by URL
    ("GetQueueUrl", "QueueDoesNotExist"): lambda scene, action: {"QueueName": unique("gone-")},
}
for _action in ("SendMessageBatch", "DeleteMessageBatch", "ChangeMessageVisibilityBatch"):
    RECIPES[(_action, "TooManyEntriesInBatchRequest")] = _entries(11)
    RECIPES[(_action, "EmptyBatchRequest")] = _entries(0)
    RECIPES[(_action, "BatchEntryIdsNotDistinct")] = _entries(2, same_id=True)
    RECIPES[(_action, "InvalidBatchEntryId")] = _entries(1, bad_id=True)
for _action in operation_names():
    if _action not in _WITHOUT_QUEUE_URL:
        RECIPES.setdefault((_action, "QueueDoesNotExist"),
                           _queue_url_is(lambda scene: scene.missing_queue_url()))
# Needs a server whose deleted names cool down (off by default): see `cooldown_scene`.
COOLDOWN = ("CreateQueue", "QueueDeletedRecently")


def test_every_documented_error_has_a_recipe_or_a_reason_it_cannot_arise() -> None:
    placed = set(RECIPES) | set(NOT_PRODUCIBLE) | {COOLDOWN}
    assert not set(RECIPES) & set(NOT_PRODUCIBLE)
    assert _documented() - placed == set(), "errors the model gained: place them"
    assert placed - _documented() == set(), "errors the model no longer documents"


@pytest.fixture(scope="module")
def cooldown_scene(redis_server: object, start_cqs_server: StartServer) -> Scene:
    server: CqsProcess = start_cqs_server(
        [redis_server.url],  # type: ignore[attr-defined]
        extra_args=["--queue-deleted-recently-seconds", "60"],
    )
    return Scene(server.url)


def _check(scene: Scene, wire: str, action: str, error: str, members: Members) -> None:
    answer = send(scene.endpoint, wire, action, members)

    assert answer.code == query_error_code(error), str(answer)
    expected_status = modelled_status(error)
    if expected_status is None:
        assert 400 <= answer.status < 500, str(answer)
    else:
        assert answer.status == expected_status, str(answer)
    if wire == "json":
        assert answer.exception_class == error, str(answer)


@pytest.mark.parametrize("wire", PROTOCOLS)
@pytest.mark.parametrize(
    ("action", "error"), sorted(RECIPES), ids=[f"{a}-{e}" for a, e in sorted(RECIPES)]
)
def test_a_documented_error_is_answered_as_modelled(
    scene: Scene, wire: str, action: str, error: str
) -> None:
    _check(scene, wire, action, error, RECIPES[(action, error)](scene, action))


@pytest.mark.parametrize("wire", PROTOCOLS)
def test_a_name_deleted_within_the_cooldown_is_queue_deleted_recently(
    cooldown_scene: Scene, wire: str
) -> None:
    name = unique()
    url = cooldown_scene.fresh_queue_named(name)
    call_ok(cooldown_scene.endpoint, "DeleteQueue", {"QueueUrl": url})

    _check(cooldown_scene, wire, *COOLDOWN, {"QueueName": name})
