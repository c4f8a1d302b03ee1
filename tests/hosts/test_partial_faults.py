"""Issue 26 in the deployed shape: partial faults under load lose nothing acknowledged.

Five API processes on three test hosts (network namespaces; h1 sends, h2 receives, h3 does
both) share one Redis and one Cassandra over veth links. Each test sends 1,200 messages
paced over 8 s (the long Cassandra outage: 80 s) to a fresh queue while 200 long polls
receive and delete, injects its fault 3 s into the sends, heals it, drains, and checks every message id: none lost (every
test), no early repeat and no delivery after a delete where the design promises it, FIFO
order; early repeats are printed with the servers' redelivery reasons and each one's
timeline (docs/reliability.md).
Wall clock: the faults are real (routes, SIGSTOP, a narrow link) and last seconds under
load, which is what is tested.
"""

from __future__ import annotations

import pytest

from tests.hosts.deployment import Deployment
from tests.hosts.scenarios import (
    Load,
    Outcome,
    cassandra_stall,
    purge_and_resend,
    run_scenario,
    standard_faults,
)

LOAD = Load(messages=1200, send_seconds=8.0, polls=200, visibility_seconds=20)


def checked(outcome: Outcome, least_sent: int = LOAD.messages // 2) -> Outcome:
    """0 lost and none delivered before its DelaySeconds, for every fault. Repeats are printed with the servers' redelivery reasons
    and their timelines; the tests assert none where the design promises none (a FIFO
    cache and a Redis restarted empty are refilled without other processes' deliveries:
    docs/reliability.md, known weaknesses)."""
    print(outcome.summary())
    print("\n".join(outcome.repeat_timelines()))
    verdict = outcome.verdict
    assert verdict.sent > least_sent, outcome.summary()  # the load did run
    assert not verdict.lost, f"lost {len(verdict.lost)}: {verdict.lost[:10]}; {outcome.summary()}"
    assert verdict.delivered_before_delay == 0, outcome.summary()  # DelaySeconds 2, every third
    return outcome


def assert_repeats_nothing(outcome: Outcome) -> None:
    """No delivery before the previous one's visibility timeout, none after a delete."""
    assert outcome.verdict.early_duplicates == 0, outcome.summary()
    assert outcome.verdict.deliveries_after_delete == 0, outcome.summary()


@pytest.mark.timeout(150)
def test_a_sending_host_cut_off_from_redis_loses_nothing_and_repeats_nothing(
    deployment: Deployment,
) -> None:
    """h1 (sends only) cannot reach Redis for 5 s; its sends are stored in Cassandra and
    must reach h2 and h3's receivers once h1 is back."""
    outcome = checked(run_scenario(deployment, "cut", LOAD, standard_faults("cut")))
    # Until 2026-11-29 this repeated 0-2 messages a run: a reset between a consumer's cache
    # delete and its store delete, and the cut host's timed-out add reaching Redis once
    # the link healed, both brought deleted messages back (now remembered for 60 s).
    assert_repeats_nothing(outcome)


@pytest.mark.timeout(150)
def test_a_redis_stall_loses_nothing_and_repeats_nothing(deployment: Deployment) -> None:
    """Redis SIGSTOPped for 5 s, its data kept: receives wait rather than serve from
    Cassandra (other processes may be handing out the same messages from Redis), and the
    caches reset by processes that missed writes keep what consumers hold."""
    outcome = checked(run_scenario(deployment, "stall", LOAD, standard_faults("stall")))
    assert_repeats_nothing(outcome)


@pytest.mark.timeout(150)
def test_a_slow_link_to_cassandra_loses_nothing_and_repeats_nothing(
    deployment: Deployment,
) -> None:
    """h1's traffic with Cassandra squeezed to 64 kbit/s for 7.5 s: sends through it slow
    down or time out (not acknowledged); none acknowledged is lost, and with Redis
    untouched nothing is delivered twice before its visibility timeout."""
    outcome = checked(run_scenario(deployment, "slow", LOAD, standard_faults("slow")))
    assert outcome.verdict.early_duplicates == 0, outcome.summary()


@pytest.mark.timeout(150)
def test_a_cassandra_stall_loses_nothing_and_repeats_nothing(deployment: Deployment) -> None:
    """Cassandra SIGSTOPped for 5 s: sends are refused (503, not acknowledged), receives and
    deletes go on through Redis (deletes owed to Cassandra are flushed later); with Redis
    untouched nothing is delivered twice before its visibility timeout."""
    outcome = checked(run_scenario(deployment, "cassandra-stall", LOAD,
                                   standard_faults("cassandra-stall")))
    assert_repeats_nothing(outcome)


@pytest.mark.timeout(150)
def test_api_processes_killed_and_restarted_lose_nothing_and_repeat_nothing(
    deployment: Deployment,
) -> None:
    """A receiving process on h2 SIGKILLed under its long polls, then a sending one on h1,
    each restarted 2.5 s later on its port. Messages the killed receiver took but could not
    answer come back after their visibility timeout, not before."""
    outcome = checked(run_scenario(deployment, "api-crash", LOAD, standard_faults("api-crash")))
    assert_repeats_nothing(outcome)


@pytest.mark.timeout(150)
def test_an_api_process_stalled_loses_nothing_and_repeats_nothing(deployment: Deployment) -> None:
    """h3's one process (it sends and receives) SIGSTOPped for 5 s under its clients'
    calls, then resumed: what it had taken out for a receive reaches its client late or
    comes back after the visibility timeout, never before."""
    outcome = checked(run_scenario(deployment, "api-stall", LOAD, standard_faults("api-stall")))
    assert_repeats_nothing(outcome)


@pytest.mark.timeout(150)
def test_a_host_cut_off_from_cassandra_loses_nothing_and_repeats_nothing(
    deployment: Deployment,
) -> None:
    """h3 cannot reach Cassandra for 5 s: its sends are refused (503), its receives and
    deletes go on through Redis, deletes owed to Cassandra are flushed afterwards."""
    outcome = checked(run_scenario(deployment, "cut-cassandra", LOAD,
                                   standard_faults("cut-cassandra")))
    assert_repeats_nothing(outcome)


@pytest.mark.timeout(150)
def test_a_receiving_host_with_its_clock_30_s_ahead_repeats_nothing(
    deployment: Deployment,
) -> None:
    """h2's processes run with their wall clock 30 s ahead (libfaketime). Visibility
    timeouts are compared across processes, so they once handed out every message the
    others held (665 early repeats of 1,200); every process now follows Redis's clock."""
    deployment.offset_clock("h2", 30.0)
    try:
        outcome = checked(run_scenario(deployment, "clock", LOAD, standard_faults("none")))
    finally:
        deployment.offset_clock("h2", 0.0)
    assert_repeats_nothing(outcome)


@pytest.mark.timeout(150)
def test_full_redis_pools_under_long_polls_lose_nothing_and_repeat_nothing(
    deployment: Deployment,
) -> None:
    """h2's processes may hold only 2 Redis connections each (CQS_REDIS_MAX_CONNECTIONS)
    under their share of the 200 long polls: a call that finds the pool full waits, then
    is back-pressure (a long poll looks again, anything else answers 503), never an
    outage of Redis."""
    deployment.restart_with("h2", {"CQS_REDIS_MAX_CONNECTIONS": "2",
                                   "CQS_REDIS_POOL_WAIT_SECONDS": "0.2"})
    try:
        outcome = checked(run_scenario(deployment, "full-pool", LOAD, standard_faults("none")))
    finally:
        deployment.restart_with("h2", {})
    assert_repeats_nothing(outcome)


@pytest.mark.drill  # about 2 minutes of outage under load: run on demand (docs/testing.md)
@pytest.mark.timeout(240)
def test_a_cassandra_outage_longer_than_a_minute_loses_nothing_and_repeats_nothing(
    deployment: Deployment,
) -> None:
    """Cassandra SIGSTOPped for 65 s (longer than the 30 s after which queue metadata is
    refreshed) while 1,200 sends are paced over 80 s: sends meanwhile are refused (503),
    receives and deletes go on through Redis, and nothing acknowledged is lost."""
    load = Load(messages=1200, send_seconds=80.0, polls=200, visibility_seconds=20)
    outcome = checked(run_scenario(deployment, "cassandra-outage", load,
                                   [cassandra_stall(at=5.0, lasts=65.0)]), least_sent=100)
    assert_repeats_nothing(outcome)


@pytest.mark.timeout(150)
def test_redis_killed_and_restarted_empty_loses_nothing(deployment: Deployment) -> None:
    """Redis SIGKILLed and restarted empty 2.5 s later: served from Cassandra meanwhile
    (delivery claims keep the processes off each other's store deliveries), then refilled.
    Deliveries made from Redis before the kill are known only to the process that made
    them, so others may repeat them early (SQS's at-least-once; printed, and counted in
    docs/reliability.md)."""
    checked(run_scenario(deployment, "redis-restart", LOAD, standard_faults("redis-restart")))


@pytest.mark.timeout(180)
def test_a_fifo_queue_through_cut_stall_and_slow_link_loses_nothing_and_keeps_order(
    deployment: Deployment,
) -> None:
    """h1 cut off from Redis, then Redis stalled, then h3's link to Cassandra slowed, one
    after another over 16 s of FIFO sends (a message group per producer); then a message
    whose deduplication id was sent before a PurgeQueue is sent again and must be delivered
    (SQS does; cqs once answered with the purged message's id and delivered nothing)."""
    load = Load(messages=1200, send_seconds=16.0, polls=200, visibility_seconds=20)
    outcome = checked(run_scenario(deployment, "fifo", load,
                                   standard_faults("all", at=2.0, lasts=3.0), fifo=True))
    # FIFO sends need Redis (deduplication): none is acknowledged while it is away, so no
    # message of a group can be cached ahead of an earlier one left in Cassandra.
    assert outcome.order_violations == 0, outcome.summary()
    first, second, received = purge_and_resend(deployment)
    assert second != first, "the send after PurgeQueue was answered as a duplicate"
    assert received == [second], received
