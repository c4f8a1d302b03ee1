"""The small circuit breaker that remembers an unreachable Redis server for a while."""

from __future__ import annotations

import pytest

from cqs.domain.errors import StorageUnavailable
from cqs.redis_cache.servers import ServerBreaker
from tests.fixtures.manual_clock import ManualClock


def test_a_server_that_never_failed_is_tried() -> None:
    breaker = ServerBreaker("redis://a", down_seconds=1.0, clock=ManualClock())
    breaker.check()
    assert not breaker.is_down


def test_after_a_failure_calls_fail_at_once_until_the_down_time_passes() -> None:
    clock = ManualClock()
    breaker = ServerBreaker("redis://a", down_seconds=1.0, clock=clock)
    breaker.record_failure(ConnectionError("refused"))
    clock.now += 0.9
    with pytest.raises(StorageUnavailable):
        breaker.check()
    clock.now += 0.2
    breaker.check()  # the down time is over: the next call tries the server again


def test_another_failure_after_the_down_time_keeps_the_server_down() -> None:
    clock = ManualClock()
    breaker = ServerBreaker("redis://a", down_seconds=1.0, clock=clock)
    breaker.record_failure(ConnectionError("refused"))
    clock.now += 1.5
    breaker.record_failure(ConnectionError("refused"))
    assert breaker.is_down


def test_a_success_closes_the_breaker() -> None:
    clock = ManualClock()
    breaker = ServerBreaker("redis://a", down_seconds=1.0, clock=clock)
    breaker.record_failure(ConnectionError("refused"))
    breaker.record_success()
    breaker.check()
    assert not breaker.is_down
