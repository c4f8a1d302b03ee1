"""The console's per-process history: a ring buffer of per-queue samples (pure code)."""

from __future__ import annotations

from cqs.admin_ui.history import QueueHistory, Sample


def sample(visible: int, sent: int, received: int = 0) -> Sample:
    return Sample(visible, 0, 0, sent, received)


def test_rates_come_from_the_totals_of_consecutive_samples() -> None:
    history = QueueHistory(interval_seconds=10, span_seconds=60)
    history.record(0, {"q": sample(0, 100)})
    history.record(10_000, {"q": sample(5, 150, 20)})
    series = history.series("q")
    assert series["t"] == [0, 10_000]
    assert series["visible"] == [0, 5]
    assert series["sent_per_second"] == [None, 5.0]
    assert series["received_per_second"] == [None, 2.0]


def test_the_ring_keeps_only_the_span_oldest_first() -> None:
    history = QueueHistory(interval_seconds=10, span_seconds=30)  # three slots
    for index in range(5):
        history.record(index * 10_000, {"q": sample(index, index * 10)})
    series = history.series("q")
    assert series["t"] == [20_000, 30_000, 40_000]
    assert series["visible"] == [2, 3, 4]
    assert series["sent_per_second"] == [None, 1.0, 1.0]


def test_a_queue_that_appears_later_has_gaps_before_and_a_deleted_one_is_forgotten() -> None:
    history = QueueHistory(interval_seconds=10, span_seconds=60)
    history.record(0, {"a": sample(1, 0)})
    history.record(10_000, {"a": sample(1, 0), "b": sample(7, 3)})
    assert history.series("b")["visible"] == [None, 7]
    history.record(20_000, {"b": sample(8, 3)})
    assert history.series("a")["visible"] == [None, None, None]


def test_a_counter_that_went_down_gives_no_rate() -> None:
    history = QueueHistory(interval_seconds=10, span_seconds=60)
    history.record(0, {"q": sample(0, 500)})
    history.record(10_000, {"q": sample(0, 20)})  # a worker restarted
    assert history.series("q")["sent_per_second"] == [None, None]


def test_queues_beyond_the_limit_are_not_remembered() -> None:
    history = QueueHistory(interval_seconds=10, span_seconds=60, max_queues=2)
    history.record(0, {"a": sample(1, 0), "b": sample(2, 0), "c": sample(3, 0)})
    assert history.series("b")["visible"] == [2]
    assert history.series("c")["visible"] == [None]
