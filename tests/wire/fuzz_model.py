"""Hypothesis strategies for SQS requests, driven by botocore's service model of SQS.

Owns the parameters half of the fuzzer: for each of the model's 23 operations, valid
parameters (walked from the operation's input shape, with member names that carry meaning,
such as QueueUrl, ReceiptHandle or a queue attribute, drawn from the queues and handles the
fuzz run set up), and mutations of them: for AWS JSON 1.0, of the JSON tree (missing
required members, unknown members, values of the wrong type or nested garbage, huge strings,
lists, maps and nesting, lone surrogates, control characters); for the query protocol, of
the form's name/value pairs after botocore's own query serializer has flattened valid
parameters (dropped, repeated, empty or misnumbered names, wrong-typed and huge values).
Forged receipt handles and queue URLs of other accounts, paths and lengths are among the
values. `fuzz_http` turns the result into HTTP bytes.

What the fuzzer must never do, so a run can check that nothing was lost: act on a tracked
queue except through receives, reads and receipt-handle calls, or hold a valid handle of one
(`FuzzTargets.tracked_handles` are only ever sent with their bytes changed).

Imports botocore, hypothesis and the standard library; never cqs (the server is seen through
HTTP only), so that `benchmarks/fuzz.py` can reuse it.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import botocore.session
from botocore.model import OperationModel, Shape
from botocore.serialize import create_serializer
from hypothesis import strategies as st

QUERY_MODEL_PATH = Path(__file__).parent / "botocore_query"
LONE_SURROGATES = ("\ud800", "\udfff", "\udbff\ud7ff")
CONTROL_TEXT = ("\x00", "\x01", "\x1b", "\ufffe", "\uffff", "\x7f\x08")
DRAWN_BATCH_ENTRIES = 12  # up to 10 is valid; 11 and 12 are TooManyEntriesInBatchRequest
# Only these may name a tracked queue in QueueUrl: none of them loses a message without a
# valid receipt handle of that queue.
TRACKED_QUEUE_ACTIONS = frozenset({
    "ReceiveMessage", "DeleteMessage", "DeleteMessageBatch", "ChangeMessageVisibility",
    "ChangeMessageVisibilityBatch", "GetQueueAttributes", "ListQueueTags",
    "ListDeadLetterSourceQueues",
})


@dataclass(frozen=True)
class FuzzTargets:
    """What the fuzzer may name: queues, handles, and the server's host for URLs."""

    host: str  # host:port, as the client sends it
    account_id: str
    region: str
    queue_urls: tuple[str, ...]  # playground queues: any action, any change
    tracked_urls: tuple[str, ...]  # see TRACKED_QUEUE_ACTIONS
    pool_names: tuple[str, ...]  # names the fuzzer creates and deletes freely
    handles: tuple[str, ...]  # real handles of playground queues, sent as they are
    tracked_handles: tuple[str, ...]  # real handles of tracked queues, sent only altered

    def arn(self, url: str) -> str:
        return f"arn:aws:sqs:{self.region}:{self.account_id}:{url.rsplit('/', 1)[-1]}"

    def pool_url(self, name: str) -> str:
        return f"http://{self.host}/{self.account_id}/{name}"


@functools.cache
def json_model() -> Any:
    return botocore.session.get_session().get_service_model("sqs")


@functools.cache
def query_model() -> Any:
    session = botocore.session.get_session()
    session.set_config_variable("data_path", str(QUERY_MODEL_PATH))
    return session.get_service_model("sqs")


# --- small values ---------------------------------------------------------------------------

short_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=24)
ids = st.text("abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
garbage_json: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | short_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(short_text, inner, max_size=4),
    max_leaves=10,
)


def _json_document(value: Any) -> str:
    return json.dumps(value)


def _huge_string(length: int, char: str) -> str:
    return char * length


huge_strings = st.builds(
    _huge_string, st.sampled_from([300, 5_000, 70_000, 300_000]), st.sampled_from("xé😀%&<")
)


def _nested(depth: int, kind: str) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


