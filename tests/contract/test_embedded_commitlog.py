"""The commit-log mode of the embedded Cassandra (issue 26, item 7).

A single node holds the only copy of every message: a power loss loses what its commit log
had not yet fsynced. So the node `cqs serve` starts answers a write only after an fsync
that covers it (`CQS_EMBEDDED_CASSANDRA_COMMITLOG_SYNC=batch`, the default), and never
runs with Cassandra's fsyncs skipped, which only the tests' throwaway nodes do. Read from
the running node itself: its settings table and its JVM's command line. A power loss cannot be made on
this machine; docs/reliability.md gives what each mode guarantees and costs.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cassandra.cluster import Cluster

from cqs.cassandra_store import reactor
from cqs.embedded.cassandra import EmbeddedCassandra
from cqs.operations.embedded import embedded_backends
from cqs.settings import load_settings

SKIP_SYNC = "-Dcassandra.skip_sync=true"


def java_command_lines_under(directory: Path) -> Iterator[list[str]]:
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            arguments = cmdline.read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if arguments[0].endswith("java") and any(str(directory) in a for a in arguments):
            yield arguments


def node_settings(contact_point: str, *names: str) -> dict[str, str]:
    host, port = contact_point.rsplit(":", 1)
    cluster = Cluster([host], port=int(port), protocol_version=5,
                      connection_class=reactor.connection_class())
    try:
        rows = cluster.connect().execute("SELECT name, value FROM system_views.settings")
        return {row.name: row.value for row in rows if row.name in names}
    finally:
        cluster.shutdown()


@pytest.mark.timeout(240)
def test_the_node_cqs_serve_starts_answers_writes_after_their_fsync(tmp_path: Path) -> None:
    settings = load_settings(environ={"CQS_DATA_DIR": str(tmp_path)})
    assert settings.embedded_cassandra_commitlog_sync == "batch"

    with embedded_backends(settings, with_redis=False) as started:
        (contact_point,) = started.cassandra_hosts
        assert node_settings(contact_point, "commitlog_sync") == {"commitlog_sync": "batch"}
        (command,) = java_command_lines_under(tmp_path)
        assert SKIP_SYNC not in command


@pytest.mark.parametrize("mode", ["periodic", "group"])
def test_cqs_serve_can_be_given_the_other_durable_modes(tmp_path: Path, mode: str) -> None:
    settings = load_settings(environ={
        "CQS_DATA_DIR": str(tmp_path), "CQS_EMBEDDED_CASSANDRA_COMMITLOG_SYNC": mode,
    })
    node = EmbeddedCassandra(tmp_path / "node", commitlog_sync=settings.embedded_cassandra_commitlog_sync)

    command = node.command()  # writes the node's cassandra.yaml

    assert SKIP_SYNC not in command
    assert f"commitlog_sync: {mode}\n" in (tmp_path / "node" / "conf" / "cassandra.yaml").read_text()


@pytest.mark.parametrize("mode", ["off", "never", ""])
def test_cqs_serve_refuses_a_mode_that_is_not_durable_or_not_known(tmp_path: Path, mode: str) -> None:
    with pytest.raises(ValueError, match="embedded_cassandra_commitlog_sync must be one of"):
        load_settings(environ={"CQS_DATA_DIR": str(tmp_path),
                               "CQS_EMBEDDED_CASSANDRA_COMMITLOG_SYNC": mode or " "})


def test_only_a_throwaway_node_skips_the_fsyncs(tmp_path: Path) -> None:
    throwaway = EmbeddedCassandra(tmp_path / "throwaway", commitlog_sync="off")
    assert SKIP_SYNC in throwaway.command()
    assert SKIP_SYNC not in EmbeddedCassandra(tmp_path / "default").command()
