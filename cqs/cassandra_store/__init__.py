"""The Cassandra adapters: `CassandraMessageStore` and `CassandraQueueCatalog`.

Owns everything that speaks CQL. Imports `cqs.model` and `cqs.errors` only (plus the
driver); the service reaches it through the ports, and only `cqs.main` imports it.
"""

from __future__ import annotations

from cqs.cassandra_store.catalog import CassandraQueueCatalog
from cqs.cassandra_store.connection import (
    CassandraConnection,
    KeyspaceNeedsMigration,
    connect,
)
from cqs.cassandra_store.session import CassandraSession
from cqs.cassandra_store.store import CassandraMessageStore

__all__ = [
    "CassandraConnection",
    "CassandraMessageStore",
    "CassandraQueueCatalog",
    "CassandraSession",
    "KeyspaceNeedsMigration",
    "connect",
]