huge_values: st.SearchStrategy[Any] = st.one_of(
    huge_strings,
    st.builds(lambda n: ["x"] * n, st.sampled_from([100, 3_000])),
    st.builds(lambda n: {f"k{i}": "v" for i in range(n)}, st.sampled_from([100, 3_000])),
    st.builds(_nested, st.sampled_from([20, 63, 65, 500]), st.sampled_from(["list", "map"])),
)


# --- receipt handles and queue URLs -----------------------------------------------------------

def _b64decode(handle: str) -> bytes:
    return base64.urlsafe_b64decode(handle + "=" * (-len(handle) % 4))


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@st.composite
def altered_handle(draw: st.DrawFn, handle: str) -> str:
    """`handle` with its bytes changed (never the same bytes): a forgery of a real handle."""
    data = bytearray(_b64decode(handle))
    how = draw(st.sampled_from(["flip", "truncate", "extend", "swap"]))
    if how == "flip":
        at = draw(st.integers(0, len(data) - 1))
        data[at] ^= 1 << draw(st.integers(0, 7))
    elif how == "truncate":
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif how == "extend":
        data += draw(st.binary(min_size=1, max_size=8))
    else:
        half = len(data) // 2
        swapped = data[half:] + data[:half]
        data = swapped if swapped != data else data + b"\x00"
    return _b64encode(bytes(data))


def receipt_handles(targets: FuzzTargets) -> st.SearchStrategy[str]:
    forged = [st.sampled_from(targets.tracked_handles).flatmap(altered_handle)]
    if targets.handles:
        forged.append(st.sampled_from(targets.handles))
        forged.append(st.sampled_from(targets.handles).flatmap(altered_handle))
    return st.one_of(
        *forged,
        st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", max_size=400),
        st.binary(max_size=300).map(lambda data: base64.b64encode(data).decode()),
        st.sampled_from(["", " ", "AQEB" + "x" * 300, "a+b/c==", "../../etc", "%00"]),
        huge_strings,
    )


def _foreign_urls(url: str, targets: FuzzTargets) -> list[str]:
    name = url.rsplit("/", 1)[-1]
    return [
        url.replace(f"/{targets.account_id}/", "/123456789012/"),
        url.replace(f"/{targets.account_id}/", "/abc/"),
        f"{url}/extra", url.rsplit("/", 1)[0], f"{url}?x=1", f"{url}#f", f"{url}/../{name}",
        f"https://sqs.{targets.region}.amazonaws.com/{targets.account_id}/{name}",
        f"http://[::1]:1/{targets.account_id}/{name}", f"http://h:99999/{targets.account_id}/q",
        url + "x" * 90, url + "q" * 20_000, name, f"{targets.account_id}/{name}", "http://[bad",
        "http://höst/0/q", "//" * 500, "",
    ]


def queue_urls(targets: FuzzTargets, action: str) -> st.SearchStrategy[str]:
    usable = list(targets.queue_urls)
    if action in TRACKED_QUEUE_ACTIONS:
        usable += targets.tracked_urls
    if action == "DeleteQueue":  # not the playground: the fuzz would have nothing left
        usable = [targets.pool_url(name) for name in targets.pool_names]
    odd = [u for url in targets.queue_urls for u in _foreign_urls(url, targets)]
    return st.one_of(st.sampled_from(usable), st.sampled_from(usable), st.sampled_from(odd))


def queue_arns(targets: FuzzTargets) -> st.SearchStrategy[str]:
    """Playground queues, a queue that does not exist and garbage: never a tracked queue."""
    arns = [targets.arn(url) for url in targets.queue_urls]
    return st.one_of(
        st.sampled_from(arns),
        st.sampled_from([
            f"arn:aws:sqs:{targets.region}:{targets.account_id}:nope",
            f"arn:aws:sqs:{targets.region}:123456789012:x", "arn:aws:sqs", "arn:::::",
            "arn:aws:sqs:" + ":" * 300, "not-an-arn",
        ]),
        short_text,
    )


# --- valid values, from the model -------------------------------------------------------------

def _int_text(low: int, high: int) -> st.SearchStrategy[str]:
    return st.integers(low, high).map(str)


