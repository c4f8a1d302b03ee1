"""The one scenario every SDK runs against a live cqs, and the checks of what it observed.

Owns the plan (queue names, bodies, attributes, counts) handed to each SDK's driver, the
list of steps, and one check per step. A driver (python_driver.py, js/scenario.mjs,
go/main.go) runs the steps in order with its SDK and prints one JSON object per step, what
it observed (binary values base64-encoded); a driver that hit an error in a step prints
`{"step": ..., "error": ...}` and goes on. Nothing is judged in the drivers: every
assertion is here, the same for every SDK.

May import the wire suite's pure helpers (MD5s, unique names); must not import cqs.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from tests.wire.conftest import md5_hex, md5_of_message_attributes, unique_name

STEPS = (
    "create",            # a standard and a FIFO queue
    "send",              # SendMessage with String, Number and Binary attributes, then receive it
    "delete",            # DeleteMessage of that message
    "send_batch",        # `batches` SendMessageBatch calls of 10
    "receive_all",       # receive them all back (10 at a time)
    "delete_batch",      # DeleteMessageBatch of all of them
    "long_poll",         # WaitTimeSeconds=5 answered by a message sent during the wait
    "change_visibility", # visibility 0 makes a message reappear; a longer one keeps it hidden
    "fifo",              # two groups, order kept within each
    "attributes",        # SetQueueAttributes then GetQueueAttributes All
    "tags",              # TagQueue, ListQueueTags, UntagQueue
    "list_paging",       # ListQueues with MaxResults and NextToken over more queues than a page
    "purge",             # PurgeQueue empties the queue
    "delete_queue",      # DeleteQueue; the queue is gone
)

ACCOUNT_ID = "000000000000"
BODY = "héllo wörld ✓ <&> \"quoted\""
BINARY = bytes([0, 1, 2, 254, 255]) + b"cqs"
ATTRIBUTES: dict[str, dict[str, Any]] = {
    "kind": {"DataType": "String", "StringValue": "greeting"},
    "count": {"DataType": "Number", "StringValue": "42"},
    "blob": {"DataType": "Binary", "BinaryValue": base64.b64encode(BINARY).decode()},
}
SET_ATTRIBUTES = {"VisibilityTimeout": "45", "DelaySeconds": "0", "MaximumMessageSize": "2048"}
TAGS = {"team": "orders", "env": "test"}
FIFO_GROUPS = {"g-a": 4, "g-b": 4}
LISTED_QUEUES = 7
PAGE_SIZE = 3
PURGED_MESSAGES = 5
LONG_POLL_WAIT = 5
LONG_POLL_SEND_AFTER = 1.5


def plan(endpoint: str, **overrides: Any) -> dict[str, Any]:
    """What a driver needs: where the server is, the names to use and what to send
    (`overrides` replace entries, for an SDK that is slow per call or limited)."""
    prefix = unique_name("sdk-")
    return {
        "endpoint": endpoint,
        "region": "us-east-1",
        "prefix": prefix,
        "standard": prefix + "-std",
        "fifo": prefix + "-fifo.fifo",
        "visibility_queue": prefix + "-vis",
        "purge_queue": prefix + "-purge",
        "listed_prefix": prefix + "-list-",
        "listed_queues": LISTED_QUEUES,
        "page_size": PAGE_SIZE,
        "body": BODY,
        "attributes": ATTRIBUTES,
        "batches": 20,
        "set_attributes": SET_ATTRIBUTES,
        "tags": TAGS,
        "untag": ["env"],
        "fifo_groups": FIFO_GROUPS,
        "purged_messages": PURGED_MESSAGES,
        "long_poll_wait": LONG_POLL_WAIT,
        "long_poll_send_after": LONG_POLL_SEND_AFTER,
        **overrides,
    }


Observations = dict[str, dict[str, Any]]


def parse(lines: Iterable[str]) -> Observations:
    """A driver's JSON lines, by step (lines that are not JSON objects are ignored)."""
    observed: Observations = {}
    for line in lines:
        line = line.strip()
        if line.startswith("{"):
            record = json.loads(line)
            observed[record["step"]] = record
    return observed


def check(step: str, observed: Observations, the_plan: Mapping[str, Any]) -> None:
    record = observed.get(step)
    assert record is not None, f"the driver reported nothing for {step!r}"
    assert "error" not in record, f"{step}: {record['error']}"
    CHECKS[step](record, the_plan, observed)


def _queue_url(the_plan: Mapping[str, Any], name: str) -> str:
    return f"{the_plan['endpoint']}/{ACCOUNT_ID}/{name}"


