"""`cqs migrate` over keyspaces written by the earlier cqs, with live messages: none is lost.

Each test writes a keyspace as cqs wrote it before queue identity held the account and
region (compact or regular message tables; `dataset.py`, `tests/fixtures/legacy_keyspace.py`),
migrates it as an operator would (`python -m cqs migrate`), or through the adapter where a
run must be cut short, then checks today's tables cell by cell against the legacy ones (the
same rows, payloads and write times, times to live at most a little shorter) and serves the
keyspace with a real `cqs serve`, receiving every message with boto3. Each server gets a
Redis of its own: the queue names repeat from test to test.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from cqs.cassandra_store import (
    CassandraConnection,
    CassandraLegacyKeyspace,
    KeyspaceNeedsMigration,
    connect,
    schema,
)
from cqs.cassandra_store.rows import message_uuid_at
from cqs.domain.model import Message, QueueNamespace, ReceiptHandle
from cqs.domain.receipts import ReceiptSigner, new_nonce
from cqs.embedded.cassandra import EmbeddedCassandra
from cqs.embedded.ports import free_port
from cqs.embedded.redis_server import EmbeddedRedis
from cqs.operations.embedded import cassandra_data_dir
from cqs.operations.migrate import migrate
from cqs.ports import MigrationCounts
from cqs.settings import Settings
from tests.fixtures.cqs_server import StartServer
from tests.fixtures.legacy_keyspace import LegacyWriter
from tests.upgrade.dataset import (
    ACCOUNT_ID,
    REGION,
    LegacyDataset,
    cells,
    keyspaces,
    rows_of,
    same_cells,
    tables,
    write_dataset,
)

pytestmark = pytest.mark.slow

# Cassandra 4.0 and later refuse COMPACT STORAGE, so the compact layout of earlier versions
# cannot be written here. A compact keyspace reaches 4.0+ only through `ALTER TABLE ... DROP
# COMPACT STORAGE` on 3.x (docs/operations.md), which leaves both of its compact tables
# (clustering columns and one regular column) with exactly the "regular" layout's columns.
LAYOUTS = ["regular"]
# How much shorter a copied cell's time to live may be than the legacy cell's, read before.
TTL_SLACK_SECONDS = 120


def unique_keyspace(prefix: str = "cqs_legacy") -> str:
    return f"{prefix}_{os.urandom(6).hex()}"


def run_cqs(*args: str, cwd: Path | None = None, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """`python -m cqs ...` as an operator runs it (no CQS_* variables from this process)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CQS_")}
    if cwd is not None:
        env["PYTHONPATH"] = str(Path(__file__).parents[2])
    return subprocess.run(
        [sys.executable, "-m", "cqs", *args], capture_output=True, text=True, env=env,
        timeout=timeout, cwd=cwd, stdin=subprocess.DEVNULL,
    )


def migrate_cli(contact_point: str, keyspace: str, *extra: str) -> subprocess.CompletedProcess[str]:
    started = time.monotonic()
    result = run_cqs(
        "migrate", "--cassandra-hosts", contact_point, "--cassandra-keyspace", keyspace, *extra
    )
    print(f"cqs migrate {' '.join(extra)} took {time.monotonic() - started:.1f} s:")
    print(result.stdout)
    return result


def expected_summary(dataset: LegacyDataset) -> str:
    return (
        f"copied {len(dataset.queues)} queues, 1 deletion record,"
        f" {dataset.buckets} bucket index entries, {dataset.live_count:,} messages"
    )


def check_copied(
    contact_point: str, dataset: LegacyDataset, legacy: dict[Any, Any],
    ttl_slack_seconds: int = TTL_SLACK_SECONDS,
) -> None:
    """Today's message table holds exactly the live messages of the live queues, as the
    legacy one held them; the deleted queue's messages stayed behind."""
    keyspace = dataset.keyspace
    wanted = {key: cell for key, cell in legacy.items() if key[0] in dataset.queue_ids}
    assert len(wanted) == dataset.live_count
    copied = cells(contact_point, keyspace, schema.MESSAGES_TABLE)
    same_cells(wanted, copied, ttl_slack_seconds)
    live_ids = {str(key[3]) for key in copied}
    assert not live_ids & dataset.gone_ids
    assert not live_ids & set().union(*dataset.deleted.values())


