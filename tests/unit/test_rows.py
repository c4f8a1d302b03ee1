"""The pure row mapping of the Cassandra store: payloads, message locations, queue rows."""

from __future__ import annotations

import time
import uuid
from collections import Counter

from cqs.cassandra_store import rows
from cqs.domain.model import Message, MessageAttributeValue, Queue, QueueIdentity


def _message(**overrides: object) -> Message:
    fields: dict[str, object] = {
        "message_id": str(uuid.uuid1()),
        "body": "héllo ✓ <xml/> \"quoted\"",
        "md5_of_body": "0" * 32,
        "sent_timestamp_ms": 1_700_000_000_123,
        "visible_at_ms": 1_700_000_005_123,
        "sender_id": "AIDAEXAMPLE",
    }
    fields.update(overrides)
    return Message(**fields)  # type: ignore[arg-type]


def test_message_survives_payload_round_trip_with_every_attribute_kind() -> None:
    message = _message(
        message_attributes={
            "text": MessageAttributeValue("String", string_value="ünïcode"),
            "number": MessageAttributeValue("Number.float", string_value="1.5"),
            "blob": MessageAttributeValue("Binary", binary_value=bytes(range(256))),
        },
        md5_of_message_attributes="a" * 32,
        system_attributes={
            "AWSTraceHeader": MessageAttributeValue("String", string_value="Root=1-abc")
        },
        md5_of_system_attributes="b" * 32,
    )

    decoded = rows.decode_payload(message.message_id, rows.encode_payload(message))

    assert decoded == message


def test_message_without_attributes_decodes_with_empty_attributes_and_no_md5s() -> None:
    message = _message()

    decoded = rows.decode_payload(message.message_id, rows.encode_payload(message))

    assert decoded.message_attributes == {}
    assert decoded.md5_of_message_attributes is None
    assert decoded.system_attributes == {}
    assert decoded == message


def test_payload_of_unknown_version_is_refused() -> None:
    try:
        rows.decode_payload(str(uuid.uuid1()), b'{"_v": 99}')
    except ValueError as error:
        assert "version" in str(error)
    else:
        raise AssertionError("an unknown payload version was accepted")


def test_message_location_is_the_same_every_time_it_is_computed() -> None:
    message_uuid = uuid.uuid1()

    first = rows.message_location(message_uuid, 300, 100)
    again = rows.message_location(uuid.UUID(str(message_uuid)), 300, 100)

    assert first == again


def test_ids_from_one_process_spread_over_all_shards() -> None:
    shards = Counter(rows.message_location(uuid.uuid1(), 300, 100).shard for _ in range(20_000))

    assert set(shards) == set(range(100))
    assert max(shards.values()) < 3 * min(shards.values())


def test_bucket_follows_the_time_inside_the_id() -> None:
    bucket_start_ms = 1_700_000_100 * 1000
    assert bucket_start_ms % 300_000 == 0
    first = rows.message_uuid_at(bucket_start_ms)
    last = rows.message_uuid_at(bucket_start_ms + 299_999)
    next_one = rows.message_uuid_at(bucket_start_ms + 300_000)

    buckets = [rows.message_location(u, 300, 100).bucket for u in (first, last, next_one)]

    assert buckets[0] == buckets[1] == bucket_start_ms // 300_000
    assert buckets[2] == buckets[0] + 1


def test_uuid_time_of_a_fresh_uuid1_is_now() -> None:
    before = int(time.time() * 1000)
    message_uuid = uuid.uuid1()
    after = int(time.time() * 1000)

    assert before - 1 <= rows.uuid_time_ms(message_uuid) <= after + 1


def test_ids_made_for_another_time_are_version_1_and_carry_that_time() -> None:
    made = rows.message_uuid_at(1_234_567_890_123)

    assert made.version == 1
    assert rows.uuid_time_ms(made) == 1_234_567_890_123
    assert rows.parse_message_id(str(made)) == made


def test_ids_that_are_not_version_1_uuids_are_not_parsed() -> None:
    assert rows.parse_message_id("not-a-uuid") is None
    assert rows.parse_message_id(str(uuid.uuid4())) is None
    assert rows.parse_message_id("") is None


def test_queue_survives_row_round_trip() -> None:
    queue = Queue(
        name="orders",
        queue_id=str(uuid.uuid4()),
        attributes={"VisibilityTimeout": "45"},
        tags={"team": "billing"},
        created_timestamp=1_700_000_000,
        last_modified_timestamp=1_700_000_050,
        account_id="123456789012",
        region="eu-west-1",
    )
    row = rows.queue_to_row(queue)

    restored = rows.queue_from_row(
        QueueIdentity(row.account_id, row.region, row.name),
        row.queue_id, row.attributes, row.tags, row.created_s, row.modified_s,
    )

    assert restored == queue


def test_queue_row_keeps_attributes_and_tags_as_json_text_with_any_characters() -> None:
    queue = Queue(
        name="q", queue_id="id", attributes={"Policy": '{"a": "\u00e9 \\"}'},
        tags={"t\u00e9am": "\u4e2d"},
    )
    row = rows.queue_to_row(queue)

    assert isinstance(row.attributes, str) and isinstance(row.tags, str)
    restored = rows.queue_from_row(queue.identity, "id", row.attributes, row.tags, 0, 0)
    assert restored.attributes == queue.attributes
    assert restored.tags == queue.tags


def test_legacy_queue_row_with_empty_maps_stored_as_null_reads_as_empty() -> None:
    restored = rows.queue_from_row(
        QueueIdentity("000000000000", "us-east-1", "q"), "id", None, None, None, None
    )

    assert restored.attributes == {}
    assert restored.tags == {}
    assert restored.created_timestamp == 0
