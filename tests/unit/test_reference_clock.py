"""Every API process reads one clock: its host's, moved to the first Redis server's.

A host whose clock was 30 s ahead handed out messages other processes held (665 early
repeats of 1,200 in the multi-host test); `tests/hosts/test_partial_faults.py` runs that
host again. Here: the offset is taken when measured, kept when the reference does not
answer, and Cassandra's write timestamps follow the same clock and never go backwards."""

from __future__ import annotations

import asyncio
import logging

import pytest

from cqs.cassandra_store.connection import ClockTimestamps
from cqs.service.clock import OffsetClock, ReferenceClock, follow_reference


def test_a_reference_clock_reads_its_source_moved_by_the_offset() -> None:
    clock = ReferenceClock(lambda: 1000.0)
    assert clock.time() == 1000.0
    clock.offset_seconds = -30.0
    assert clock.time() == 970.0
    assert OffsetClock(clock.time).time() == 970.0  # the service's clock reads it


async def test_following_takes_each_measurement_and_keeps_the_last_when_none_comes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ReferenceClock(lambda: 1000.0)
    measurements: list[float | None] = [-30.0, None, -29.9]

    async def measure() -> float | None:
        return measurements.pop(0) if len(measurements) > 1 else measurements[0]

    with caplog.at_level(logging.WARNING):
        await follow_reference(clock, measure, once=True)
    assert clock.time() == 970.0
    assert "30.0 s ahead of Redis's" in caplog.text
    await follow_reference(clock, measure, once=True)  # Redis did not answer
    assert clock.time() == 970.0

    following = asyncio.create_task(follow_reference(clock, measure, interval_seconds=0.01))
    await asyncio.sleep(0.05)
    following.cancel()
    with pytest.raises(asyncio.CancelledError):
        await following
    assert clock.time() == pytest.approx(970.1)


def test_write_timestamps_follow_the_clock_and_never_go_backwards() -> None:
    now = [1000.0]
    timestamps = ClockTimestamps(lambda: now[0])
    first = timestamps()
    assert first == 1_000_000_000
    now[0] = 999.0  # the reference moved back a second
    second = timestamps()
    assert second == first + 1
    now[0] = 1030.0
    assert timestamps() == 1_030_000_000
