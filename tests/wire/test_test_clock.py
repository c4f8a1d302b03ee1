"""The test-only clock is refused outside tests: a server started with `--test-clock` but
without CQS_ALLOW_TEST_CLOCK=1 does not start, and a server without the setting has no
clock route. (The clock itself is used throughout the suite through `advance`.)"""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest


def test_a_server_without_the_test_clock_setting_has_no_clock_route(cqs_endpoint: str) -> None:
    request = urllib.request.Request(
        cqs_endpoint + "/_cqs/test/clock", data=b'{"advance_seconds": 60}', method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 404


def test_the_server_refuses_to_start_with_the_test_clock_but_without_permission() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CQS_")}
    finished = subprocess.run(
        [sys.executable, "-m", "cqs", "serve", "--test-clock", "true",
         "--redis-urls", "redis://127.0.0.1:1", "--cassandra-hosts", "127.0.0.1:1"],
        env=env, capture_output=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert finished.returncode != 0
    assert b"CQS_ALLOW_TEST_CLOCK" in finished.stderr
