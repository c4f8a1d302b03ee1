"""DeliveryLog: what this process handed out stays hidden until its time passes."""

from __future__ import annotations

from cqs.service.delivery_log import DeliveryLog


def test_a_recorded_delivery_is_hidden_until_its_time_then_forgotten() -> None:
    log = DeliveryLog()
    log.record("q1", "m1", 2_000)
    log.record("q1", "m2", 5_000)
    assert log.hidden("q1", 1_000) == {"m1": 2_000, "m2": 5_000}
    assert log.hidden("q1", 2_000) == {"m2": 5_000}
    assert log.hidden("q1", 5_000) == {}
    assert log.prune(0) == 0


def test_extend_moves_only_deliveries_this_process_made() -> None:
    log = DeliveryLog()
    log.record("q1", "m1", 2_000)
    assert log.extend("q1", "m1", 9_000)
    assert not log.extend("q1", "other", 9_000)
    assert not log.extend("q2", "m1", 9_000)
    assert log.hidden("q1", 5_000) == {"m1": 9_000}


def test_forget_removes_one_delivery_or_a_whole_queue() -> None:
    log = DeliveryLog()
    log.record("q1", "m1", 9_000)
    log.record("q1", "m2", 9_000)
    log.record("q2", "m3", 9_000)
    log.forget("q1", "m1")
    assert log.hidden("q1", 0) == {"m2": 9_000}
    log.forget_queue("q1")
    assert log.hidden("q1", 0) == {}
    assert log.prune(0) == 1


def test_prune_keeps_only_live_deliveries_across_queues() -> None:
    log = DeliveryLog()
    log.record("q1", "old", 100)
    log.record("q2", "new", 10_000)
    assert log.prune(5_000) == 1
    assert log.hidden("q2", 5_000) == {"new": 10_000}
