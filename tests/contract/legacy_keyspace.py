"""A keyspace as cqs made it before issue 15: the message tables WITH COMPACT STORAGE.

The DDL below is the text the earlier `cqs/cassandra_store/schema.py` ran, kept verbatim so
that contract tests can open such a keyspace with today's code. It is created through the
driver directly, never through cqs.
"""

from __future__ import annotations

from cassandra import ConsistencyLevel
from cassandra.cluster import EXEC_PROFILE_DEFAULT, Cluster, ExecutionProfile
from cassandra.policies import RoundRobinPolicy

from cqs.cassandra_store.connection import parse_contact_point

# Every table of the earlier schema; only `messages` and `message_buckets` differ today.
EARLIER_DDL = (
    "CREATE KEYSPACE {ks} WITH replication = {{'class': 'SimpleStrategy', 'replication_factor': 1}}",
    "CREATE TABLE {ks}.queues ( name text PRIMARY KEY, queue_id text,"
    " attributes map<text, text>, tags map<text, text>, created_s bigint, modified_s bigint)",
    "CREATE TABLE {ks}.settings ( name text PRIMARY KEY, value blob, written_ms bigint)",
    "CREATE TABLE {ks}.messages ( queue_id text, bucket bigint, shard int,"
    " message_id timeuuid, payload blob,"
    " PRIMARY KEY ((queue_id, bucket, shard), message_id))"
    " WITH COMPACT STORAGE AND gc_grace_seconds = 3600",
    "CREATE TABLE {ks}.message_buckets ( queue_id text, bucket bigint, registered_ms bigint,"
    " PRIMARY KEY (queue_id, bucket)) WITH COMPACT STORAGE AND gc_grace_seconds = 3600",
    "CREATE TABLE {ks}.queue_purges ( queue_id text PRIMARY KEY, purged_ms bigint)",
    "CREATE TABLE {ks}.deleted_queues ( name text PRIMARY KEY, deleted_ms bigint)",
    "CREATE TABLE {ks}.message_move_tasks ( source_arn text, task_id text,"
    " destination_arn text, max_per_second int, status text, started_ms bigint, moved bigint,"
    " to_move bigint, failure_reason text, owner text, heartbeat_ms bigint,"
    " PRIMARY KEY (source_arn, task_id))",
    "CREATE TABLE {ks}.fifo_deduplications ( queue_id text, dedup_key text, message_id text,"
    " sequence bigint, expires_ms bigint, PRIMARY KEY (queue_id, dedup_key))",
)


def driver_cluster(contact_point: str) -> Cluster:
    """A plain driver cluster on the test node (protocol v1: the embedded Cassandra 1.2)."""
    host, port = parse_contact_point(contact_point)
    profile = ExecutionProfile(
        load_balancing_policy=RoundRobinPolicy(), consistency_level=ConsistencyLevel.ONE
    )
    return Cluster(
        [host], port=port, protocol_version=1,
        execution_profiles={EXEC_PROFILE_DEFAULT: profile},
    )


def create_earlier_keyspace(contact_point: str, keyspace: str) -> None:
    cluster = driver_cluster(contact_point)
    try:
        session = cluster.connect()
        for ddl in EARLIER_DDL:
            session.execute(ddl.format(ks=keyspace), timeout=30)
    finally:
        cluster.shutdown()


def compact_tables(contact_point: str, keyspace: str) -> set[str]:
    """The tables of `keyspace` that use compact storage, from the driver's metadata."""
    cluster = driver_cluster(contact_point)
    try:
        cluster.connect()
        tables = cluster.metadata.keyspaces[keyspace].tables
        return {name for name, table in tables.items() if table.is_compact_storage}
    finally:
        cluster.shutdown()