def check_records(contact_point: str, dataset: LegacyDataset) -> None:
    """The catalog rows got the account and region, the deletion record kept its time to live,
    the bucket index its entries, and the migration is recorded."""
    keyspace = dataset.keyspace
    catalog = rows_of(
        contact_point, keyspace,
        f"SELECT account_id, region, name, queue_id, attributes, tags FROM {schema.QUEUES_TABLE}",
    )
    assert {
        row.name: (row.account_id, row.region, row.queue_id, json.loads(row.attributes),
                   json.loads(row.tags))
        for row in catalog
    } == {
        queue.name: (ACCOUNT_ID, REGION, queue.queue_id, dict(queue.attributes), dict(queue.tags))
        for queue in dataset.queues.values()
    }
    deletions = rows_of(
        contact_point, keyspace,
        "SELECT account_id, region, name, TTL(deleted_ms)"
        f" FROM {schema.DELETED_QUEUES_TABLE}",
    )
    assert [(row[0], row[1], row[2]) for row in deletions] == [(ACCOUNT_ID, REGION, "gone")]
    assert schema.EVENT_RECORD_TTL_SECONDS - 600 < deletions[0][3] <= schema.EVENT_RECORD_TTL_SECONDS
    buckets = cells(contact_point, keyspace, schema.MESSAGE_BUCKETS_TABLE)
    assert {key[0] for key in buckets} == dataset.queue_ids
    assert len(buckets) == dataset.buckets
    marker = rows_of(
        contact_point, keyspace,
        f"SELECT value FROM {schema.SETTINGS_TABLE}"
        f" WHERE name = '{schema.SCHEMA_MIGRATED_SETTING}'",
    )
    assert marker and marker[0].value


def sqs_client(url: str) -> Any:
    return boto3.client(
        "sqs", endpoint_url=url, region_name=REGION,
        aws_access_key_id="x", aws_secret_access_key="x",
    )


def drain(sqs: Any, queue_url: str) -> list[str]:
    """Receive and delete until two receives in a row find nothing; the ids, as received."""
    received: list[str] = []
    empty = 0
    while empty < 2:
        messages = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
            VisibilityTimeout=120,
        ).get("Messages", [])
        if not messages:
            empty += 1
            continue
        empty = 0
        received.extend(message["MessageId"] for message in messages)
        answer = sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
                for index, message in enumerate(messages)
            ],
        )
        assert not answer.get("Failed"), answer
    return received


def check_served(url: str, dataset: LegacyDataset) -> None:
    """Through the SQS API: the queues with their attributes and tags, and every live message
    once, none of the deleted ones."""
    sqs = sqs_client(url)
    names = sorted(u.rsplit("/", 1)[1] for u in sqs.list_queues().get("QueueUrls", []))
    assert names == sorted(dataset.queues)
    for name, queue in dataset.queues.items():
        queue_url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        attributes = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])[
            "Attributes"
        ]
        for attribute, value in queue.attributes.items():
            assert attributes[attribute] == value, (name, attribute)
        assert attributes["QueueArn"] == f"arn:aws:sqs:{REGION}:{ACCOUNT_ID}:{name}"
        assert sqs.list_queue_tags(QueueUrl=queue_url).get("Tags", {}) == dict(queue.tags)
        started = time.monotonic()
        received = drain(sqs, queue_url)
        print(f"{name}: received and deleted {len(received)} in {time.monotonic() - started:.1f} s")
        assert len(received) == len(set(received)), f"{name}: delivered twice"
        lost = set(dataset.live[name]) - set(received)
        assert not lost, f"{name}: {len(lost)} live messages lost"
        assert set(received) == set(dataset.live[name]), f"{name}: unexpected messages"


