"""A Sentinel failover under load: the primary is killed, Sentinel promotes the replica,
cqs finds the new primary through the Sentinels, and every message id is checked.

The workload is the cluster drills' (tests/resilience/test_redis_cluster_failover.py):
four `cqs serve` processes of one deployment, two only sending and two only receiving.

Wall clock: the load runs some seconds on both sides of the fault, as Sentinel needs its
down-after time (one second here) plus an election to promote the replica.
"""

from __future__ import annotations

import uuid

import pytest

from tests.fixtures.cqs_server import StartServer
from tests.fixtures.redis_cluster import LocalSentinels, wait_until
from tests.resilience.conftest import Ledger
from tests.resilience.test_redis_cluster_failover import check, run_drill, start_api_processes


@pytest.mark.timeout(240)
def test_sentinel_failover_under_load_loses_nothing(
    redis_sentinels: LocalSentinels, start_cqs_server: StartServer
) -> None:
    api = start_api_processes(start_cqs_server, redis_sentinels.urls)
    assert redis_sentinels.primary is not None and redis_sentinels.replica is not None
    old_primary, replica = redis_sentinels.primary, redis_sentinels.replica

    def kill_primary() -> str:
        old_primary.kill()
        wait_until(
            lambda: redis_sentinels.current_primary_port() == replica.port, 30,
            "the Sentinels did not promote the replica",
        )
        return f"primary {old_primary.port} killed, Sentinel promoted {replica.port}"

    ledger = Ledger()
    try:
        fault_seconds, note = run_drill(
            api, "sentinel-" + uuid.uuid4().hex[:10], kill_primary, ledger
        )
    finally:
        for process in api:
            process.stop()
    check(ledger, "Sentinel failover", fault_seconds, note)
