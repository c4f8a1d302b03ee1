"""What cqs does differently by Cassandra server version, decided from `release_version`.

Owns reading a server's `release_version` (from `system.local`, present on every version)
and the consistency levels cqs uses when the operator sets none. Pure: imports only the
standard library; the driver-facing half (asking the server, reading the keyspace's
replication) is `connection.py`'s.

The CQL itself does not vary: one schema and one set of statements run on every
supported server (see `schema.py`). Only the defaults below do.
"""

from __future__ import annotations

import re

SINGLE_REPLICA_CONSISTENCY = "ONE"
REPLICATED_CONSISTENCY = "LOCAL_QUORUM"
# Cassandra 1.2 refuses LOCAL_QUORUM unless the keyspace uses NetworkTopologyStrategy
# (an InvalidRequest), and closes the connection on LOCAL_ONE (a level it predates).
LEGACY_REPLICATED_CONSISTENCY = "QUORUM"
_NETWORK_TOPOLOGY = "NetworkTopologyStrategy"
_VERSION = re.compile(r"^\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?")
# Cassandra 1.2.3 added blob constants (`0xcafe`) to CQL 3; before it a blob literal is a
# string of hex digits (`'cafe'`), which later servers refuse. Only statements whose text
# holds values need it (`cqs migrate`'s copies); everything else binds values.
BLOB_CONSTANTS_SINCE = (1, 2, 3)


def release_major_minor(release_version: str) -> tuple[int, int]:
    """(4, 1) for "4.1.3", (1, 2) for "1.2.0", (3, 0) for ScyllaDB's "3.0.8"; (0, 0) if unknown."""
    match = _VERSION.match(release_version or "")
    if match is None:
        return (0, 0)
    return int(match.group(1)), int(match.group(2) or 0)


def release_major_minor_patch(release_version: str) -> tuple[int, int, int]:
    """(1, 2, 0) for "1.2.0", (4, 1, 3) for "4.1.3"; (0, 0, 0) if unknown."""
    match = _VERSION.match(release_version or "")
    if match is None:
        return (0, 0, 0)
    return int(match.group(1)), int(match.group(2) or 0), int(match.group(3) or 0)


def has_blob_constants(release_version: str) -> bool:
    """Whether the server reads `0x...` blob literals (an unknown version: assumed current)."""
    version = release_major_minor_patch(release_version)
    return version == (0, 0, 0) or version >= BLOB_CONSTANTS_SINCE


def default_consistency(release_version: str, strategy: str, replication_factor: int) -> str:
    """The read and write consistency level for a keyspace, when the operator sets none.

    One replica: ONE (QUORUM of one is one, and LOCAL_* levels fail on Cassandra 1.2).
    More: LOCAL_QUORUM, so that a read sees every acknowledged write of the local data
    centre (dropping a drained bucket trusts a read that found it empty) and a node may be
    down. On Cassandra 1.2 with SimpleStrategy, QUORUM, the same replicas by another name.
    """
    if replication_factor <= 1:
        return SINGLE_REPLICA_CONSISTENCY
    legacy = release_major_minor(release_version) < (2, 0)
    if legacy and not strategy.endswith(_NETWORK_TOPOLOGY):
        return LEGACY_REPLICATED_CONSISTENCY
    return REPLICATED_CONSISTENCY

# Where the default `message_tables = "auto"` stops choosing compact tables. On Cassandra 1.2
# a row DELETE in a regular table writes a range tombstone, and each one costs more CPU than
# the last while the partition's memtable holds the others (measured in
# docs/cassandra-deletes.md). 2.0 reworked how range tombstones are kept and 3.0's storage
# engine writes a row DELETE as a row tombstone; only 1.2 was measured.
REGULAR_TABLES_SINCE = (2, 0)
# Cassandra 4.0 refuses compact tables.
COMPACT_TABLES_REFUSED_SINCE = (4, 0)


def compact_message_tables(message_tables: str, release_version: str) -> bool:
    """Whether absent message tables are created as compact tables.

    `message_tables` is the setting: "regular" never; "compact" always (ValueError on 4.0+,
    which refuses it); "auto" (the default) only on a server that reports a release older
    than 2.0, i.e. the embedded Cassandra 1.2. Every other server, ScyllaDB included (it
    reports "3.0.8"), and one whose release cannot be read, gets regular tables.
    """
    version = release_major_minor(release_version)
    if message_tables == "compact":
        if version >= COMPACT_TABLES_REFUSED_SINCE:
            raise ValueError(
                f"compact message tables need Cassandra before 4.0; this is {release_version}"
            )
        return True
    known = version > (0, 0)
    return message_tables == "auto" and known and version < REGULAR_TABLES_SINCE