def _create(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    assert record["standard_url"] == _queue_url(the_plan, the_plan["standard"])
    assert record["fifo_url"] == _queue_url(the_plan, the_plan["fifo"])
    assert record["fifo_attributes"]["FifoQueue"] == "true"
    assert record["fifo_attributes"]["ContentBasedDeduplication"] == "true"


def _binary_of(attributes: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Attributes with base64 binary values decoded, as the MD5 is computed over bytes, and
    without empty lists (the JS SDK v2 fills in `StringListValues: []` for absent ones)."""
    return {
        name: {key: base64.b64decode(item) if key == "BinaryValue" else item
               for key, item in value.items() if item != []}
        for name, value in attributes.items()
    }


def _send(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    body_md5 = md5_hex(the_plan["body"])
    attributes_md5 = md5_of_message_attributes(_binary_of(the_plan["attributes"]))
    received = record["received"]
    assert record["md5_body"] == body_md5
    assert record["md5_attributes"] == attributes_md5
    assert received["message_id"] == record["message_id"]
    assert received["body"] == the_plan["body"]
    assert received["md5_body"] == body_md5
    assert received["md5_attributes"] == attributes_md5
    assert _binary_of(received["attributes"]) == _binary_of(the_plan["attributes"])


def _delete(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    assert record["counts_after"] == [0, 0]


def _send_batch(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    sent = record["sent"]
    assert record["failed"] == []
    assert len(sent) == 10 * the_plan["batches"]
    assert len({entry["message_id"] for entry in sent}) == len(sent)
    assert all(entry["md5_body"] == md5_hex(entry["body"]) for entry in sent)


def _receive_all(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    sent = {entry["message_id"]: entry["body"] for entry in observed["send_batch"]["sent"]}
    received = Counter(message_id for message_id, _ in record["received"])
    assert set(received) == set(sent), "every message id sent comes back"
    assert max(received.values()) == 1, "and exactly once"
    assert all(sent[message_id] == body for message_id, body in record["received"])


def _delete_batch(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    assert record["failed"] == []
    assert record["deleted"] == 10 * the_plan["batches"]
    assert record["counts_after"] == [0, 0]
    assert record["received_after"] == 0


def _long_poll(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    assert record["bodies"] == ["during the wait"]
    assert the_plan["long_poll_send_after"] - 0.3 <= record["elapsed"] < the_plan["long_poll_wait"]


def _change_visibility(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    assert record["first"] == ["comes back"]
    assert record["reappeared"] == ["comes back"], "visibility 0 makes it visible again"
    assert record["while_hidden"] == [], "a longer visibility keeps it hidden past its first"


def _fifo(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    for group, count in the_plan["fifo_groups"].items():
        expected = [f"{group}-{n}" for n in range(count)]
        assert [body for g, body in record["received"] if g == group] == expected
        numbers = [int(number) for g, _, number in record["sent"] if g == group]
        assert numbers == sorted(numbers) and len(set(numbers)) == count


def _attributes(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    got = record["got"]
    for name, value in the_plan["set_attributes"].items():
        assert got[name] == value
    assert got["QueueArn"] == f"arn:aws:sqs:{the_plan['region']}:{ACCOUNT_ID}:{the_plan['standard']}"
    assert {"CreatedTimestamp", "LastModifiedTimestamp", "ApproximateNumberOfMessages"} <= set(got)


def _tags(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    assert record["after_tag"] == the_plan["tags"]
    kept = {k: v for k, v in the_plan["tags"].items() if k not in the_plan["untag"]}
    assert record["after_untag"] == kept


def _list_paging(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    pages = record["pages"]
    listed = [url for page in pages for url in page]
    expected = {_queue_url(the_plan, f"{the_plan['listed_prefix']}{n}")
                for n in range(the_plan["listed_queues"])}
    assert sorted(listed) == sorted(expected), "every queue once, over all pages"
    assert all(len(page) <= the_plan["page_size"] for page in pages)
    assert len(pages) >= -(-the_plan["listed_queues"] // the_plan["page_size"])


def _purge(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    assert record["counts_before"][0] == the_plan["purged_messages"]
    assert record["counts_after"] == [0, 0]
    assert record["received_after"] == 0


def _delete_queue(record: dict[str, Any], the_plan: Mapping[str, Any], observed: Observations) -> None:
    assert record["error_code"] in ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist")
    # Only the two queues this step deleted: another step's leftovers are that step's failure.
    deleted = {_queue_url(the_plan, the_plan["standard"]), _queue_url(the_plan, the_plan["fifo"])}
    assert deleted.isdisjoint(record["listed_after"])


CHECKS = {
    "create": _create, "send": _send, "delete": _delete, "send_batch": _send_batch,
    "receive_all": _receive_all, "delete_batch": _delete_batch, "long_poll": _long_poll,
    "change_visibility": _change_visibility, "fifo": _fifo, "attributes": _attributes,
    "tags": _tags, "list_paging": _list_paging, "purge": _purge, "delete_queue": _delete_queue,
}
assert tuple(CHECKS) == STEPS