def queue_attribute_values(targets: FuzzTargets) -> dict[str, st.SearchStrategy[str]]:
    arns = queue_arns(targets)
    return {
        "DelaySeconds": _int_text(0, 900),
        "MaximumMessageSize": _int_text(1024, 1_048_576),
        "MessageRetentionPeriod": _int_text(60, 1_209_600),
        "ReceiveMessageWaitTimeSeconds": st.just("0"),  # a long poll would stall the fuzz
        "VisibilityTimeout": _int_text(0, 43_200),
        "Policy": st.builds(lambda sid: _json_document({
            "Version": "2012-10-17", "Statement": [{"Sid": sid, "Effect": "Allow",
                                                    "Principal": "*", "Action": "sqs:*"}]}),
            short_text),
        "RedrivePolicy": st.builds(
            lambda arn, n: _json_document({"deadLetterTargetArn": arn, "maxReceiveCount": n}),
            arns, st.integers(-1, 1001)),
        "RedriveAllowPolicy": st.builds(
            lambda how, arns_: _json_document(
                {"redrivePermission": how, "sourceQueueArns": arns_}),
            st.sampled_from(["allowAll", "denyAll", "byQueue", "x"]), st.lists(arns, max_size=3)),
        "FifoQueue": st.sampled_from(["true", "false", "TRUE", "yes"]),
        "ContentBasedDeduplication": st.sampled_from(["true", "false"]),
        "SqsManagedSseEnabled": st.sampled_from(["true", "false"]),
        "KmsMasterKeyId": st.sampled_from(["alias/aws/sqs", "", "x" * 300]),
        "KmsDataKeyReusePeriodSeconds": _int_text(0, 90_000),
        "DeduplicationScope": st.sampled_from(["messageGroup", "queue", "x"]),
        "FifoThroughputLimit": st.sampled_from(["perQueue", "perMessageGroupId", "x"]),
    }


def message_attribute_values(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["String", "Number", "Binary", "String.x", "Number.int",
                                 "Binary.gz", "", "string", "Foo", "String.", "Number"]))
    value: dict[str, Any] = {"DataType": kind}
    if kind.startswith("Binary"):
        value["BinaryValue"] = draw(st.binary(max_size=40))
    elif kind.startswith("Number"):
        value["StringValue"] = draw(st.sampled_from(["1", "-1.5", "1e10", "abc", "9" * 40, ""]))
    else:
        value["StringValue"] = draw(short_text)
    if draw(st.integers(0, 9)) == 0:  # both values, or the other one
        value["BinaryValue" if "StringValue" in value else "StringValue"] = "x"
    return value


@st.composite
def message_attributes(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(["a", "b.c", "Trace", "aws.x", ".a", "a..b", "x" * 300,
                                           "é"]) | ids, max_size=draw(st.sampled_from([3, 12]))))
    return {name: message_attribute_values(draw) for name in names}