def start_on_own_redis(
    start_cqs_server: StartServer, tmp_path: Path, keyspace: str
) -> tuple[Any, EmbeddedRedis]:
    redis = EmbeddedRedis(tmp_path / f"redis-{os.urandom(3).hex()}")
    redis.start()
    try:
        return start_cqs_server([redis.url], keyspace=keyspace), redis
    except BaseException:
        redis.stop()
        raise


@pytest.fixture
def contact_point(cassandra_node: EmbeddedCassandra) -> str:
    return cassandra_node.contact_point


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_migrated_keyspace_serves_every_live_message_and_no_deleted_one(
    layout: str, contact_point: str, start_cqs_server: StartServer, tmp_path: Path
) -> None:
    dataset = write_dataset(contact_point, unique_keyspace(), layout)
    legacy = cells(contact_point, dataset.keyspace, schema.LEGACY_MESSAGES_TABLE)

    result = migrate_cli(contact_point, dataset.keyspace)

    assert result.returncode == 0, result.stderr
    assert expected_summary(dataset) in result.stdout
    assert "cqs migrate --drop-legacy" in result.stdout
    check_copied(contact_point, dataset, legacy)
    check_records(contact_point, dataset)
    server, redis = start_on_own_redis(start_cqs_server, tmp_path, dataset.keyspace)
    try:
        check_served(server.url, dataset)
    finally:
        server.stop()
        redis.stop()


class Interrupted(Exception):
    pass


@pytest.mark.parametrize("layout", LAYOUTS)
async def test_an_interrupted_migration_then_a_full_run_loses_nothing(
    layout: str, contact_point: str
) -> None:
    dataset = await asyncio.to_thread(
        write_dataset, contact_point, unique_keyspace(), layout
    )
    legacy = cells(contact_point, dataset.keyspace, schema.LEGACY_MESSAGES_TABLE)
    connection = CassandraConnection((contact_point,), dataset.keyspace, request_timeout=10.0)

    def stop_after_1000(counts: MigrationCounts) -> None:
        if counts.messages >= 1000:
            raise Interrupted

    keyspace = await CassandraLegacyKeyspace.open(connection)
    try:
        with pytest.raises(Interrupted):
            await keyspace.copy(QueueNamespace(ACCOUNT_ID, REGION), stop_after_1000)
        assert await keyspace.migration_record() is None
    finally:
        await keyspace.close()
    partial = cells(contact_point, dataset.keyspace, schema.MESSAGES_TABLE)
    assert 1000 <= len(partial) < dataset.live_count
    with pytest.raises(KeyspaceNeedsMigration):  # a server still refuses the keyspace
        await connect(connection)

    result = await asyncio.to_thread(migrate_cli, contact_point, dataset.keyspace)

    assert result.returncode == 0, result.stderr
    assert expected_summary(dataset) in result.stdout
    check_copied(contact_point, dataset, legacy)
    check_records(contact_point, dataset)


@pytest.mark.timeout(240)
async def test_pages_of_three_messages_copy_every_message_and_progress_is_reported(
    contact_point: str,
) -> None:
    """Tiny pages make every way of paging a bucket run many times (an IN over the shards
    left, resuming inside a shard, moving to the next); the operation reports progress."""
    dataset = await asyncio.to_thread(
        write_dataset, contact_point, unique_keyspace(), "regular"
    )
    legacy = cells(contact_point, dataset.keyspace, schema.LEGACY_MESSAGES_TABLE)
    connection = CassandraConnection((contact_point,), dataset.keyspace, request_timeout=10.0)
    session = await connect(connection, migrating=True)
    keyspace = CassandraLegacyKeyspace(
        session, dataset.keyspace, owns_session=True, message_page=3
    )
    lines: list[str] = []
    try:
        outcome = await migrate(
            keyspace, QueueNamespace(ACCOUNT_ID, REGION), report=lines.append,
            progress_seconds=0.0,
        )
    finally:
        await keyspace.close()

    assert outcome.copied == MigrationCounts(
        queues=3, deletion_records=1, buckets=dataset.buckets, messages=dataset.live_count
    )
    assert outcome.record is not None and outcome.record.copied == outcome.copied
    assert sum(line.startswith("copied so far: ") for line in lines) > 100
    assert expected_summary(dataset) in lines[-2]
    check_copied(contact_point, dataset, legacy)
    check_records(contact_point, dataset)


