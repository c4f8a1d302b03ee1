"""The Cassandra adapters: `CassandraMessageStore` and `CassandraQueueCatalog` (and
`CassandraLegacyKeyspace`, `cqs migrate`'s side of the keyspace).

Owns everything that speaks CQL, and the group commit (`coalescing`) that lets concurrent
requests share one batch. Imports `cqs.domain.model`, `cqs.domain.errors` and `cqs.ports` only
(plus the driver); the service reaches it through the ports, and only `cqs.main` imports it.
"""

from __future__ import annotations

from cqs.cassandra_store.catalog import CassandraQueueCatalog
from cqs.cassandra_store.connection import (
    CassandraConnection,
    KeyspaceNeedsMigration,
    KeyspaceNotFound,
    connect,
)
from cqs.cassandra_store.consumed import CassandraConsumedMessages
from cqs.cassandra_store.migration import CassandraLegacyKeyspace
from cqs.cassandra_store.session import CassandraSession
from cqs.cassandra_store.store import CassandraMessageStore

__all__ = [
    "CassandraConnection",
    "CassandraConsumedMessages",
    "CassandraLegacyKeyspace",
    "CassandraMessageStore",
    "CassandraQueueCatalog",
    "CassandraSession",
    "KeyspaceNeedsMigration",
    "KeyspaceNotFound",
    "connect",
]
