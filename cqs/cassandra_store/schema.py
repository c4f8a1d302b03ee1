"""Every Cassandra table name and every CQL DDL statement of cqs, in one place.

Owns the keyspace layout: the queue catalog, the settings table, the message table and its
bucket index, the purge and deletion records, the message move tasks and the FIFO
deduplication records, and the names of the tables earlier versions used (which
`cqs migrate` copies from). One schema for every supported server: nothing here is refused
by Cassandra 3.11, 4.x, 5.0 or ScyllaDB (regular tables only, no storage-format clauses,
the only table option is `gc_grace_seconds`). There is no
`IF NOT EXISTS` in CQL 3.0.0, so the session finds existing keyspaces and tables in the
driver's cluster metadata before creating anything. Imports nothing from cqs and no driver.

Queue identity: a queue is named by (account id, region, queue name), as in SQS, where
names are unique per account and region. The catalog and the deletion records are keyed by
that triple, partitioned by (account id, region) so that ListQueues reads one partition in
name order. Everything else of a queue is keyed by its `queue_id`, a random id of the queue
incarnation that only the catalog maps from the triple (a re-created queue gets a new one),
and move tasks by queue ARNs, which hold the triple.

Message layout (see docs/cassandra-deletes.md for the measurements behind it):

- partition key (queue_id, bucket, shard): a queue is split into `SHARD_COUNT` shards (the
  CQS design's 100 rows per queue), and each shard into time buckets, so no partition
  collects deletes without bound and a drained bucket can be dropped with one partition
  tombstone per shard;
- clustering by message_id (a version-1 UUID, so oldest first);
- a single `payload` value per message, in a regular table. Keyspaces made by earlier cqs
  versions on Cassandra before 4.0 may hold the same columns in compact tables; 4.0 and
  later refuse those until they are converted on 3.x into regular tables with the same
  columns (docs/operations.md, "Compact message tables").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

QUEUES_TABLE = "queue_catalog"
SETTINGS_TABLE = "settings"
MESSAGES_TABLE = "queue_messages"
MESSAGE_BUCKETS_TABLE = "queue_message_buckets"
QUEUE_PURGES_TABLE = "queue_purges"
DELETED_QUEUES_TABLE = "queue_deletions"
MOVE_TASKS_TABLE = "message_move_tasks"
FIFO_DEDUPLICATIONS_TABLE = "fifo_deduplications"
# Messages handed out straight from the store (no ready cache), claimed by one process at a
# time with a lightweight transaction; rows live by TTL only (no deletes), so expired ones
# may be purged at the first compaction.
DELIVERY_CLAIMS_TABLE = "delivery_claims"
# FIFO deduplication records live for AWS's five-minute interval (plus a second of slack);
# each row also holds its exact lapse time, which reads check.
DEDUPLICATION_TTL_SECONDS = 301
# Purge and deletion records only matter for a minute or so (PurgeQueueInProgress,
# QueueDeletedRecently); they expire after a day so the tables stay small.
EVENT_RECORD_TTL_SECONDS = 86_400

# The tables of keyspaces written before queue identity held the account and region: the
# catalog and deletion records keyed by name alone, and the message tables (then often
# compact: converted on 3.x before a server of 4.0 or later reads them). `cqs migrate`
# copies them into the tables above; a server refuses a keyspace that has them until it is
# migrated (SCHEMA_MIGRATED_SETTING).
LEGACY_QUEUES_TABLE = "queues"
LEGACY_DELETED_QUEUES_TABLE = "deleted_queues"
LEGACY_MESSAGES_TABLE = "messages"
LEGACY_MESSAGE_BUCKETS_TABLE = "message_buckets"
LEGACY_TABLES = (
    LEGACY_QUEUES_TABLE,
    LEGACY_DELETED_QUEUES_TABLE,
    LEGACY_MESSAGES_TABLE,
    LEGACY_MESSAGE_BUCKETS_TABLE,
)
# Written by `cqs migrate` once every legacy row is copied (the `settings` table).
SCHEMA_MIGRATED_SETTING = "schema.migrated_from_legacy"

SHARD_COUNT = 100
# --- peek and replay (issue 19): the consumed-messages table's layout (fixed: readers
# derive the partitions of a time range from these two numbers alone).
CONSUMED_MESSAGES_TABLE = "queue_consumed_messages"
CONSUMED_BUCKET_SECONDS = 3600
CONSUMED_SHARD_COUNT = 16
# Resumable replays (issue 26): each ReplayMessages run's record (its cursor) and its copy
# ledger (source message id -> id of the copy sent), both by TTL.
REPLAYS_TABLE = "message_replays"
REPLAY_COPIES_TABLE = "message_replay_copies"
DEFAULT_BUCKET_SECONDS = 300
# Short because deletes only ever hit whole buckets or single cells that expire by TTL anyway;
# a long grace keeps tombstones (read cost) around for no benefit on a single-DC store.
DEFAULT_MESSAGE_GC_GRACE_SECONDS = 3600

_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,47}$")


def checked_identifier(name: str) -> str:
    """`name` if it is a valid unquoted CQL identifier (keyspace names go into DDL verbatim)."""
    if not _IDENTIFIER.match(name):
        raise ValueError(f"not a valid Cassandra identifier: {name!r}")
    return name


_UNQUALIFIED_TABLE = re.compile(r"\b(FROM|INTO|UPDATE)(\s+)(\w+)\b(?!\.)", re.IGNORECASE)


def qualified(cql: str, keyspace: str) -> str:
    """`cql` with each unqualified table name after FROM, INTO or UPDATE prefixed with
    `keyspace`. Sessions bind no keyspace (`USE` with prepared statements is ambiguous, and
    Cassandra 4.0.3 and later warn of it), so statements name their tables in full."""
    prefix = checked_identifier(keyspace) + "."
    return _UNQUALIFIED_TABLE.sub(lambda m: f"{m[1]}{m[2]}{prefix}{m[3]}", cql)


def replication_literal(replication: str | Mapping[str, str | int]) -> str:
    """A CQL replication map: a literal string is passed through, a mapping is rendered."""
    if isinstance(replication, str):
        return replication
    entries = ", ".join(
        f"'{_quoted(str(key))}': '{_quoted(str(value))}'" for key, value in replication.items()
    )
    return "{" + entries + "}"


def _quoted(text: str) -> str:
    return text.replace("'", "''")


def create_keyspace(keyspace: str, replication: str | Mapping[str, str | int]) -> str:
    return (
        f"CREATE KEYSPACE {checked_identifier(keyspace)} "
        f"WITH replication = {replication_literal(replication)}"
    )


def table_definitions(keyspace: str, message_gc_grace_seconds: int) -> dict[str, str]:
    """CREATE TABLE statements by table name, qualified with `keyspace`."""
    prefix = checked_identifier(keyspace) + "."
    return {
        **_definitions(prefix, message_gc_grace_seconds),
        **_timer_definitions(prefix, message_gc_grace_seconds),
    }


def _definitions(prefix: str, message_gc_grace_seconds: int) -> dict[str, str]:
    return {
        QUEUES_TABLE: (
            f"CREATE TABLE {prefix}{QUEUES_TABLE} ("
            " account_id text,"
            " region text,"
            " name text,"
            " queue_id text,"
            " attributes text,"  # JSON objects, see rows.QueueRow
            " tags text,"
            " created_s bigint,"
            " modified_s bigint,"
            " PRIMARY KEY ((account_id, region), name))"
        ),
        SETTINGS_TABLE: (
            f"CREATE TABLE {prefix}{SETTINGS_TABLE} ("
            " name text PRIMARY KEY, value blob, written_ms bigint)"
        ),
        MESSAGES_TABLE: (
            f"CREATE TABLE {prefix}{MESSAGES_TABLE} ("
            " queue_id text,"
            " bucket bigint,"
            " shard int,"
            " message_id timeuuid,"
            " payload blob,"
            " PRIMARY KEY ((queue_id, bucket, shard), message_id))"
            f" WITH gc_grace_seconds = {int(message_gc_grace_seconds)}"
        ),
        # Which buckets of a queue may hold messages; entries expire with their messages.
        MESSAGE_BUCKETS_TABLE: (
            f"CREATE TABLE {prefix}{MESSAGE_BUCKETS_TABLE} ("
            " queue_id text,"
            " bucket bigint,"
            " registered_ms bigint,"
            " PRIMARY KEY (queue_id, bucket))"
            f" WITH gc_grace_seconds = {int(message_gc_grace_seconds)}"
        ),
        # When each queue incarnation was last purged (PurgeQueueInProgress).
        QUEUE_PURGES_TABLE: (
            f"CREATE TABLE {prefix}{QUEUE_PURGES_TABLE} ("
            " queue_id text PRIMARY KEY, purged_ms bigint)"
        ),
        # When a queue name was last deleted (QueueDeletedRecently).
        DELETED_QUEUES_TABLE: (
            f"CREATE TABLE {prefix}{DELETED_QUEUES_TABLE} ("
            " account_id text, region text, name text, deleted_ms bigint,"
            " PRIMARY KEY ((account_id, region), name))"
        ),
        # Message move tasks by source (dead-letter) queue ARN; owner + heartbeat_ms are
        # the lease of the process running a task.
        MOVE_TASKS_TABLE: (
            f"CREATE TABLE {prefix}{MOVE_TASKS_TABLE} ("
            " source_arn text,"
            " task_id text,"
            " destination_arn text,"
            " max_per_second int,"
            " status text,"
            " started_ms bigint,"
            " moved bigint,"
            " to_move bigint,"
            " failure_reason text,"
            " owner text,"
            " heartbeat_ms bigint,"
            " PRIMARY KEY (source_arn, task_id))"
        ),
        # FIFO sends of the last five minutes by deduplication key, one partition per queue
        # incarnation, so that deduplication survives the loss of the queue's Redis.
        FIFO_DEDUPLICATIONS_TABLE: (
            f"CREATE TABLE {prefix}{FIFO_DEDUPLICATIONS_TABLE} ("
            " queue_id text,"
            " dedup_key text,"
            " message_id text,"
            " sequence bigint,"
            " expires_ms bigint,"
            " PRIMARY KEY (queue_id, dedup_key))"
        ),
        DELIVERY_CLAIMS_TABLE: (
            f"CREATE TABLE {prefix}{DELIVERY_CLAIMS_TABLE} ("
            " queue_id text,"
            " message_id text,"
            " hidden_until_ms bigint,"
            " PRIMARY KEY (queue_id, message_id))"
            " WITH gc_grace_seconds = 0"
        ),
        # --- peek and replay (issue 19) ---------------------------------------------------
        # Messages DeleteMessage consumed from a queue with cqs.ConsumedRetentionSeconds,
        # by the hour of their delete and a shard (the FIFO group's, so a group keeps its
        # order), clustered by a version-1 UUID of the delete time; rows expire by TTL.
        CONSUMED_MESSAGES_TABLE: (
            f"CREATE TABLE {prefix}{CONSUMED_MESSAGES_TABLE} ("
            " queue_id text,"
            " bucket bigint,"
            " shard int,"
            " consumed_id timeuuid,"
            " consumed_ms bigint,"
            " message_id text,"
            " payload blob,"
            " PRIMARY KEY ((queue_id, bucket, shard), consumed_id))"
            f" WITH gc_grace_seconds = {int(message_gc_grace_seconds)}"
        ),
        # A replay's record, one row per (queue incarnation, replay id): the range, where it
        # stops, its cursor in the consumed copies, how many it sent, done / running.
        REPLAYS_TABLE: (
            f"CREATE TABLE {prefix}{REPLAYS_TABLE} ("
            " queue_id text,"
            " replay_id text,"
            " start_ms bigint,"
            " end_ms bigint,"
            " until_ms bigint,"
            " position text,"
            " replayed bigint,"
            " done boolean,"
            " running boolean,"
            " PRIMARY KEY (queue_id, replay_id))"
        ),
        # The copies a replay sent (or was about to send), by source message id: a resumed
        # replay sends a source again only under the same copy id, and only if it is not
        # stored already.
        REPLAY_COPIES_TABLE: (
            f"CREATE TABLE {prefix}{REPLAY_COPIES_TABLE} ("
            " queue_id text,"
            " replay_id text,"
            " source_id text,"
            " copy_id text,"
            " PRIMARY KEY ((queue_id, replay_id), source_id))"
        ),
    }


# --- timer messages (issue #19) -------------------------------------------------------------
# Messages due beyond the cache horizon wait here, never in the message tables (so a cache
# fill never loads them), until a promotion moves them into the message tables shortly
# before they are due. Partitioned by queue incarnation, minute of the due time and one of
# `SCHEDULED_SHARD_COUNT` shards; clustered by due time, so a promotion reads what is due.
SCHEDULED_MESSAGES_TABLE = "scheduled_messages"
# Per queue incarnation and due minute: how many messages wait there (a counter, so it is
# approximate). Its rows are also the index of the minutes that hold messages.
SCHEDULED_COUNTS_TABLE = "scheduled_counts"
# Every queue incarnation that has (or had) timer messages, in one partition (`ring` 0):
# what the promotion loop of each process walks.
SCHEDULED_QUEUES_TABLE = "scheduled_queues"
SCHEDULED_BUCKET_SECONDS = 60
SCHEDULED_SHARD_COUNT = 16


def _timer_definitions(prefix: str, message_gc_grace_seconds: int) -> dict[str, str]:
    return {
        SCHEDULED_MESSAGES_TABLE: (
            f"CREATE TABLE {prefix}{SCHEDULED_MESSAGES_TABLE} ("
            " queue_id text,"
            " bucket bigint,"
            " shard int,"
            " due_ms bigint,"
            " message_id timeuuid,"
            " payload blob,"
            " PRIMARY KEY ((queue_id, bucket, shard), due_ms, message_id))"
            f" WITH gc_grace_seconds = {int(message_gc_grace_seconds)}"
        ),
        SCHEDULED_COUNTS_TABLE: (
            f"CREATE TABLE {prefix}{SCHEDULED_COUNTS_TABLE} ("
            " queue_id text,"
            " bucket bigint,"
            " messages counter,"
            " PRIMARY KEY (queue_id, bucket))"
        ),
        SCHEDULED_QUEUES_TABLE: (
            f"CREATE TABLE {prefix}{SCHEDULED_QUEUES_TABLE} ("
            " ring int,"
            " queue_id text,"
            " account_id text,"
            " region text,"
            " name text,"
            " PRIMARY KEY (ring, queue_id))"
        ),
    }
