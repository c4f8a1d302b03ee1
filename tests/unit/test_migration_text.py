"""The pure parts of `cqs migrate`: the copies' CQL text, the record a finished migration
leaves, and the throttled progress report."""

from __future__ import annotations

import uuid

from cqs.cassandra_store.migration import (
    _Cell,
    _Literals,
    _record_from_value,
    _record_value,
)
from cqs.operations.migrate import _ProgressReport
from cqs.ports import MigrationCounts, MigrationRecord
from tests.fixtures.manual_clock import ManualClock

MESSAGE_ID = uuid.UUID("e461bab4-e80f-11f1-a823-02fc00000001")


def test_a_message_copy_is_one_insert_with_literal_values_ttl_and_timestamp() -> None:
    text = _Literals().insert(
        "ks.queue_messages",
        {"queue_id": "q'1", "bucket": 5, "shard": 7, "message_id": MESSAGE_ID,
         "payload": b"\x00\xff'"},
        _Cell(ttl=3600, written_us=1_795_529_037_896_000),
    )
    assert text == (
        "INSERT INTO ks.queue_messages (queue_id, bucket, shard, message_id, payload)"
        f" VALUES ('q''1', 5, 7, {MESSAGE_ID}, 0x00ff27)"
        " USING TTL 3600 AND TIMESTAMP 1795529037896000"
    )


def test_absent_values_are_left_out_and_maps_are_literals() -> None:
    text = _Literals().insert(
        "ks.queue_catalog",
        {"name": "orders", "attributes": {"Policy": "it's"}, "tags": {}, "created_s": None},
        _Cell(ttl=None, written_us=12),
    )
    assert text == (
        "INSERT INTO ks.queue_catalog (name, attributes) VALUES ('orders', {'Policy': 'it''s'})"
        " USING TIMESTAMP 12"
    )
    assert _Literals().insert("t", {"a": 1}, _Cell(None, None)) == (
        "INSERT INTO t (a) VALUES (1)"
    )


def test_an_expired_cell_and_cells_written_since() -> None:
    assert _Cell(ttl=0, written_us=1).expired
    assert not _Cell(ttl=None, written_us=1).expired
    assert _Cell(ttl=5, written_us=2_000_000).written_since(2_000)
    assert not _Cell(ttl=5, written_us=1_999_999).written_since(2_000)
    assert not _Cell(ttl=5, written_us=None).written_since(0)


def test_the_migration_record_reads_back_and_an_unreadable_one_counts_every_row_as_newer() -> None:
    record = MigrationRecord("123456789012", "eu-west-1", 1_000, 2_000, MigrationCounts(3, 1, 15, 3000))
    assert _record_from_value(_record_value(record), 2_000) == record
    unreadable = _record_from_value(b"not json", 5_000)
    assert (unreadable.started_ms, unreadable.finished_ms) == (0, 5_000)


def test_progress_is_reported_every_few_seconds_not_every_page() -> None:
    clock = ManualClock(100.0)
    lines: list[str] = []
    report = _ProgressReport(lines.append, clock, every=5.0, started=100.0)
    for seconds, messages in [(1.0, 200), (4.9, 400), (5.0, 600), (7.0, 800), (10.0, 1000)]:
        clock.now = 100.0 + seconds
        report(MigrationCounts(queues=2, buckets=3, messages=messages))
    assert lines == [
        "copied so far: 2 queues, 0 deletion records, 3 bucket index entries, 600 messages"
        " in 5 s (120 messages/s)",
        "copied so far: 2 queues, 0 deletion records, 3 bucket index entries, 1,000 messages"
        " in 10 s (100 messages/s)",
    ]
