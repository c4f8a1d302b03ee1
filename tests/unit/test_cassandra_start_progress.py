"""How long the embedded Cassandra launcher waits for a node that is slow to start.

A start counts as stalled when the node writes nothing to its log for `timeout` seconds;
a node still logging its startup gets more time, up to a ceiling. The JVM is replaced by
a small Python process that logs on a schedule and never listens (a test double for the
third-party JVM: no real Cassandra start can be made to log at a chosen pace).

Wall clock: the rule under test is about elapsed seconds, so these tests wait a few.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from cqs.embedded import cassandra as launcher
from cqs.embedded.cassandra import EmbeddedCassandra, EmbeddedCassandraError


class _LoggingStandIn(EmbeddedCassandra):
    """Runs a script that appends a line to cassandra.log every `interval` seconds for
    `logging_seconds`, then stays silent."""

    def __init__(self, data_dir: Path, interval: float, logging_seconds: float) -> None:
        super().__init__(data_dir, native_port=1)
        self.script = (
            "import time\n"
            f"end = time.monotonic() + {logging_seconds}\n"
            "while time.monotonic() < end:\n"
            f"    open({str(self.log_file)!r}, 'a').write('INFO starting\\n')\n"
            f"    time.sleep({interval})\n"
            "time.sleep(600)\n"
        )

    def command(self) -> list[str]:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        return [sys.executable, "-c", self.script]


def _seconds_until_given_up(node: EmbeddedCassandra, timeout: float) -> float:
    began = time.monotonic()
    with pytest.raises(EmbeddedCassandraError, match="no progress"):
        node.start(timeout)
    assert not node.running  # a node given up on is killed
    return time.monotonic() - began


def test_a_silent_node_is_given_up_after_one_timeout(tmp_path: Path) -> None:
    node = _LoggingStandIn(tmp_path / "node", interval=0.2, logging_seconds=0)
    assert 1.5 <= _seconds_until_given_up(node, timeout=1.5) < 4.0


def test_a_node_still_logging_gets_more_time_than_one_timeout(tmp_path: Path) -> None:
    node = _LoggingStandIn(tmp_path / "node", interval=0.3, logging_seconds=3.0)
    # Logging for 3 s, then silent: given up one timeout after its last line, not before.
    waited = _seconds_until_given_up(node, timeout=1.5)
    silent_for = time.time() - node.log_file.stat().st_mtime
    assert waited > 2 * 1.5
    assert 1.5 <= silent_for < 1.5 + 2.5


def test_a_node_logging_forever_is_given_up_at_the_ceiling(tmp_path: Path) -> None:
    node = _LoggingStandIn(tmp_path / "node", interval=0.2, logging_seconds=600)
    ceiling = 1.0 * launcher._MOST_TIMEOUTS
    assert ceiling <= _seconds_until_given_up(node, timeout=1.0) < ceiling + 2.5
