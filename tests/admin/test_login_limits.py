"""The login limit's window and its bounded memory (pure: the throttle with a test clock)."""

from __future__ import annotations

import time

import pytest

from cqs.admin_ui.login_limits import MAX_ADDRESSES, LoginThrottle
from tests.fixtures.manual_clock import ManualClock


def test_an_address_may_fail_the_limit_times_in_any_minute_then_waits_for_the_oldest() -> None:
    clock = ManualClock()
    throttle = LoginThrottle(3, clock=clock)
    assert throttle.retry_after("10.0.0.1") is None
    assert throttle.failed("10.0.0.1") is False
    clock.now += 20
    assert throttle.failed("10.0.0.1") is False
    clock.now += 20
    assert throttle.failed("10.0.0.1") is True  # the third: allowance used up
    assert throttle.retry_after("10.0.0.1") == 20  # when the first failure leaves the window
    assert throttle.retry_after("10.0.0.2") is None  # others are not affected
    clock.now += 20
    assert throttle.retry_after("10.0.0.1") is None  # one slot free again
    throttle.failed("10.0.0.1")
    assert throttle.retry_after("10.0.0.1") == 20
    clock.now += 60
    assert throttle.retry_after("10.0.0.1") is None
    assert len(throttle) == 0  # forgotten once nothing is left in its window


def test_the_table_keeps_at_most_max_addresses_forgetting_the_longest_quiet() -> None:
    clock = ManualClock()
    throttle = LoginThrottle(1, max_addresses=3, clock=clock)
    for number in range(5):
        throttle.failed(f"10.0.0.{number}")
        clock.now += 1
    assert len(throttle) == 3
    assert throttle.retry_after("10.0.0.0") is None  # evicted
    assert throttle.retry_after("10.0.0.4") is not None


def test_a_flood_from_many_addresses_stays_bounded_and_cheap() -> None:
    throttle = LoginThrottle(10)
    started = time.monotonic()
    for number in range(5 * MAX_ADDRESSES):
        address = f"10.{number >> 16 & 255}.{number >> 8 & 255}.{number & 255}"
        throttle.retry_after(address)
        throttle.failed(address)
    assert len(throttle) == MAX_ADDRESSES
    assert time.monotonic() - started < 5


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="admin_login_attempts_per_minute"):
        LoginThrottle(0)
