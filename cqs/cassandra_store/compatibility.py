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
_VERSION = re.compile(r"^\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?")


def release_major_minor(release_version: str) -> tuple[int, int]:
    """(4, 1) for "4.1.3", (1, 2) for "1.2.0", (3, 0) for ScyllaDB's "3.0.8"; (0, 0) if unknown."""
    match = _VERSION.match(release_version or "")
    if match is None:
        return (0, 0)
    return int(match.group(1)), int(match.group(2) or 0)


def default_consistency(replication_factor: int) -> str:
    """The read and write consistency level for a keyspace, when the operator sets none.

    One replica: ONE (a quorum of one is one). More: LOCAL_QUORUM, so that a read sees
    every acknowledged write of the local data centre (dropping a drained bucket trusts a
    read that found it empty) and a node may be down.
    """
    if replication_factor <= 1:
        return SINGLE_REPLICA_CONSISTENCY
    return REPLICATED_CONSISTENCY
