"""The embedded launchers against a port another process took after it was chosen.

Tests run on two workers, each starting servers on ports from `free_port`; a port can be
taken between the choice and the bind. A launcher must then start on other ports, and never
call ready a node whose port answers from another process (a fault test would pause the
wrong JVM). Real JVMs and sockets; nothing is mocked.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from cqs.embedded.cassandra import EmbeddedCassandra, EmbeddedCassandraError
from cqs.embedded.ports import listens_on


@pytest.fixture
def squatter() -> Iterator[socket.socket]:
    """A listening socket of this test process: another server holding a port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken


def test_listens_on_tells_the_holder_of_a_port_from_other_processes(
    squatter: socket.socket,
) -> None:
    port = squatter.getsockname()[1]
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        assert listens_on(os.getpid(), port)
        assert not listens_on(bystander.pid, port)
        # A parent counts for its children: a supervisor's workers hold its port.
        assert listens_on(os.getppid(), port)
    finally:
        bystander.kill()
        bystander.wait()
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))  # bound, not listening
        assert not listens_on(os.getpid(), unused.getsockname()[1])


@pytest.mark.timeout(240)
def test_a_node_whose_chosen_port_was_taken_starts_on_another(
    tmp_path: Path, squatter: socket.socket
) -> None:
    taken_port = squatter.getsockname()[1]
    node = EmbeddedCassandra(tmp_path / "node", heap="512m")
    node.native_port = taken_port  # as if another process bound it after free_port chose it
    try:
        node.start()

        assert node.native_port != taken_port
        assert node.pid is not None and listens_on(node.pid, node.native_port)
        assert "Address already in use" in (tmp_path / "node" / "cassandra.log").read_text(
            errors="replace"
        ) + (tmp_path / "node" / "stdout.log").read_text(errors="replace")
    finally:
        node.kill()


@pytest.mark.timeout(240)
def test_a_node_given_a_taken_port_fails_instead_of_answering_from_the_holder(
    tmp_path: Path, squatter: socket.socket
) -> None:
    taken_port = squatter.getsockname()[1]
    node = EmbeddedCassandra(tmp_path / "node", native_port=taken_port, heap="512m")
    try:
        with pytest.raises(EmbeddedCassandraError, match="taken"):
            node.start(timeout=120.0)
        assert not node.running
    finally:
        node.kill()