def test_a_second_run_copies_nothing_and_messages_deleted_since_stay_deleted(
    contact_point: str, start_cqs_server: StartServer, tmp_path: Path
) -> None:
    dataset = write_dataset(contact_point, unique_keyspace(), "regular")
    assert migrate_cli(contact_point, dataset.keyspace).returncode == 0
    copied = cells(contact_point, dataset.keyspace, schema.MESSAGES_TABLE)
    buckets = cells(contact_point, dataset.keyspace, schema.MESSAGE_BUCKETS_TABLE)
    server, redis = start_on_own_redis(start_cqs_server, tmp_path, dataset.keyspace)
    try:  # the new version serves: some messages are received and deleted
        sqs = sqs_client(server.url)
        queue_url = sqs.get_queue_url(QueueName="orders")["QueueUrl"]
        # A handle issued before the upgrade names the queue alone: refused now.
        earlier = ReceiptSigner(hashlib.sha256(b"test-secret").digest()).issue(
            ReceiptHandle(
                queue_key="orders", message_id=next(iter(dataset.live["orders"])),
                receipt_nonce=new_nonce(),
            )
        )
        with pytest.raises(ClientError) as refused:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=earlier)
        assert refused.value.response["Error"]["Code"] == "ReceiptHandleIsInvalid"
        consumed: set[str] = set()
        while len(consumed) < 200:
            messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
            for message in messages:
                sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
                consumed.add(message["MessageId"])
    finally:
        server.stop()
        redis.stop()

    result = migrate_cli(contact_point, dataset.keyspace)

    assert result.returncode == 0, result.stderr
    assert "nothing copied now" in result.stdout
    assert "(3 queues, 1 deletion record," in result.stdout  # the record of the first run
    after = cells(contact_point, dataset.keyspace, schema.MESSAGES_TABLE)
    assert not {str(key[3]) for key in after} & consumed
    remaining = {key: cell for key, cell in copied.items() if str(key[3]) not in consumed}
    same_cells(remaining, after, TTL_SLACK_SECONDS)
    same_cells(buckets, cells(contact_point, dataset.keyspace, schema.MESSAGE_BUCKETS_TABLE),
               TTL_SLACK_SECONDS)


def test_serve_refuses_an_unmigrated_keyspace_in_one_line(
    contact_point: str, lone_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    keyspace = unique_keyspace()
    with LegacyWriter(contact_point, keyspace) as writer:
        writer.create_keyspace("regular")

    result = run_cqs(
        "serve", "--port", str(free_port()), "--redis-urls", lone_redis.url,
        "--cassandra-hosts", contact_point, "--cassandra-keyspace", keyspace,
        "--data-dir", str(tmp_path / "data"), timeout=90,
    )

    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last == (
        f"cqs serve: keyspace {keyspace} was written by an earlier cqs version; stop every cqs"
        " process and run `cqs migrate` with the same Cassandra settings (see"
        " docs/operations.md, Upgrading)"
    )


def test_drop_legacy_drops_the_legacy_tables_and_the_server_serves_every_message(
    contact_point: str, start_cqs_server: StartServer, tmp_path: Path
) -> None:
    dataset = write_dataset(contact_point, unique_keyspace(), "regular")
    legacy = cells(contact_point, dataset.keyspace, schema.LEGACY_MESSAGES_TABLE)

    result = migrate_cli(contact_point, dataset.keyspace, "--drop-legacy")

    assert result.returncode == 0, result.stderr
    assert expected_summary(dataset) in result.stdout
    assert (
        f"dropped the legacy tables of keyspace {dataset.keyspace}:"
        " messages, message_buckets, deleted_queues, queues"
    ) in result.stdout
    assert not tables(contact_point, dataset.keyspace) & set(schema.LEGACY_TABLES)
    check_copied(contact_point, dataset, legacy)
    check_records(contact_point, dataset)
    server, redis = start_on_own_redis(start_cqs_server, tmp_path, dataset.keyspace)
    try:
        check_served(server.url, dataset)
    finally:
        server.stop()
        redis.stop()
    again = migrate_cli(contact_point, dataset.keyspace, "--drop-legacy")
    assert again.returncode == 0, again.stderr
    assert "its legacy tables are dropped" in again.stdout


def test_drop_legacy_is_refused_while_the_legacy_tables_hold_rows_newer_than_the_migration(
    contact_point: str,
) -> None:
    dataset = write_dataset(contact_point, unique_keyspace(), "regular")
    assert migrate_cli(contact_point, dataset.keyspace).returncode == 0
    # A process of the earlier version, still running, takes one more message.
    with LegacyWriter(contact_point, dataset.keyspace) as writer:
        writer.use()
        orders = dataset.queues["orders"]
        late = write_one_message(writer, orders)

    result = migrate_cli(contact_point, dataset.keyspace, "--drop-legacy")

    assert result.returncode == 1
    assert "Traceback" not in result.stderr, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"cqs migrate: the legacy tables of keyspace {dataset.keyspace} are kept")
    assert "they hold rows written after the migration began" in last
    assert last.endswith(
        "0 queues, 0 deletion records, 1 bucket index entry, 1 message. A process of the"
        " earlier cqs version wrote them, and they are not in this version's tables; stop"
        " every process of the earlier version (see docs/operations.md, Upgrading)"
    )
    assert set(schema.LEGACY_TABLES) <= tables(contact_point, dataset.keyspace)
    legacy_ids = {str(key[3]) for key in cells(contact_point, dataset.keyspace, "messages")}
    assert late in legacy_ids


