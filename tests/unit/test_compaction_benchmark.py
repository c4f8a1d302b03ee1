"""The pure parts of benchmarks/compaction_strategies.py: the time compression (every
clock-based setting divided by one factor, refused where it would not be whole) and the
ledger's judgement of a scan of the queue (lost, resurrected, read twice) while sends and
deletes go on. No server, no clock (every time is given).
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from benchmarks.harness.compaction_load import Consumption, Ledger
from benchmarks.harness.compaction_probes import TimeScale


def test_a_scale_of_sixty_makes_a_real_second_a_simulated_minute() -> None:
    scale = TimeScale(60, flush_minutes=10, twcs_window_minutes=60)
    assert (scale.bucket_seconds, scale.closed_slack_seconds, scale.gc_grace_seconds) == (
        5, 2, 60)
    assert scale.flush_period_ms == 10_000
    assert scale.twcs_window_real_minutes == 1
    assert scale.simulated_hours(240) == 4
    twcs = scale.compaction("twcs")
    assert twcs["compaction_window_size"] == "1"
    assert twcs["tombstone_compaction_interval"] == "1440"
    assert twcs["expired_sstable_check_frequency_seconds"] == "10"


def test_a_scale_that_leaves_no_whole_bucket_is_refused() -> None:
    with pytest.raises(ValueError):
        _ = TimeScale(7, flush_minutes=10, twcs_window_minutes=60).bucket_seconds


def test_a_twcs_window_shorter_than_a_real_minute_is_refused() -> None:
    with pytest.raises(ValueError):
        TimeScale(60, flush_minutes=10, twcs_window_minutes=30).compaction("twcs")


def test_unknown_strategy_is_refused() -> None:
    with pytest.raises(ValueError):
        TimeScale(60, flush_minutes=10, twcs_window_minutes=60).compaction("dtcs")


def ledger_with(*ids: str) -> Ledger:
    ledger = Ledger(body_bytes=64)
    for message_id in ids:
        ledger.written[message_id] = 1.0
    return ledger


def test_live_message_missing_from_a_scan_is_lost() -> None:
    ledger = ledger_with("a", "b")
    ledger.check_scan(Counter(["a"]), began=2.0, ended=3.0)
    assert ledger.verdict.lost == {"b"}
    assert not ledger.verdict.resurrected


def test_message_written_or_deleted_during_the_scan_may_be_missing() -> None:
    ledger = ledger_with("a")
    ledger.written["late"] = 2.5  # acknowledged after the scan began
    ledger.delete_began["a"] = 2.5  # its delete began before the scan ended
    ledger.check_scan(Counter(), began=2.0, ended=3.0)
    assert ledger.verdict.clean


def test_message_deleted_before_the_scan_and_scanned_is_resurrected() -> None:
    ledger = ledger_with("a", "b")
    ledger.delete_began["a"], ledger.deleted["a"] = 1.1, 1.2
    ledger.delete_began["b"], ledger.deleted["b"] = 2.1, 2.2  # during the scan: no verdict
    ledger.check_scan(Counter(["a", "b"]), began=2.0, ended=3.0)
    assert ledger.verdict.resurrected == {"a"}


def test_id_on_two_rows_of_a_scan_is_read_twice() -> None:
    ledger = ledger_with("a")
    ledger.check_scan(Counter(["a", "a"]), began=2.0, ended=3.0)
    assert ledger.verdict.read_twice == {"a"}


def test_message_body_starts_with_its_id() -> None:
    ledger = Ledger(body_bytes=64)
    message = ledger.new_message()
    assert message.body.startswith(message.message_id) and len(message.body) == 64


def test_consumption_draws_soon_late_and_never_in_their_proportions() -> None:
    consumption = Consumption(soon=1.0, late_min=10.0, late_max=180.0, late_fraction=0.1,
                              never_fraction=0.05)
    rng = random.Random(1)
    delays = [consumption.delay(rng) for _ in range(20_000)]
    never = sum(delay is None for delay in delays) / len(delays)
    late = sum(delay is not None and delay >= 10.0 for delay in delays) / len(delays)
    assert never == pytest.approx(0.05, abs=0.01)
    assert late == pytest.approx(0.1, abs=0.01)
    assert all(delay is None or delay <= 1.0 or 10.0 <= delay <= 180.0 for delay in delays)