class ParameterMaker:
    """Valid-looking parameters for any operation, from its input shape in the JSON model."""

    def __init__(self, targets: FuzzTargets) -> None:
        self.targets = targets
        self.handles = receipt_handles(targets)
        self.arns = queue_arns(targets)
        self.attribute_values = queue_attribute_values(targets)
        names = list(targets.pool_names) + [url.rsplit("/", 1)[-1] for url in targets.queue_urls]
        self.named: dict[str, Callable[[str], st.SearchStrategy[Any]]] = {
            "QueueUrl": lambda action: queue_urls(targets, action),
            "QueueName": lambda _: st.sampled_from(names) | short_text,
            "ReceiptHandle": lambda _: self.handles,
            "SourceArn": lambda _: self.arns,
            "DestinationArn": lambda _: self.arns,
            "MessageBody": lambda _: short_text | huge_strings,
            "WaitTimeSeconds": lambda _: st.just(0),
            "MaxNumberOfMessages": lambda _: st.integers(1, 10),
            "VisibilityTimeout": lambda _: st.integers(0, 43_200),
            "DelaySeconds": lambda _: st.integers(0, 900),
            "MaxResults": lambda _: st.integers(1, 1000),
            "MaxNumberOfMessagesPerSecond": lambda _: st.integers(1, 500),
            "AWSAccountIds": lambda _: st.lists(
                st.sampled_from([targets.account_id, "123456789012", "1"]), max_size=3),
            "Actions": lambda _: st.lists(st.sampled_from(
                ["SendMessage", "ReceiveMessage", "*", "DeleteQueue", "x"]), max_size=3),
            "QueueOwnerAWSAccountId": lambda _: st.sampled_from(
                [targets.account_id, "123456789012", "x"]),
            "MessageAttributes": lambda _: message_attributes(),
            "MessageSystemAttributes": lambda _: st.builds(
                lambda value: {"AWSTraceHeader": {"DataType": "String", "StringValue": value}},
                st.sampled_from(["Root=1-5759e988-bd862e3fe1be46a994272793", "x", ""])),
            "Id": lambda _: ids,
        }

    def parameters(self, action: str) -> st.SearchStrategy[dict[str, Any]]:
        operation: OperationModel = json_model().operation_model(action)
        return self._structure(operation.input_shape, action)

    def _structure(self, shape: Shape, action: str) -> st.SearchStrategy[dict[str, Any]]:
        required = {name: self._member(name, member, action)
                    for name, member in shape.members.items() if name in shape.required_members}
        optional = {name: self._member(name, member, action)
                    for name, member in shape.members.items()
                    if name not in shape.required_members}
        return st.fixed_dictionaries(required, optional=optional)

    def _member(self, name: str, shape: Shape, action: str) -> st.SearchStrategy[Any]:
        if name in self.named:
            return self.named[name](action)
        if name == "Attributes" and shape.type_name == "map":
            return st.dictionaries(st.sampled_from(sorted(self.attribute_values)), st.just(""),
                                   max_size=4).flatmap(self._attribute_map)
        if name == "Entries":
            return st.lists(self._structure(shape.member, action), min_size=1,
                            max_size=DRAWN_BATCH_ENTRIES).map(_unique_entry_ids)
        return self._shape(shape, action)

    def _attribute_map(self, keys: Mapping[str, str]) -> st.SearchStrategy[dict[str, str]]:
        return st.fixed_dictionaries({key: self.attribute_values[key] for key in keys})

    def _shape(self, shape: Shape, action: str) -> st.SearchStrategy[Any]:
        enum: Sequence[str] = shape.metadata.get("enum", ())
        if enum:
            return st.sampled_from(list(enum))
        if shape.type_name == "string":
            return short_text
        if shape.type_name == "integer":
            return st.integers(0, 1000)
        if shape.type_name == "boolean":
            return st.booleans()
        if shape.type_name == "blob":
            return st.binary(max_size=40)
        if shape.type_name == "list":
            return st.lists(self._shape(shape.member, action), max_size=4)
        if shape.type_name == "map":
            return st.dictionaries(self._shape(shape.key, action),
                                   self._shape(shape.value, action), max_size=4)
        return self._structure(shape, action)


def _unique_entry_ids(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for number, entry in enumerate(entries):
        if number % 5 != 4:  # every fifth keeps its drawn id: repeats are a case too
            entry["Id"] = f"e{number}"
    return entries


# --- the query protocol's pairs ------------------------------------------------------------------

_QUERY_SERIALIZER = create_serializer("query")


def query_pairs(action: str, params: Mapping[str, Any]) -> list[tuple[str, str]]:
    """botocore's own query serialization of valid `params` (Action and Version first)."""
    request = _QUERY_SERIALIZER.serialize_to_request(
        dict(params), query_model().operation_model(action)
    )
    return [(str(name), str(value)) for name, value in request["body"].items()]


def json_tree(params: Mapping[str, Any]) -> dict[str, Any]:
    """`params` as the JSON protocol sends them: binary values as base64 text."""
    def plain(value: Any) -> Any:
        if isinstance(value, bytes):
            return base64.b64encode(value).decode("ascii")
        if isinstance(value, dict):
            return {key: plain(item) for key, item in value.items()}
        if isinstance(value, list):
            return [plain(item) for item in value]
        return value
    result: dict[str, Any] = plain(dict(params))
    return result