def write_one_message(writer: LegacyWriter, queue: Any) -> str:
    now_ms = int(time.time() * 1000)
    message_id = str(message_uuid_at(now_ms))
    body = "sent through a process of the earlier version after the migration"
    writer.put(queue, [Message(
        message_id=message_id, body=body, md5_of_body=hashlib.md5(body.encode()).hexdigest(),
        sent_timestamp_ms=now_ms, visible_at_ms=now_ms, sender_id="AIDAEXAMPLE",
    )])
    return message_id


async def test_nothing_to_migrate_in_a_missing_keyspace_or_one_of_this_version(
    contact_point: str,
) -> None:
    missing = unique_keyspace("cqs_missing")
    result = await asyncio.to_thread(migrate_cli, contact_point, missing)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"nothing to migrate: there is no keyspace {missing}"
    assert missing not in keyspaces(contact_point)  # not created

    current = unique_keyspace("cqs_current")
    session = await connect(CassandraConnection((contact_point,), current, request_timeout=10.0))
    await session.close()
    result = await asyncio.to_thread(migrate_cli, contact_point, current, "--drop-legacy")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        f"nothing to migrate: keyspace {current} holds no table of an earlier cqs version"
    )


@pytest.mark.timeout(400)
def test_migrate_runs_on_the_embedded_cassandra_under_the_data_dir(tmp_path: Path) -> None:
    """`cqs migrate` with no Cassandra configured starts the embedded node `cqs serve` keeps
    under the data directory, migrates its keyspace and stops it again. That node is the
    default embedded version's, whatever the suite's (`run_cqs` passes no CQS_* variable)."""
    defaults = Settings(data_dir=str(tmp_path / "data"))
    node_dir = cassandra_data_dir(defaults)
    node = EmbeddedCassandra(node_dir)
    node.start()
    try:
        dataset = write_dataset(node.contact_point, "cqs", "regular")  # the default keyspace
        legacy = cells(node.contact_point, "cqs", schema.LEGACY_MESSAGES_TABLE)
    finally:
        node.stop()

    result = run_cqs("migrate", "--data-dir", "data", cwd=tmp_path, timeout=300)
    print(result.stdout)

    assert result.returncode == 0, result.stderr[-3000:]
    assert expected_summary(dataset) in result.stdout
    node = EmbeddedCassandra(node_dir)
    node.start()
    try:
        check_copied(node.contact_point, dataset, legacy, ttl_slack_seconds=600)
        check_records(node.contact_point, dataset)
    finally:
        node.stop()
