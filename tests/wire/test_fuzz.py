"""The fuzz test: thousands of malformed, oversized and hostile requests over both protocols.

Owns the CI run of the fuzzer (`fuzz_http.hostile_requests`, driven by botocore's model of
SQS): a fixed seed and a bounded count, against the test-clock server. Before it, a tracked
standard queue and a tracked FIFO queue are filled with known messages; the fuzzer may
receive from them and send them forged handles, never act on them otherwise (see
`fuzz_model`). During it, every answer must be a well-formed SQS answer and never a 5xx,
and the server must stay up. After it: a clean send, receive and delete works over both
protocols, every tracked message is still there once the clock has passed any visibility
timeout the fuzzer's receives set, and the server's log holds no traceback.
`benchmarks/fuzz.py` runs the same generator for longer.

Must not import cqs: the server is seen through HTTP only.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from tests.fixtures.cqs_server import CqsProcess
from tests.wire.conftest import ACCOUNT_ID
from tests.wire.fuzz_http import HostileRequest, RawHttp, hostile_requests
from tests.wire.fuzz_scene import (
    LONGEST_VISIBILITY_SECONDS,
    FuzzScene,
    Tally,
    build_scene,
    clean_round_trip,
    client,
    drain,
    log_alarms,
)

SEED = 16  # cqs issue #16
EXAMPLES = 2_000  # each sends 1 to 4 requests: about 4,000 requests


@pytest.fixture(scope="module", autouse=True)
def hypothesis_files_outside_the_repository(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """Hypothesis caches what it learns under `.hypothesis/` of the working directory even
    with no example database: keep that in the test's temporary directory."""
    set_hypothesis_home_dir(str(tmp_path_factory.mktemp("hypothesis")))
    yield
    set_hypothesis_home_dir(None)


@pytest.fixture(scope="module")
def fuzz_scene(clock_server: CqsProcess) -> Iterator[FuzzScene]:
    yield build_scene(client(clock_server.url), clock_server.url, ACCOUNT_ID)


def _log_since(server: CqsProcess, offset: int) -> str:
    with server.log_path.open("rb") as log:
        log.seek(offset)
        return log.read().decode("utf-8", "replace")


@pytest.mark.slow
@pytest.mark.timeout(600)  # about 40 s on 2 cores; room for a loaded CI machine
def test_thousands_of_hostile_requests_get_sqs_errors_never_a_5xx_and_lose_nothing(
    clock_server: CqsProcess, fuzz_scene: FuzzScene,
) -> None:
    log_start = clock_server.log_path.stat().st_size
    address = urlsplit(clock_server.url)
    http = RawHttp(address.hostname or "127.0.0.1", address.port or 80)
    tally = Tally()
    started = time.monotonic()

    @seed(SEED)
    @settings(max_examples=EXAMPLES, database=None, deadline=None,
              phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck))
    @given(st.lists(hostile_requests(fuzz_scene.targets), min_size=1, max_size=4))
    def fuzz(requests: list[HostileRequest]) -> None:
        for request in requests:
            answer = http.exchange(request)
            problem = tally.record(request, answer)
            assert problem is None, (
                f"{request.label}: {problem}\nsent: {request!r}\n"
                f"answer: {answer.describe()}")
        assert clock_server.process is not None and clock_server.process.poll() is None, (
            "the server died")

    try:
        fuzz()
    finally:
        http.close()
    seconds = time.monotonic() - started
    print(f"\nfuzz: {tally.sent} requests in {seconds:.0f} s; {dict(tally.outcomes)}")

    assert tally.sent >= 3_000
    assert (tally.server_errors, tally.problems) == (0, [])
    for protocol in ("json", "query"):
        clean_round_trip(client(clock_server.url, protocol))
    clock_server.advance_clock(LONGEST_VISIBILITY_SECONDS + 120)
    sqs = client(clock_server.url)
    for url, message_ids in fuzz_scene.tracked.items():
        assert drain(sqs, url, message_ids) == set(), f"lost from {url}"
    assert log_alarms(_log_since(clock_server, log_start)) == []

