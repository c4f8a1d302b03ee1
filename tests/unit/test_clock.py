"""The server's test clock: OffsetClock, the setting that enables it (refused outside tests)
and its route, POST /_cqs/test/clock."""

from __future__ import annotations

import math

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from cqs.service.clock import OffsetClock
from cqs.settings import load_settings
from cqs.sqs_api.clock_route import TEST_CLOCK_PATH, add_test_clock_route


def test_a_clock_not_advanced_reads_its_source() -> None:
    assert OffsetClock(lambda: 1000.0).time() == 1000.0


def test_advancing_moves_the_clock_forward_by_that_much_and_it_adds_up() -> None:
    clock = OffsetClock(lambda: 1000.0)
    clock.advance(61)
    clock.advance(0.5)
    assert clock.time() == 1061.5
    assert clock.offset_seconds == 61.5


@pytest.mark.parametrize("seconds", [-1.0, math.nan])
def test_a_clock_never_moves_backwards(seconds: float) -> None:
    clock = OffsetClock(lambda: 1000.0)
    with pytest.raises(ValueError):
        clock.advance(seconds)
    assert clock.time() == 1000.0


def test_a_move_set_for_a_later_moment_applies_once_the_source_reaches_it() -> None:
    source = [1000.0]
    clock = OffsetClock(lambda: source[0])
    clock.advance(60, at=1002.0)
    assert clock.time() == 1000.0
    assert clock.offset_seconds == 0.0
    source[0] = 1002.0
    assert clock.time() == 1062.0
    assert clock.offset_seconds == 60.0


def test_a_move_set_for_a_moment_already_past_applies_at_once() -> None:
    clock = OffsetClock(lambda: 1000.0)
    clock.advance(30, at=999.0)
    assert clock.time() == 1030.0


def test_the_test_clock_setting_is_refused_without_the_explicit_permission() -> None:
    with pytest.raises(ValueError, match="CQS_ALLOW_TEST_CLOCK"):
        load_settings(environ={"CQS_TEST_CLOCK": "true"})


def test_the_test_clock_setting_is_accepted_with_the_permission() -> None:
    settings = load_settings(environ={"CQS_TEST_CLOCK": "true", "CQS_ALLOW_TEST_CLOCK": "1"})
    assert settings.test_clock is True


def test_the_test_clock_setting_is_refused_with_several_workers() -> None:
    with pytest.raises(ValueError, match="workers"):
        load_settings(
            environ={"CQS_TEST_CLOCK": "true", "CQS_ALLOW_TEST_CLOCK": "1", "CQS_WORKERS": "2"}
        )


def test_the_test_clock_is_off_by_default() -> None:
    assert load_settings(environ={}).test_clock is False


async def test_the_route_advances_the_clock_and_refuses_what_is_not_a_forward_move() -> None:
    clock = OffsetClock(lambda: 1000.0)
    app = web.Application()
    add_test_clock_route(app, clock)
    async with TestClient(TestServer(app)) as client:
        moved = await client.post(TEST_CLOCK_PATH, json={"advance_seconds": 61})
        backwards = await client.post(TEST_CLOCK_PATH, json={"advance_seconds": -5})
        garbled = await client.post(TEST_CLOCK_PATH, data=b"61")

        assert moved.status == 200
        assert await moved.json() == {"offset_seconds": 61.0, "now": 1061.0}
        assert backwards.status == 400
        assert garbled.status == 400
        assert clock.time() == 1061.0


async def test_the_route_sets_a_move_for_a_later_moment_and_refuses_one_at_no_moment() -> None:
    source = [1000.0]
    clock = OffsetClock(lambda: source[0])
    app = web.Application()
    add_test_clock_route(app, clock)
    async with TestClient(TestServer(app)) as client:
        pending = await client.post(
            TEST_CLOCK_PATH, json={"advance_seconds": 70, "at_epoch_seconds": 1001.5}
        )
        nowhen = await client.post(
            TEST_CLOCK_PATH, json={"advance_seconds": 70, "at_epoch_seconds": "soon"}
        )

        assert pending.status == 200
        assert await pending.json() == {"offset_seconds": 0.0, "now": 1000.0}
        assert nowhen.status == 400
        source[0] = 1001.5
        assert clock.time() == 1071.5
